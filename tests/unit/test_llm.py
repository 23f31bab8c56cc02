"""The openai-SDK client against a real HTTP server speaking the OpenAI protocol."""

from __future__ import annotations

import socket

import pytest

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.errors import (
    ModelAuthError,
    ModelRateLimited,
    ModelServerError,
    ModelUnreachable,
    NoEndpoint,
)
from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model.client import OpenAIClient
from jupyter_ai_ci.model.endpoint import KEY_KEPT_ENV, Endpoint
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

HI = [Message("user", "hi")]


def client(server: ScriptedOpenAIServer, **kw: object) -> OpenAIClient:
    args: dict = {"model": "m", "base_url": server.base_url, "max_retries": 0, "timeout": 5.0}
    args.update(kw)
    return OpenAIClient(Endpoint(**args))


@pytest.mark.parametrize("stream", [True, False])
def test_reply_text_usage_and_streamed_pieces(model_server: ScriptedOpenAIServer, stream: bool) -> None:
    text = "Sure.\n```python\nprint(sum(i*i for i in range(1, 11)))\n```\n"
    model_server.script(text)
    pieces: list[str] = []
    reply = client(model_server, stream=stream).complete(HI, pieces.append)
    assert reply.text == text
    assert "".join(pieces) == text
    assert (len(pieces) > 1) == stream
    assert reply.usage.completion_tokens == (len(text) + 3) // 4
    assert reply.usage.prompt_tokens > 0
    sent = model_server.requests[0]
    assert sent["messages"] == [{"role": "user", "content": "hi"}]
    assert sent["stream"] is stream and sent["temperature"] == 0.0
    # One request at another temperature (a retry stuck on the same code); the next at the endpoint's.
    model_server.script("a", "b")
    same = client(model_server, stream=stream)
    same.complete(HI, temperature=0.7)
    same.complete(HI)
    assert [r["temperature"] for r in model_server.requests[-2:]] == [0.7, 0.0]


def test_key_is_sent_and_a_wrong_key_is_one_clear_line(model_server: ScriptedOpenAIServer) -> None:
    model_server.api_key = "right"
    model_server.script("ok")
    assert client(model_server, api_key="right").complete(HI).text == "ok"
    with pytest.raises(ModelAuthError, match="rejected the API key \\(401\\): check OPENAI_API_KEY"):
        client(model_server, api_key="wrong").complete(HI)



