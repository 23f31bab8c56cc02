"""The local model server must prove it is ours before it is sent a prompt (issue 15, item 1).

Squatters here are real HTTP servers on real loopback ports; the real llama.cpp server's
side is in tests/integration/test_local_model_security.py."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from jupyter_ai_ci.model import local_auth
from jupyter_ai_ci.model.local_auth import NotOurs, Secrets, child_env, new_secrets, owned_listener, proves_ours


class Squatter(ThreadingHTTPServer):
    """Binds a port before our server can; records everything it is sent."""

    def __init__(self, status_without_key: int = 200, models: tuple[str, ...] = ("smollm2",), port: int = 0) -> None:
        self.seen: list[dict[str, Any]] = []
        self.status_without_key = status_without_key
        self.models = models
        squatter = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                squatter.seen.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                      "body": self.rfile.read(length).decode(errors="replace")})
                status = 200 if self.headers.get("Authorization") else squatter.status_without_key
                body = json.dumps({"data": [{"id": m} for m in squatter.models]}).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", port), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server_address[1])


@pytest.fixture
def squatter() -> Iterator[Squatter]:
    s = Squatter()
    yield s
    s.shutdown()
    s.server_close()


def test_each_start_gets_new_unguessable_secrets_that_never_print() -> None:
    a, b = new_secrets(), new_secrets()
    assert a.key != b.key and a.alias != b.alias and len(a.key) >= 40
    assert a.key not in repr(a) and a.alias not in f"{a!r}"


def test_the_server_environment_carries_the_secrets_and_drops_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOST", "0.0.0.0")  # uvicorn would listen on every interface
    monkeypatch.setenv("config_file", "/tmp/evil.json")  # pydantic-settings reads any case
    found = new_secrets()
    env = child_env(found, "127.0.0.1", 4321)
    assert env["API_KEY"] == found.key and env["MODEL_ALIAS"] == found.alias
    assert env["HOST"] == "127.0.0.1" and env["PORT"] == "4321" and "config_file" not in env
    assert found.key not in os.environ.values()  # our own process (the kernel) never holds it


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="Linux /proc")
def test_a_listener_that_is_not_our_child_is_refused_before_any_request(squatter: Squatter) -> None:
    child = os.getppid()  # any process but the one holding the squatter's socket
    with pytest.raises(NotOurs, match="another process listens"):
        local_auth.ready(f"http://127.0.0.1:{squatter.port}/v1", squatter.port, child, new_secrets())
    assert squatter.seen == []  # not one byte was sent to it
    assert owned_listener(squatter.port, os.getpid()) is True  # the process that does hold it passes


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="Linux /proc")
def test_nothing_listening_yet_means_wait() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: as llama.cpp before its model loads
        assert owned_listener(port, os.getpid()) is False


def test_a_squatter_that_needs_no_key_is_refused(squatter: Squatter) -> None:
    # Where /proc cannot tell who listens (macOS, Windows), the HTTP checks alone decide.
    with pytest.raises(NotOurs, match="answered 200 to a request without the key"):
        proves_ours(f"http://127.0.0.1:{squatter.port}/v1", new_secrets())
    assert [s["auth"] for s in squatter.seen] == [None]  # it never saw the key


def test_a_squatter_that_fakes_the_401_cannot_know_the_alias() -> None:
    clever = Squatter(status_without_key=401, models=("smollm2", "SmolLM2-135M-Instruct"))
    try:
        with pytest.raises(NotOurs, match="does not know the secret"):
            proves_ours(f"http://127.0.0.1:{clever.port}/v1", new_secrets())
        assert all(s["body"] == "" and s["path"] == "/v1/models" for s in clever.seen)  # no prompt
    finally:
        clever.shutdown()
        clever.server_close()


def test_a_server_that_demands_the_key_and_knows_the_alias_is_ours() -> None:
    found = Secrets(key="k" * 43, alias="jupyter-ai-ci-0123")
    ours = Squatter(status_without_key=401, models=(found.alias,))
    try:
        proves_ours(f"http://127.0.0.1:{ours.port}/v1", found)
        assert ours.seen[-1]["auth"] == f"Bearer {found.key}"
    finally:
        ours.shutdown()
        ours.server_close()
