"""``jupyter ai-ci run --gateway-url``: a real ``jupyter kernelgateway`` on 127.0.0.1 with a token.

One gateway for the module.  Every test also checks that the run left no
kernel behind on the gateway: a leaked remote kernel costs money on a cluster.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

from .test_cli import existing_notebook, py, run

TOKEN = "gw-test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def api(url: str, path: str, token: str = TOKEN) -> object:
    request = urllib.request.Request(url + path, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


GATEWAY_PIDS: dict[str, int] = {}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp_path_factory.mktemp("gateway") / "gateway.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "kernel_gateway", "--KernelGatewayApp.ip=127.0.0.1",
                             f"--KernelGatewayApp.port={port}", f"--KernelGatewayApp.auth_token={TOKEN}",
                             # Off by default; the tests list kernels to prove none leaked.
                             "--JupyterWebsocketPersonality.list_kernels=True"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                api(url, "/api/kernelspecs")
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None and time.monotonic() < deadline, "the kernel gateway did not start"
                time.sleep(0.3)
        GATEWAY_PIDS[url] = proc.pid
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def kernels_left(url: str) -> list[object]:
    # The gateway may still be restarting a killed kernel when we look; give it a moment.
    for _ in range(20):
        left = api(url, "/api/kernels")
        assert isinstance(left, list)
        if not left:
            return left
        time.sleep(0.5)
    return left


def test_run_on_the_gateway_with_a_fix(gateway: str, tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    existing_notebook(tmp_path / "a.ipynb", "base = 40")
    model_server.script(py("import os\nvalue = base + missing"),
                        Reply(py("import os\nvalue = base + 2\nprint(os.getppid(), value)"), require="NameError"))
    proc = run(["a.ipynb", "--prompt", "add two", "--run-existing", "--gateway-url", gateway,
                "--gateway-token", TOKEN], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "base: int = 40" in model_server.request_texts()[0]  # context from the remote kernel
    nb = nbformat.read(tmp_path / "a.ipynb", as_version=4)
    parent, value = nb.cells[-1].outputs[0].text.split()
    # The kernel was the gateway's child: the code ran there, not in a local kernel.
    assert value == "42" and int(parent) == GATEWAY_PIDS[gateway] and nb.cells[0].execution_count == 1
    assert kernels_left(gateway) == []


def test_gateway_url_from_the_environment(gateway: str, tmp_path: Path, model_server: ScriptedOpenAIServer,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_GATEWAY_URL", gateway)
    monkeypatch.setenv("JUPYTER_GATEWAY_AUTH_TOKEN", TOKEN)
    model_server.script(py("print('remote')"))
    proc = run(["a.ipynb", "--prompt", "say remote"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert nbformat.read(tmp_path / "a.ipynb", as_version=4).cells[-1].outputs[0].text == "remote\n"


def test_wrong_token_is_one_clear_line_quickly(gateway: str, tmp_path: Path,
                                               model_server: ScriptedOpenAIServer) -> None:
    started = time.monotonic()
    proc = run(["a.ipynb", "--prompt", "x", "--gateway-url", gateway, "--gateway-token", "nope"], tmp_path)
    assert proc.returncode == 4
    assert time.monotonic() - started < 20
    assert proc.stderr.strip().splitlines()[-1] == (
        f"✗ a.ipynb: GatewayError: the gateway at 127.0.0.1:{gateway.rsplit(':', 1)[1]} rejected the token "
        "(401) when asked to start a kernel: check --gateway-token / JUPYTER_GATEWAY_AUTH_TOKEN")
    assert model_server.requests == [] and not (tmp_path / "a.ipynb").exists()


def test_unreachable_and_silent_gateways_fail_quickly(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    refused = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    proc = run(["a.ipynb", "--prompt", "x", "--gateway-url", refused], tmp_path)
    assert proc.returncode == 4 and time.monotonic() - started < 20
    assert "cannot reach the gateway at 127.0.0.1:" in proc.stderr and "Connection refused" in proc.stderr
    # A gateway that accepts connections and never answers: the timeout, not a hang.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        held: list[socket.socket] = []
        threading.Thread(target=lambda: held.append(silent.accept()[0]), daemon=True).start()
        started = time.monotonic()
        proc = run(["a.ipynb", "--prompt", "x", "--gateway-url", f"http://127.0.0.1:{silent.getsockname()[1]}",
                    "--startup-timeout", "2"], tmp_path)
    assert proc.returncode == 4 and time.monotonic() - started < 20
    assert "(no answer within 2 s)" in proc.stderr, proc.stderr


def test_a_kernel_killed_mid_run_is_a_clear_error(gateway: str, tmp_path: Path,
                                                  model_server: ScriptedOpenAIServer) -> None:
    before = existing_notebook(tmp_path / "a.ipynb", "x = 1")
    model_server.script(py("import os, signal\nprint('going', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)"))
    started = time.monotonic()
    proc = run(["a.ipynb", "--prompt", "die", "--gateway-url", gateway, "--gateway-token", TOKEN,
                "--receive-timeout", "1", "--yes"], tmp_path)  # os.kill is flagged: approve it
    assert proc.returncode == 4, proc.stderr
    assert time.monotonic() - started < 40
    assert "KernelDied: " in proc.stderr and "on 127.0.0.1:" in proc.stderr
    assert (tmp_path / "a.ipynb").read_bytes() == before
    assert kernels_left(gateway) == []


def test_timeout_interrupts_through_the_gateway(gateway: str, tmp_path: Path,
                                                model_server: ScriptedOpenAIServer) -> None:
    existing_notebook(tmp_path / "a.ipynb", "kept = 5")
    # The interrupted attempt is undone (kept back to 5); the kernel and its state live on.
    model_server.script(py("kept *= 3\nwhile True:\n    pass"), Reply(py("kept * 2"), require="TimeoutError"))
    proc = run(["a.ipynb", "--prompt", "spin", "--gateway-url", gateway, "--gateway-token", TOKEN,
                "--timeout", "2", "--run-existing"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert nbformat.read(tmp_path / "a.ipynb", as_version=4).cells[-1].outputs[0].data["text/plain"] == "10"
    assert kernels_left(gateway) == []


def test_a_failed_attempt_is_undone_on_the_gateway(gateway: str, tmp_path: Path,
                                                   model_server: ScriptedOpenAIServer) -> None:
    existing_notebook(tmp_path / "a.ipynb", "rows = [1, 2]")
    model_server.script(py("rows.append(3)\nraise ValueError('not yet')"),
                        Reply(py("rows.append(3)\nrows"), require="ValueError"))
    proc = run(["a.ipynb", "--prompt", "add 3", "--run-existing", "--gateway-url", gateway,
                "--gateway-token", TOKEN], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "↺ attempt 1 undone: restored rows" in proc.stderr
    # Appended once: the failed attempt's append was rolled back in the gateway's kernel.
    assert nbformat.read(tmp_path / "a.ipynb", as_version=4).cells[-1].outputs[0].data["text/plain"] == "[1, 2, 3]"
    assert kernels_left(gateway) == []


def test_benchmark_runs_on_the_gateway(gateway: str, tmp_path: Path) -> None:
    from bench.success_rate import main

    # Gateway kernels do not start in our data directory; the harness chdirs them to it.
    assert main(["--scripted", "--tasks", "dedupe_count", "--schedules", "fail-1,wrong", "--jobs", "1",
                 "--gateway-url", gateway, "--gateway-token", TOKEN, "--out", str(tmp_path)]) == 0
    runs = json.loads((tmp_path / "success.json").read_text())["runs"]
    assert [(r["schedule"], r["correct"], r["attempts"], r["silent_wrong"]) for r in runs] == [
        ("fail-1", True, 2, False), ("wrong", False, 1, True)]
    assert kernels_left(gateway) == []
