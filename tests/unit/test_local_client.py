"""The managed local model keeps one SDK client per server, without starting llama.cpp.

Making an openai client costs ~33 ms and a new connection; the local model's
client used to make one per attempt.  The server here is a stand-in process
(``sleep``) that is alive until the test kills it, found through a real runtime file.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model import llama_server, local
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.testing import ScriptedOpenAIServer


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[local.LocalServer]]:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    servers: list[local.LocalServer] = []
    stand_ins: list[subprocess.Popen[bytes]] = []

    def start(self: local.LocalServer) -> None:
        self.port = 40000 + len(servers)
        stand_ins.append(subprocess.Popen(["sleep", "60"]))
        self.pid = stand_ins[-1].pid
        servers.append(self)

    monkeypatch.setattr(local.LocalServer, "start", start)
    monkeypatch.setattr(llama_server, "_servers", {})  # none of this test's servers reach stop_all
    monkeypatch.setattr(local, "_servers", llama_server._servers)
    yield servers
    for process in stand_ins:
        process.kill()
        process.wait()


def died(server: local.LocalServer) -> None:
    os.kill(server.pid, signal.SIGKILL)
    os.waitpid(server.pid, 0)


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

    died(started[0])
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


def test_the_local_model_is_streamed_even_when_the_setting_says_not(model_server: ScriptedOpenAIServer,
                                                                    started: list[local.LocalServer],
                                                                    tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # Streamed, the server drops a request whose kernel died (its next token has nowhere to go);
    # a whole reply would be generated for nobody while the other notebooks wait in line.
    monkeypatch.setattr(local.LocalServer, "base_url", property(lambda self: model_server.base_url))
    model_server.script("one")
    client = local.LocalClient(Endpoint(model="local:/models/tiny.gguf", stream=False), tmp_path / "tiny.gguf",
                               lambda t: None)
    assert client.complete([Message("user", "hi")]).text == "one"
    assert model_server.requests[0]["stream"] is True
