"""The managed local model keeps one SDK client per server, without starting llama.cpp.

Making an openai client costs ~33 ms and a new connection; the local model's
client used to make one per attempt.  The server here is a stand-in process
that is alive until the test says it died.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model import local
from jupyter_ai_ci.model.client import Endpoint
from jupyter_ai_ci.testing import ScriptedOpenAIServer


class FakeProcess:
    def __init__(self) -> None:
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[local.LocalServer]:
    servers: list[local.LocalServer] = []

    def start(self: local.LocalServer) -> None:
        self.port = 40000 + len(servers)
        self.process = FakeProcess()  # type: ignore[assignment]
        servers.append(self)

    monkeypatch.setattr(local.LocalServer, "start", start)
    monkeypatch.setattr(local, "_servers", {})  # none of this test's servers reach stop_all
    return servers


def test_one_client_per_server_until_it_restarts(started: list[local.LocalServer], tmp_path: Path) -> None:
    said: list[str] = []
    path = tmp_path / "model.gguf"
    first = local.LocalClient(Endpoint(model="m"), path, said.append)
    client = first._client()
    assert client.endpoint.base_url == started[0].base_url
    # Every attempt, and every later request (a new LocalClient per request), reuses it.
    assert first._client() is client
    assert local.LocalClient(Endpoint(model="m"), path, said.append)._client() is client
    assert len(started) == 1 and len(said) == 1  # "using the local model" is said once

    started[0].process.returncode = 1  # type: ignore[union-attr]  # the server died
    again = first._client()
    assert len(started) == 2 and again is not client
    assert again.endpoint.base_url == started[1].base_url
    assert first._client() is again


def test_a_different_endpoint_gets_its_own_client(started: list[local.LocalServer], tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    cold = local.LocalClient(Endpoint(model="m"), path, lambda text: None)._client()
    warm = local.LocalClient(Endpoint(model="m", temperature=0.7), path, lambda text: None)._client()
    assert warm is not cold and warm.endpoint.temperature == 0.7
    assert len(started) == 1  # one server for both


def test_requests_reach_the_server_with_llama_cpp_fields(started: list[local.LocalServer], tmp_path: Path,
                                                         model_server: ScriptedOpenAIServer,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # The stand-in server listens where the scripted one does.
    monkeypatch.setattr(local.LocalServer, "base_url", property(lambda self: model_server.base_url))
    model_server.script("one", "two")
    client = local.LocalClient(Endpoint(model="local:/models/tiny.gguf"), tmp_path / "tiny.gguf", lambda t: None)
    assert client.complete([Message("user", "hi")]).text == "one"
    assert client.complete([Message("user", "again")]).text == "two"
    first, second = model_server.requests
    assert first["model"] == second["model"] == "tiny"
    assert first["repeat_penalty"] == 1.0 and first["max_tokens"] == 1024
