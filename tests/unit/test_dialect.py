"""The fields that help code on the user's own llama.cpp / Ollama server (model/dialect.py),
against a real HTTP server that answers /v1/models as each of them does."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from traitlets import TraitError

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.errors import ModelServerError
from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model import dialect
from jupyter_ai_ci.model.client import OpenAIClient
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.model.local import localized
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

HI = [Message("user", "hi")]
OPENAI_FIELDS = {"model", "messages", "temperature", "stream", "stream_options"}

# /v1/models as each server answers it (their sources: llama.cpp tools/server, llama-cpp-python
# llama_cpp/server/app.py, ollama openai/openai.go), trimmed to what identifies them.
LLAMA_SERVER = {"object": "list", "data": [{"id": "qwen.gguf", "object": "model", "created": 1,
                                            "owned_by": "llamacpp", "meta": {"n_ctx_train": 32768}}]}
LLAMA_CPP_PYTHON = {"object": "list", "data": [{"id": "/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                                                "object": "model", "owned_by": "me", "permissions": []}]}
OLLAMA = {"object": "list", "data": [{"id": "qwen2.5-coder:7b", "object": "model", "created": 1,
                                      "owned_by": "library"}]}
VLLM = {"object": "list", "data": [{"id": "Qwen/Qwen2.5-Coder-7B", "object": "model", "owned_by": "vllm"}]}


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    dialect.forget()
    yield
    dialect.forget()


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as s:
        yield s


def _client(server: ScriptedOpenAIServer, **kw: Any) -> OpenAIClient:
    return OpenAIClient(Endpoint(**{"model": "m", "base_url": server.base_url, "max_retries": 0,
                                    "timeout": 5.0, **kw}))


@pytest.mark.parametrize("url", [None, "https://api.openai.com/v1", "https://API.OpenAI.com/v1/",
                                 "https://me.openai.azure.com/openai/deployments/gpt-4o"])
def test_openai_and_azure_are_recognised_by_their_address(url: str | None) -> None:
    assert dialect.openai_hosted(url)


@pytest.mark.parametrize("url", ["http://localhost:11434/v1", "http://127.0.0.1:8080/v1",
                                 "http://api.openai.com.example.org/v1", "https://openai.azure.com.evil/v1"])
def test_other_addresses_are_not_openai(url: str) -> None:
    assert not dialect.openai_hosted(url)


@pytest.mark.parametrize(("payload", "headers", "kind"), [
    (LLAMA_SERVER, {}, dialect.LLAMA_CPP),
    (LLAMA_CPP_PYTHON, {"server": "uvicorn"}, dialect.LLAMA_CPP),
    ({"data": [{"id": "/m/x.gguf", "owned_by": "me"}]}, {}, dialect.LLAMA_CPP),  # no permissions list
    ({"data": []}, {"Server": "llama.cpp"}, dialect.LLAMA_CPP),
    (OLLAMA, {}, dialect.OLLAMA),
    (VLLM, {}, dialect.UNKNOWN),
    ({"data": [{"id": "coder", "owned_by": "me"}]}, {}, dialect.UNKNOWN),  # "me" alone: too common
    (None, {}, dialect.UNKNOWN), ([1, 2], {}, dialect.UNKNOWN), ({"data": "x"}, {}, dialect.UNKNOWN),
    ({"data": ["x", None, {"owned_by": None}]}, {"Server": "BaseHTTP/0.6"}, dialect.UNKNOWN),
])
def test_the_kind_is_read_from_the_models_reply_and_headers(payload: Any, headers: dict[str, str],
                                                            kind: str) -> None:
    assert dialect.kind_from_models(payload, headers) == kind


@pytest.mark.parametrize(("models", "headers"), [(LLAMA_CPP_PYTHON, {}), (LLAMA_SERVER, {"Server": "llama.cpp"})])
def test_llama_cpp_gets_repeat_penalty_one_in_every_request(server: ScriptedOpenAIServer, models: dict[str, Any],
                                                            headers: dict[str, str]) -> None:
    server.models, server.models_headers = models, headers
    server.script("a", "b", "c", "d")
    first = _client(server)
    first.complete(HI)
    first.complete(HI, temperature=0.7)
    asyncio.run(_client(server, stream=False).acomplete(HI))  # another client, the async path
    _client(server).complete(HI)
    assert [body["repeat_penalty"] for body in server.requests] == [1.0] * 4
    assert [p for p in server.gets if p.endswith("/models")] == ["/v1/models"]  # asked once a process


def test_concurrent_first_requests_ask_the_server_once(server: ScriptedOpenAIServer) -> None:
    server.models = LLAMA_SERVER
    server.script("a", "b", "c")
    client = _client(server)

    async def three() -> list[str]:
        replies = await asyncio.gather(*(client.acomplete(HI) for _ in range(3)))
        return [r.text for r in replies]

    assert sorted(asyncio.run(three())) == ["a", "b", "c"]
    assert server.gets == ["/v1/models"]
    assert [body["repeat_penalty"] for body in server.requests] == [1.0] * 3


@pytest.mark.parametrize("models", [OLLAMA, VLLM, None])
def test_ollama_and_unknown_servers_get_only_openai_fields(server: ScriptedOpenAIServer,
                                                           models: dict[str, Any] | None) -> None:
    # Ollama's /v1 drops fields it does not know (repeat_penalty, options): nothing of ours to send.
    server.models = models
    server.script("a", "b")
    client = _client(server)
    client.complete(HI)
    client.complete(HI)
    assert [set(body) for body in server.requests] == [OPENAI_FIELDS] * 2
    assert server.gets == ["/v1/models"]


@pytest.mark.parametrize(("models", "headers"), [(LLAMA_SERVER, {"Server": "llama.cpp"}), (LLAMA_CPP_PYTHON, {}),
                                                  (OLLAMA, {})])
def test_llama_cpp_and_ollama_are_never_sent_n(server: ScriptedOpenAIServer, models: dict[str, Any],
                                               headers: dict[str, str]) -> None:
    # They give one choice whatever n asks: the vote asks again, its requests sharing the prefix
    # the server keeps cached.  (The scripted server would serve the alternatives to an n.)
    server.models, server.models_headers = models, headers
    server.script(*(Reply(text, alternatives=("other",)) for text in "ab"))
    replies = [_client(server).complete(HI, n=2), asyncio.run(_client(server, stream=False).acomplete(HI, n=3))]
    assert [(r.text, r.alternatives) for r in replies] == [("a", ()), ("b", ())]
    assert ["n" in body for body in server.requests] == [False, False]


@pytest.mark.parametrize("models", [VLLM, None])
def test_other_servers_are_sent_n(server: ScriptedOpenAIServer, models: dict[str, Any] | None) -> None:
    server.models = models
    server.script(Reply("a", alternatives=("b",)))
    assert _client(server).complete(HI, n=2).alternatives == ("b",)
    assert server.requests[0]["n"] == 2


def test_the_managed_local_model_is_never_sent_n_nor_asked_what_it_is(server: ScriptedOpenAIServer) -> None:
    # llama-cpp-python, known without asking (model/local.py): the same as a llama.cpp found by asking.
    endpoint = replace(localized(Endpoint(model="m"), Path("qwen.gguf")), base_url=server.base_url,
                       max_retries=0, timeout=5.0)
    server.script(Reply("a", alternatives=("b",)), Reply("c", alternatives=("d",)))
    assert OpenAIClient(endpoint).complete(HI, n=2).alternatives == ()
    assert asyncio.run(OpenAIClient(endpoint).acomplete(HI, n=2)).alternatives == ()
    assert ["n" in body for body in server.requests] == [False, False]
    assert [body["repeat_penalty"] for body in server.requests] == [1.0, 1.0]
    assert server.gets == []


def test_openai_is_never_asked_and_never_sent_a_field_of_ours(server: ScriptedOpenAIServer) -> None:
    # The SDK's client through a proxy that is the scripted server, which answers /v1/models as
    # llama.cpp: it sees the probe for another address, and none for api.openai.com.
    server.models, server.models_headers = LLAMA_SERVER, {"Server": "llama.cpp"}

    def sdk(url: str) -> openai.OpenAI:
        return openai.OpenAI(base_url=url, api_key="sk-x", max_retries=0,
                             http_client=httpx.Client(proxy=f"http://127.0.0.1:{server.port}"))

    assert dialect.detect(sdk("http://llama.example/v1"), "http://llama.example/v1") \
        == dialect.LLAMA_CPP
    assert server.gets == ["http://llama.example/v1/models"]
    for url in ("http://api.openai.com/v1", "http://me.openai.azure.com/openai"):
        assert dialect.detect(sdk(url), url) == dialect.OPENAI
    assert server.gets == ["http://llama.example/v1/models"]
    assert dialect.fields_for(dialect.OPENAI) == ()


def test_a_request_to_openai_through_the_environments_proxy_has_only_openai_fields(
        server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # The whole client, sync and async: http://api.openai.com reached through HTTP_PROXY, the
    # scripted server, which would answer /v1/models as llama.cpp if it were asked.
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{server.port}")
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    server.models, server.models_headers = LLAMA_SERVER, {"Server": "llama.cpp"}
    server.script("a", "b")
    client = OpenAIClient(Endpoint(model="gpt-4o-mini", base_url="http://api.openai.com/v1", api_key="sk-x",
                                   max_retries=0, timeout=5.0))
    assert client.complete(HI).text == "a"
    assert asyncio.run(client.acomplete(HI)).text == "b"
    assert server.gets == []
    assert [set(body) for body in server.requests] == [OPENAI_FIELDS] * 2


def test_a_server_on_this_machine_is_reached_directly_whatever_the_proxy(
        server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # a proxy that is not there: a request sent to it fails
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    server.script("a", "b")
    assert _client(server).complete(HI).text == "a"
    assert _client(server, base_url=server.base_url.replace("127.0.0.1", "localhost")).complete(HI).text == "b"


def test_request_extra_is_merged_last_and_wins(server: ScriptedOpenAIServer) -> None:
    server.models = LLAMA_CPP_PYTHON
    server.script("a", "b")
    settings = AICISettings(base_url=server.base_url, max_request_retries=0,
                            request_extra={"repeat_penalty": 1.05, "top_k": 20, "temperature": 0.2,
                                           "options": {"num_ctx": 8192}})
    endpoint = Endpoint.from_settings(settings)
    OpenAIClient(endpoint).complete(HI)
    asyncio.run(OpenAIClient(endpoint).acomplete(HI))
    for body in server.requests:
        assert body["repeat_penalty"] == 1.05 and body["top_k"] == 20 and body["temperature"] == 0.2
        assert body["options"] == {"num_ctx": 8192} and body["messages"] == [{"role": "user", "content": "hi"}]


def test_a_field_the_server_refuses_is_named(server: ScriptedOpenAIServer) -> None:
    server.script(Reply(status=400))
    endpoint = Endpoint.from_settings(AICISettings(base_url=server.base_url, max_request_retries=0,
                                                   request_extra={"top_k": 20}))
    with pytest.raises(ModelServerError) as caught:
        OpenAIClient(endpoint).complete(HI)
    message = str(caught.value)
    assert "\n" not in message and "request_extra" in message and "top_k" in message


@pytest.mark.parametrize(("extra", "says"), [
    ({"model": "other"}, "cannot set 'model'"), ({"messages": []}, "cannot set 'messages'"),
    ({"stream": False}, "cannot set 'stream'"), ({1: 2}, "field names are text"),
    ({"x": object()}, "must be JSON"), ({"x": float("nan")}, "must be JSON"),
])
def test_a_bad_request_extra_is_one_line(extra: dict[Any, Any], says: str) -> None:
    with pytest.raises(TraitError) as caught:
        AICISettings(request_extra=extra)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_request_extra_from_the_command_line_is_read_as_json() -> None:
    from traitlets.config import Application

    class Command(Application):
        classes = [AICISettings]

    app = Command()
    app.parse_command_line(["--AICISettings.request_extra", "repeat_penalty=1.0",
                            "--AICISettings.request_extra", "stop=[\"x\"]", "--AICISettings.request_extra", "tag=abc"])
    assert AICISettings(config=app.config).request_extra == {"repeat_penalty": 1.0, "stop": ["x"], "tag": "abc"}


def test_a_silent_server_is_unknown_within_the_probe_timeout_and_not_asked_again() -> None:
    with socket.socket() as listener:  # accepts connections (the backlog), never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        sdk = openai.OpenAI(base_url=url, api_key="x", timeout=60.0, max_retries=3)
        started = time.monotonic()
        assert dialect.detect(sdk, url) == dialect.UNKNOWN
        assert time.monotonic() - started < dialect.PROBE_TIMEOUT + 1.5  # not the 60 s, not retried
        started = time.monotonic()
        assert dialect.detect(sdk, url) == dialect.UNKNOWN
        assert time.monotonic() - started < 0.1  # remembered


def test_a_server_not_running_yet_is_asked_again_once_it_is() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    sdk = openai.OpenAI(base_url=url, api_key="x", max_retries=0)
    assert dialect.detect(sdk, url) == dialect.UNKNOWN
    with ScriptedOpenAIServer(port=port) as started:  # the user starts llama-server there
        started.models = LLAMA_SERVER
        assert dialect.detect(sdk, url) == dialect.LLAMA_CPP
        assert started.gets == ["/v1/models"]


def test_a_server_still_loading_is_asked_again_unless_it_named_itself(server: ScriptedOpenAIServer) -> None:
    sdk = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    server.models_status = 503  # llama-server while it loads the model; many servers when overloaded
    assert dialect.detect(sdk, server.base_url) == dialect.UNKNOWN
    server.models_headers = {"Server": "llama.cpp"}
    assert dialect.detect(sdk, server.base_url) == dialect.LLAMA_CPP  # asked again, named in the 503
    server.models_status, server.models_headers = 200, {}
    assert dialect.detect(sdk, server.base_url) == dialect.LLAMA_CPP  # remembered
    assert server.gets == ["/v1/models"] * 2


def test_a_server_without_models_is_asked_once(server: ScriptedOpenAIServer) -> None:
    sdk = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    server.models_status = 404
    assert dialect.detect(sdk, server.base_url) == dialect.UNKNOWN
    server.models_status, server.models = 200, LLAMA_SERVER
    assert dialect.detect(sdk, server.base_url) == dialect.UNKNOWN
    assert server.gets == ["/v1/models"]


@pytest.mark.parametrize("stream", [True, False])
def test_a_server_that_refuses_n_is_asked_again_for_one_choice_and_remembered(
        server: ScriptedOpenAIServer, stream: bool) -> None:
    server.max_n = 1  # "'n' : number must be at most 1", as Groq answers
    server.script("first", "second", Reply("third", status=400))
    client = _client(server, stream=stream)
    assert asyncio.run(client.acomplete(HI, n=3)).text == "first"
    assert _client(server, stream=stream).complete(HI, n=3).text == "second"  # another client: remembered
    assert [r.get("n") for r in server.requests] == [3, None, None]
    # A proxy (OpenRouter) may refuse n for one model and take it for another: asked again.
    server.script("other")
    server.max_n = None  # that model takes it
    assert _client(server, stream=stream, model="other-model").complete(HI, n=3).text == "other"
    assert [r.get("n") for r in server.requests] == [3]
    server.script(Reply("third", status=400))
    # A 400 for another cause, to a request that never asked for n > 1, is the error it is.
    with pytest.raises(ModelServerError, match="400"):
        client.complete(HI, n=1)


def test_a_400_for_another_cause_is_not_taken_for_a_refused_n(server: ScriptedOpenAIServer) -> None:
    server.script(Reply(status=400), Reply(status=400))
    with pytest.raises(ModelServerError, match="400"):
        _client(server).complete(HI, n=2)
    assert [r.get("n") for r in server.requests] == [2, None]  # asked once more for one choice, no better
    assert dialect.takes_n(dialect.UNKNOWN, server.base_url, "m")  # so nothing is remembered
