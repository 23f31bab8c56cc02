"""Several notebooks asking the shared local model at once (issue 37): they wait in line, say how
many requests are ahead, and one stopped while it waits never reaches the server.

The clients are real processes running ``LocalClient`` (what every driver's request goes through,
run/session.py); the model server is the scripted OpenAI-compatible server standing in for
llama.cpp's, found through a real runtime file and proving it is ours the way local_auth.py asks
(its listening socket is this process's, it demands the key, it knows the secret alias).  The
request being answered is held in flight until the test lets it go."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model import llama_server, local, runtime, turns
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.model.local_auth import new_secrets
from jupyter_ai_ci.testing import ScriptedOpenAIServer
from jupyter_ai_ci.testing import Reply

pytestmark = pytest.mark.timeout(120)

# A notebook's request to the local model: what it is told, then its reply.
ASK = """
import sys
from pathlib import Path
from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model import local
from jupyter_ai_ci.model.endpoint import Endpoint
model = Path(sys.argv[1])
client = local.LocalClient(Endpoint(model="local:" + str(model)), model, lambda text: print(text, end="", flush=True))
print("reply:", client.complete([Message("user", sys.argv[2])]).text, flush=True)
"""


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, ScriptedOpenAIServer]]:
    """A model whose runtime file names the scripted server (its listener is this process's)."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    # This process's view of the servers is the test's own: the stand-in's pid is this process, so
    # it must never reach a later stop_all().
    monkeypatch.setattr(llama_server, "_servers", {})
    monkeypatch.setattr(local, "_servers", llama_server._servers)
    path = tmp_path / "m.gguf"
    found = new_secrets()
    server = ScriptedOpenAIServer(api_key=found.key).start()
    server.models = {"object": "list", "data": [{"id": found.alias, "object": "model"}]}
    server.models_need_key = True
    runtime.write(runtime.Entry(model=str(path.resolve()), port=server.port, pid=os.getpid(), keeper=0,
                                key=found.key, alias=found.alias, uid=os.getuid(), log=""))
    yield path, server
    runtime.file_for(path).unlink(missing_ok=True)  # never "stopped" as a server: its pid is this test's
    server.stop()


class Notebook:
    """A process asking the model; its lines read as they come."""

    def __init__(self, model: Path, request: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", ASK, str(model), request], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True,
                                        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        self.lines: list[str] = []

    def until(self, wanted: str, timeout: float = 60) -> None:
        """Read its output until a line contains ``wanted``."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip("\n"))
            if wanted in line:
                return
        raise AssertionError(f"never said {wanted!r}: {self.lines}")

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


def waiting(n: int) -> str:
    return f"waiting for the local model: {n} request{'s' if n > 1 else ''} ahead"


def until_true(check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert check(), "timed out"


def test_requests_wait_their_turn_and_a_stopped_one_never_reaches_the_server(
        model: tuple[Path, ScriptedOpenAIServer]) -> None:
    path, server = model
    held = threading.Event()
    server.script(Reply("answer A", until=held), Reply("answer C"))
    notebooks: list[Notebook] = []
    try:
        a = Notebook(path, "request A")
        notebooks.append(a)
        until_true(lambda: len(server.requests) == 1)  # A is being answered (held)
        b = Notebook(path, "request B")
        notebooks.append(b)
        b.until(waiting(1))
        c = Notebook(path, "request C")
        notebooks.append(c)
        c.until(waiting(2))  # A answered, B waiting: two ahead

        b.process.send_signal(signal.SIGINT)  # Stop / Ctrl-C while B waits
        b.process.wait(timeout=10)
        assert len(os.listdir(turns.line_folder(path))) == 2  # B's ticket went with it: A's and C's left
        c.until(waiting(1))  # C moved up

        held.set()  # A's reply ends: C's turn
        a.until("reply: answer A")
        c.until("reply: answer C")
        assert [line for line in c.lines if "waiting" in line] == [f"· {waiting(2)}", f"· {waiting(1)}"]
        # B never reached the server: A's request, then C's, one after the other.
        assert [t.rsplit("\n", 1)[-1] for t in server.request_texts()] == ["request A", "request C"]
        assert os.listdir(turns.line_folder(path)) == []
        assert not any("waiting" in line for line in a.lines)  # the first in line is told nothing
    finally:
        held.set()
        for notebook in notebooks:
            notebook.end()


def test_stop_in_the_panel_cancels_a_queued_request_before_anything_is_sent(
        model: tuple[Path, ScriptedOpenAIServer]) -> None:
    """The panel and the MCP server ask with ``acomplete`` in the Jupyter server's event loop; Stop
    cancels the run's task."""
    path, server = model
    held = threading.Event()
    server.script(Reply("answer A", until=held), Reply("never asked"))
    a = Notebook(path, "request A")
    try:
        until_true(lambda: len(server.requests) == 1)
        said: list[str] = []
        client = local.LocalClient(Endpoint(model="local:" + str(path)), path, said.append)

        async def panel() -> None:
            task = asyncio.create_task(client.acomplete([Message("user", "request from the panel")]))
            while not any("waiting" in line for line in said):
                await asyncio.sleep(0.05)
            assert len(os.listdir(turns.line_folder(path))) == 2
            task.cancel()  # Stop
            with pytest.raises(asyncio.CancelledError):
                await task
            assert len(os.listdir(turns.line_folder(path))) == 1  # only A's: the panel's left at once

        asyncio.run(panel())
        assert said == [f"· {waiting(1)}\n"]
        held.set()
        a.until("reply: answer A")
        a.process.wait(timeout=10)
        assert server.request_texts() == ["request A"]  # the panel's request was never sent
    finally:
        held.set()
        a.end()


def test_stop_while_the_server_is_being_found_lets_it_go_for_the_next_request(
        model: tuple[Path, ScriptedOpenAIServer]) -> None:
    """Stop while the first in line finds (or starts) the server, which blocks in a thread: the
    start goes on for the next request, and its lease on the server ends with it -- a lease left
    held would keep the server from ever stopping for idleness."""
    path, server = model
    client = local.LocalClient(Endpoint(model="local:" + str(path)), path, lambda text: None)

    busy = os.open(runtime.folder() / f"{runtime.stem(path)}.busy.lock", os.O_RDWR | os.O_CREAT, 0o600)
    starting = runtime.try_start_lock(path, wait=0)  # another process is starting the server
    assert starting is not None

    async def panel() -> None:
        task = asyncio.create_task(client.acomplete([Message("user", "request from the panel")]))
        try:
            await asyncio.sleep(0.5)  # its thread holds a lease and waits for the start lock
            task.cancel()  # Stop
            with pytest.raises(asyncio.CancelledError):
                await task
            assert os.listdir(turns.line_folder(path)) == []  # out of the line at once
            assert not runtime.exclusive_now(busy)  # the lease of the start still going on
        finally:
            os.close(starting)  # the other process's start is done (the loop's end waits for the thread)
        while path not in local._servers:  # found in the thread: kept for the next request
            await asyncio.sleep(0.05)

    try:
        asyncio.run(panel())
        until_true(lambda: runtime.exclusive_now(busy), timeout=10)  # and the lease ended
    finally:
        os.close(busy)
    assert server.requests == []