def test_no_key_where_the_server_kept_it_out_of_the_kernel_says_so(
        model_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # Found by hand: with OPENAI_BASE_URL set, %%ask in JupyterLab said "check OPENAI_API_KEY",
    # which was right (in the server's environment, kept out of the kernel).
    model_server.api_key = "right"
    model_server.script(Reply(status=401))
    monkeypatch.setenv(KEY_KEPT_ENV, "1")
    with pytest.raises(ModelAuthError, match="asked for an API key \\(401\\), and the Jupyter server kept "
                                             "OPENAI_API_KEY out of this kernel"):
        client(model_server).complete(HI)


def test_rate_limit_is_retried_with_backoff_then_succeeds(model_server: ScriptedOpenAIServer) -> None:
    limited = Reply(status=429, headers={"retry-after-ms": "20"})
    model_server.script(limited, limited, "finally")
    assert client(model_server, max_retries=3).complete(HI).text == "finally"
    assert len(model_server.requests) == 3


def test_rate_limit_after_all_retries_says_what_to_do(model_server: ScriptedOpenAIServer) -> None:
    limited = Reply(status=429, headers={"retry-after-ms": "10"})
    model_server.script(limited, limited, limited)
    with pytest.raises(ModelRateLimited, match="429"):
        client(model_server, max_retries=2).complete(HI)
    assert len(model_server.requests) == 3


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors(model_server: ScriptedOpenAIServer, status: int) -> None:
    model_server.script(Reply(status=status))
    with pytest.raises(ModelServerError, match=f"answered {status} for model 'm'; try again later"):
        client(model_server).complete(HI)
    model_server.script(Reply(status=status, headers={"retry-after-ms": "10"}),
                        Reply(status=status, headers={"retry-after-ms": "10"}))
    with pytest.raises(ModelServerError, match=f"answered {status} for model 'm', 2 tries;"):  # retried once
        client(model_server, max_retries=1).complete(HI)


def test_unknown_model_404_names_the_model(model_server: ScriptedOpenAIServer) -> None:
    model_server.script(Reply(status=404))
    with pytest.raises(ModelServerError, match="model 'm'"):
        client(model_server).complete(HI)


def test_timeout(model_server: ScriptedOpenAIServer) -> None:
    model_server.script(Reply("late", delay=2.0))
    with pytest.raises(ModelUnreachable, match="did not answer within 0.5 s; try again, or raise "
                                               "AICISettings.request_timeout"):
        client(model_server, timeout=0.5).complete(HI)
    model_server.script(Reply("late", delay=2.0), Reply("late", delay=2.0))
    with pytest.raises(ModelUnreachable, match="within 0.5 s, 2 tries;"):  # the SDK tried again
        client(model_server, timeout=0.5, max_retries=1).complete(HI)


def test_connection_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    c = OpenAIClient(Endpoint(model="m", base_url=url, max_retries=0))
    with pytest.raises(ModelUnreachable, match=f"cannot reach the model at 127.0.0.1:{port}.*OPENAI_BASE_URL right"):
        c.complete(HI)
    # Set with %config (found by hand: the error named the environment variable instead).
    monkeypatch.setenv("OPENAI_BASE_URL", "http://elsewhere.invalid/v1")
    configured = Endpoint.from_settings(AICISettings(base_url=url, max_request_retries=0))
    with pytest.raises(ModelUnreachable, match="is the server running and the configured base_url right"):
        OpenAIClient(configured).complete(HI)


def test_a_key_error_names_where_the_key_was_set() -> None:
    from jupyter_ai_ci.drivers.server import keep_keys_from_kernels

    assert Endpoint.from_settings(AICISettings(api_key="sk-c")).api_key_from == "the configured api_key"
    # The Jupyter server moves OPENAI_API_KEY into the settings: the user still set the variable.
    moved = AICISettings()
    keep_keys_from_kernels(moved, {"OPENAI_API_KEY": "sk-env"})
    assert moved.api_key == "sk-env"
    assert Endpoint.from_settings(moved).api_key_from == "OPENAI_API_KEY"


def test_stream_cut_mid_reply(model_server: ScriptedOpenAIServer) -> None:
    model_server.script(Reply("x" * 200, cut_after=40))
    with pytest.raises(ModelServerError, match="cut off mid-stream"):
        client(model_server).complete(HI)


def test_malformed_reply(model_server: ScriptedOpenAIServer) -> None:
    model_server.script(Reply(raw="this is not json"))
    with pytest.raises(ModelServerError):
        client(model_server, stream=False).complete(HI)


def test_no_endpoint_explains_both_ways() -> None:
    with pytest.raises(NoEndpoint, match="OPENAI_API_KEY.*OPENAI_BASE_URL"):
        OpenAIClient(Endpoint(model="m")).complete(HI)


async def _acomplete(c: OpenAIClient) -> str:
    pieces: list[str] = []
    reply = await c.acomplete(HI, pieces.append)
    assert "".join(pieces) == reply.text
    return reply.text


def test_async_client_streams(model_server: ScriptedOpenAIServer) -> None:
    import asyncio

    model_server.script("async hello " * 5)
    assert asyncio.run(_acomplete(client(model_server))) == "async hello " * 5


def test_host_never_includes_the_key() -> None:
    e = Endpoint(model="m", base_url="https://user:secret@example.org/v1", api_key="sk-secret")
    assert e.host == "example.org"


def test_max_tokens_is_sent_only_when_set(model_server: ScriptedOpenAIServer) -> None:
    model_server.script("a", "b")
    client(model_server).complete(HI)
    client(model_server, max_tokens=64).complete(HI)
    assert "max_tokens" not in model_server.requests[0]
    assert model_server.requests[1]["max_tokens"] == 64


@pytest.mark.parametrize("stream", [True, False])
def test_extra_body_fields_arrive_in_the_request_body(model_server: ScriptedOpenAIServer, stream: bool) -> None:
    # Server-specific fields (the local model's repeat_penalty) go into the JSON body itself,
    # next to the standard ones, and win over them as the SDK's extra_body does.
    model_server.script("a")
    extra = (("repeat_penalty", 1.0), ("top_k", 40), ("temperature", 0.5))
    client(model_server, stream=stream, temperature=0.0, extra_body=extra).complete(HI)
    sent = model_server.requests[0]
    assert sent["repeat_penalty"] == 1.0 and sent["top_k"] == 40
    assert sent["temperature"] == 0.5
    assert sent["model"] == "m" and sent["messages"] == [{"role": "user", "content": "hi"}]
    assert sent["stream"] is stream and ("stream_options" in sent) is stream


@pytest.mark.parametrize("stream", [True, False])
def test_several_choices_in_one_request_sync_and_async(model_server: ScriptedOpenAIServer, stream: bool) -> None:
    # Candidates (core/consensus.py) ask for the rest at once: the body says n, the reply holds
    # every choice in index order, and only the first streams to the driver.
    import asyncio

    model_server.script(Reply("a" * 40, alternatives=("b" * 40, "c")), Reply("d", alternatives=("e", "f")), "g")
    pieces: list[str] = []
    reply = client(model_server, stream=stream).complete(HI, pieces.append, n=3)
    assert (reply.text, reply.alternatives) == ("a" * 40, ("b" * 40, "c"))
    assert "".join(pieces) == "a" * 40
    assert reply.usage.completion_tokens == 10 + 10 + 1  # the server's count: every choice, once
    fewer = asyncio.run(client(model_server, stream=stream).acomplete(HI, n=2))
    assert (fewer.text, fewer.alternatives) == ("d", ("e",))
    assert client(model_server, stream=stream).complete(HI).alternatives == ()
    assert [r.get("n") for r in model_server.requests] == [3, 2, None]  # never "n": 1
