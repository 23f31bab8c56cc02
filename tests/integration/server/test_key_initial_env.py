"""A kernel the Jupyter server started tries to read the key from its parent's initial
environment (``/proc/<ppid>/environ``): the attack of security review #30, finding 3.

A real ``jupyter server`` process is started with OPENAI_API_KEY in the environment it was
*started* with (an in-process test server would not do: its key is set by monkeypatch, never
in the process's initial block); a kernel is started through its REST API and asked, over the
messaging protocol, for ``os.environ`` and for its parent's ``/proc/<ppid>/environ``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from queue import Empty
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/environ is Linux's")

KEY = "sk-proj-InitialEnvBlock0123456789abcdefXYZ"
TOKEN = "initial-env-test-token"
READ_PARENT = "open(f'/proc/{__import__(\"os\").getppid()}/environ', 'rb').read().decode('latin-1')"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _api(url: str, path: str, method: str = "GET") -> object:
    request = urllib.request.Request(url + path, method=method, data=b"{}" if method == "POST" else None,
                                     headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path, int]]:
    port, runtime = _free_port(), tmp_path / "runtime"
    env = {**os.environ, "OPENAI_API_KEY": KEY, "JUPYTER_RUNTIME_DIR": str(runtime)}
    env.pop("JUPYTER_AI_CI_KEY_KEPT", None)
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root", f"--port={port}",
         "--ServerApp.ip=127.0.0.1",
         f"--IdentityProvider.token={TOKEN}", "--ServerApp.jpserver_extensions={'jupyter_ai_ci': True}",
         f"--ServerApp.root_dir={tmp_path}"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                _api(url, "/api/kernelspecs")
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
                time.sleep(0.3)
        yield url, runtime, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _kernel_info(client: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        msg_id = client.kernel_info()
        try:
            while True:
                msg = client.get_shell_msg(timeout=2)
                if msg["parent_header"].get("msg_id") == msg_id:
                    return
        except Empty:
            assert time.monotonic() < deadline, "the kernel never answered kernel_info"


def test_a_kernel_cannot_read_the_key_from_its_parents_initial_environment(
        server: tuple[str, Path, int]) -> None:
    from jupyter_client import BlockingKernelClient

    url, runtime, server_pid = server
    kernel = _api(url, "/api/kernels", "POST")
    assert isinstance(kernel, dict)
    client = BlockingKernelClient()
    client.load_connection_file(str(runtime / f"kernel-{kernel['id']}.json"))
    client.start_channels()
    try:
        # Not wait_for_ready: a client no KernelManager made takes one missed heartbeat (1 s)
        # for a dead kernel, and a kernel starting on two busy cores can miss one. Its shell
        # reply is the proof of life that matters here.
        _kernel_info(client, timeout=90)
        reply = client.execute("", user_expressions={
            "ppid": "__import__('os').getppid()", "parent": READ_PARENT,
            "own": "repr(__import__('os').environ.get('OPENAI_API_KEY'))"}, reply=True, timeout=60)
    finally:
        client.stop_channels()
    seen = reply["content"]["user_expressions"]
    assert seen["ppid"]["data"]["text/plain"] == str(server_pid)  # the attack reads the server itself
    parent = seen["parent"]
    assert parent["status"] == "ok", parent
    environ = parent["data"]["text/plain"]
    assert "OPENAI_API_KEY=" in environ  # the variable's name is still there, its value blanked
    assert KEY not in environ and KEY[:12] not in environ
    assert seen["own"]["data"]["text/plain"] == "'None'"
    # And the test itself (the same user) finds no key there either.
    assert KEY.encode() not in Path(f"/proc/{server_pid}/environ").read_bytes()
