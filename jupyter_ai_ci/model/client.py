"""Model client over the openai SDK, behind a small interface.

The SDK is imported on the first request, never at ``%load_ext`` (it costs
~0.4 s).  Errors are mapped to our one-line ``ModelError`` family so neither
the loop nor the user ever sees an SDK traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from jupyter_ai_ci.errors import (
    ModelServerError,
    NoEndpoint,
)
from jupyter_ai_ci.events import Message, ModelReply, Usage
from jupyter_ai_ci.model import dialect, transport, vision
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.model.failures import map_error
from jupyter_ai_ci.model.reply import Accumulator, TextCallback, aevents, events
from jupyter_ai_ci.tokens import estimate_usage

__all__ = ["AsyncModelClient", "ModelClient", "OpenAIClient", "ScriptedClient",
           "TextCallback"]  # TextCallback: re-exported for the drivers and the local model

class ModelClient(Protocol):
    """What the drivers need from a model: one completion, text streamed to a callback."""

    # temperature: None, the endpoint's; another for one request (a retry stuck on the same code).
    # n: choices wanted (candidates); an endpoint may give fewer, ``ModelReply.alternatives``.
    def complete(self, messages: Sequence[Message], on_text: TextCallback | None = None,
                 temperature: float | None = None, n: int = 1) -> ModelReply: ...


class AsyncModelClient(Protocol):
    async def acomplete(
        self, messages: Sequence[Message], on_text: TextCallback | None = None, temperature: float | None = None,
        n: int = 1,
    ) -> ModelReply: ...


def _at(endpoint: Endpoint, temperature: float | None) -> Endpoint:
    return endpoint if temperature is None else replace(endpoint, temperature=temperature)


def _request_body(endpoint: Endpoint, messages: Sequence[Message],
                  detected: Sequence[tuple[str, object]] = (), n: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": endpoint.model,
        "messages": [m.as_dict() for m in messages],
        "temperature": endpoint.temperature,
        "stream": endpoint.stream,
    }
    if n > 1:  # never "n": 1, the default: a request asks for nothing it need not
        body["n"] = n
    if endpoint.stream:
        body["stream_options"] = {"include_usage": True}
    if endpoint.max_tokens:
        body["max_tokens"] = endpoint.max_tokens
    # As the SDK merges extra_body: last, over the rest; the user's own fields over ours.
    body.update(detected)
    body.update(endpoint.extra_body)
    if endpoint.request_extra:
        body.update(json.loads(endpoint.request_extra))
    return body


def _post(sdk: Any, endpoint: Endpoint, messages: Sequence[Message], detected: Sequence[tuple[str, object]],
          n: int) -> Any:
    """The SDK's documented ``post`` for a request it need not convert, returning the HTTP
    response itself.  ``chat.completions.create`` walks the typed parameters (~1 ms) and
    builds a typed model for every streamed chunk (most of the client's time per attempt);
    the body here is strings and numbers, and the reply is read as plain JSON.  The SDK still
    sends it: the key, retries with backoff, the timeout and the 4xx/5xx errors are its own."""
    return sdk.post("/chat/completions", body=_request_body(endpoint, messages, detected, n),
                    cast_to=transport.http_library().Response, stream=endpoint.stream)


def _client_args(endpoint: Endpoint, asynchronous: bool = False) -> dict[str, Any]:
    endpoint.check()
    return {
        # Local servers need no key, but the SDK insists on one.
        "api_key": endpoint.api_key or "no-key-needed",
        "base_url": endpoint.base_url,
        "timeout": endpoint.timeout,
        "max_retries": endpoint.max_retries,
        "http_client": transport.http_client(endpoint.base_url, asynchronous),
    }


class OpenAIClient:
    """``ModelClient`` and ``AsyncModelClient`` over the openai SDK."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._sync: Any = None
        self._async: Any = None
        # What server this is (model/dialect.py), decided on the first request: the fields that
        # help code there, and whether it takes ``n``.
        self._kind: str | None = self.endpoint.kind or (None if self.endpoint.probe else dialect.UNKNOWN)
        self._probing: Any = None  # asyncio.Lock: concurrent first requests ask the server once

    def _sent(self, n: int) -> tuple[tuple[tuple[str, object], ...], int]:
        """The detected fields and the ``n`` to send.  A server that gives one choice whatever
        ``n`` asks is sent none: the vote asks again, and its requests share the cached prefix."""
        kind = self._kind or dialect.UNKNOWN
        return dialect.fields_for(kind), n if dialect.takes_n(kind, self.endpoint.base_url, self.endpoint.model) else 1

    def complete(self, messages: Sequence[Message], on_text: TextCallback | None = None,
                 temperature: float | None = None, n: int = 1) -> ModelReply:
        acc = Accumulator(on_text)
        try:
            if self._sync is None:
                import openai

                self._sync = openai.OpenAI(**_client_args(self.endpoint))
            if self._kind is None:
                self._kind = dialect.detect(self._sync, self.endpoint.base_url)
            fields, sent_n = self._sent(n)
            sent = vision.for_model(messages, self.endpoint.takes_images)
            try:
                response = _post(self._sync, _at(self.endpoint, temperature), sent, fields, sent_n)
            except Exception as exc:
                if (instead := vision.resend(exc, sent, sent_n)) is None:
                    raise
                response = _post(self._sync, _at(self.endpoint, temperature), instead[0], fields, instead[1])
                vision.remember(self.endpoint.base_url, self.endpoint.model, sent, sent_n, instead)
            try:
                if self.endpoint.stream:
                    for chunk in events(response.iter_lines()):
                        acc.add_chunk(chunk)
                    acc.check_complete(self.endpoint.host)
                else:
                    acc.add_whole(json.loads(response.read()))
            finally:
                response.close()  # back to the pool, even when the reader stops early
        except (KeyboardInterrupt, NoEndpoint):
            raise
        except Exception as exc:
            raise map_error(exc, self.endpoint) from None
        return acc.reply(messages, self.endpoint.model)

    async def acomplete(
        self, messages: Sequence[Message], on_text: TextCallback | None = None, temperature: float | None = None,
        n: int = 1,
    ) -> ModelReply:
        acc = Accumulator(on_text)
        try:
            if self._async is None:
                import openai

                self._async = openai.AsyncOpenAI(**_client_args(self.endpoint, asynchronous=True))
            if self._kind is None:
                import asyncio

                self._probing = self._probing or asyncio.Lock()
                async with self._probing:
                    if self._kind is None:
                        self._kind = await dialect.adetect(self._async, self.endpoint.base_url)
            fields, sent_n = self._sent(n)
            sent = vision.for_model(messages, self.endpoint.takes_images)
            try:
                response = await _post(self._async, _at(self.endpoint, temperature), sent, fields, sent_n)
            except Exception as exc:
                if (instead := vision.resend(exc, sent, sent_n)) is None:
                    raise
                response = await _post(self._async, _at(self.endpoint, temperature), instead[0], fields, instead[1])
                vision.remember(self.endpoint.base_url, self.endpoint.model, sent, sent_n, instead)
            try:
                if self.endpoint.stream:
                    async for chunk in aevents(response.aiter_lines()):
                        acc.add_chunk(chunk)
                    acc.check_complete(self.endpoint.host)
                else:
                    acc.add_whole(json.loads(await response.aread()))
            finally:
                await response.aclose()
        except NoEndpoint:
            raise
        except Exception as exc:
            raise map_error(exc, self.endpoint) from None
        return acc.reply(messages, self.endpoint.model)


class ScriptedClient:
    """A model that returns canned texts in order; for the loop's in-memory tests
    and for ``bench/``.  Records every request it is sent.  One text a request, whatever
    ``n`` asks, as a server that ignores ``n``: the vote asks again for each candidate."""

    def __init__(self, replies: Iterable[str]) -> None:
        self.replies = list(replies)
        self.requests: list[list[Message]] = []
        self.temperatures: list[float | None] = []  # each request's own, None: the endpoint's
        self.ns: list[int] = []  # the choices each request asked for

    def complete(self, messages: Sequence[Message], on_text: TextCallback | None = None,
                 temperature: float | None = None, n: int = 1) -> ModelReply:
        self.requests.append(list(messages))
        self.temperatures.append(temperature)
        self.ns.append(n)
        if not self.replies:
            raise ModelServerError("the scripted model has no reply left")
        text = self.replies.pop(0)
        if on_text:
            on_text(text)
        return ModelReply(text=text, model="scripted",
                          usage=Usage(sum(estimate_usage(m.content) for m in messages),
                                      estimate_usage(text)))

    async def acomplete(
        self, messages: Sequence[Message], on_text: TextCallback | None = None, temperature: float | None = None,
        n: int = 1,
    ) -> ModelReply:
        return self.complete(messages, on_text, temperature, n=n)
