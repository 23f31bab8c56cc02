"""Model client over the openai SDK, behind a small interface.

The SDK is imported on the first request, never at ``%load_ext`` (it costs
~0.4 s).  Errors are mapped to our one-line ``ModelError`` family so neither
the loop nor the user ever sees an SDK traceback.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
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
from jupyter_ai_ci.tokens import estimate_usage

if TYPE_CHECKING:
    from jupyter_ai_ci.config import AICISettings

TextCallback = Callable[[str], None]

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

    def complete(self, messages: Sequence[Message], on_text: TextCallback | None = None) -> ModelReply: ...


class AsyncModelClient(Protocol):
    async def acomplete(
        self, messages: Sequence[Message], on_text: TextCallback | None = None
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
        )

    @property
    def host(self) -> str:
        """Where requests go, for messages and provenance: never the key."""
        if not self.base_url:
            return "api.openai.com"
        url = urlparse(self.base_url)  # hostname drops any user:password@
        return f"{url.hostname}:{url.port}" if url.port else str(url.hostname)

    def check(self) -> None:
        if not self.base_url and not self.api_key:
            raise NoEndpoint(KEY_KEPT_HELP if os.environ.get(KEY_KEPT_ENV) else NO_ENDPOINT_HELP)


class _Accumulator:
    """Collects a streamed or whole reply into a ModelReply."""

    def __init__(self, on_text: TextCallback | None) -> None:
        self.on_text = on_text
        self.parts: list[str] = []
        self.model = ""
        self.finish: str | None = None
        self.usage: Usage | None = None
        self.started = time.perf_counter()

    def add_chunk(self, chunk: Any) -> None:
        self.model = getattr(chunk, "model", None) or self.model
        if getattr(chunk, "usage", None):
            self.usage = Usage(chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
        for choice in chunk.choices or ():
            text = getattr(choice.delta, "content", None)
            if text:
                self.parts.append(text)
                if self.on_text:
                    self.on_text(text)
            self.finish = choice.finish_reason or self.finish

    def check_complete(self, endpoint: Endpoint) -> None:
        # Every OpenAI-compatible server ends a stream with a finish_reason;
        # without one the connection dropped mid-reply.
        if self.finish is None:
            raise ModelServerError(
                f"the reply from {endpoint.host} was cut off mid-stream; try again"
            )

    def add_whole(self, completion: Any) -> None:
        self.model = completion.model or ""
        if not completion.choices:
            raise ModelServerError("the model's reply had no choices; check the endpoint and model name")
        choice = completion.choices[0]
        text = choice.message.content or ""
        self.parts.append(text)
        if self.on_text and text:
            self.on_text(text)
        self.finish = choice.finish_reason
        if completion.usage:
            self.usage = Usage(completion.usage.prompt_tokens or 0, completion.usage.completion_tokens or 0)

    def reply(self, messages: Sequence[Message], endpoint: Endpoint) -> ModelReply:
        text = "".join(self.parts)
        usage = self.usage or Usage(
            sum(estimate_usage(m.content) for m in messages), estimate_usage(text)
        )
        return ModelReply(
            text=text,
            model=self.model or endpoint.model,
            usage=usage,
            finish_reason=self.finish,
            seconds=time.perf_counter() - self.started,
        )


def map_error(exc: BaseException, endpoint: Endpoint) -> ModelError:
    """Turn an SDK or transport exception into one line that says what to do."""
    import openai

    where = endpoint.host
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        return ModelUnreachable(
            f"the model at {where} did not answer within {endpoint.timeout:g} s; "
            "try again, or raise %config AICISettings.request_timeout"
        )
    if isinstance(exc, openai.APIConnectionError):
        return ModelUnreachable(
            f"cannot reach the model at {where}: is the server running and OPENAI_BASE_URL right?"
        )
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return ModelAuthError(
            f"{where} rejected the API key ({exc.status_code}): check OPENAI_API_KEY"
        )
    if isinstance(exc, openai.RateLimitError):
        return ModelRateLimited(
            f"{where} is rate limiting requests (429) even after {endpoint.max_retries} retries "
            "with backoff; wait a minute and try again, or check your quota"
        )
    if isinstance(exc, openai.NotFoundError):
        return ModelServerError(
            f"{where} answered 404 for model {endpoint.model!r}: check the model name "
            "(--model, JUPYTER_AI_CI_MODEL) and the base URL (it usually ends in /v1)"
        )
    if isinstance(exc, openai.APIStatusError):
        return ModelServerError(
            f"{where} answered {exc.status_code} for model {endpoint.model!r}; "
            "try again later or check the server's log"
        )
    return ModelServerError(
        f"the reply from {where} was cut off or malformed ({type(exc).__name__}); try again"
    )


def _request_body(endpoint: Endpoint, messages: Sequence[Message]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": endpoint.model,
        "messages": [m.as_dict() for m in messages],
        "temperature": endpoint.temperature,
        "stream": endpoint.stream,
    }
    if endpoint.stream:
        body["stream_options"] = {"include_usage": True}
    if endpoint.max_tokens:
        body["max_tokens"] = endpoint.max_tokens
    body.update(endpoint.extra_body)  # as the SDK merges extra_body: last, over the rest
    return body


def _post(sdk: Any, endpoint: Endpoint, messages: Sequence[Message], asynchronous: bool = False) -> Any:
    """``chat.completions.create`` minus its walk over the typed parameters, ~1 ms an attempt
    for a body of strings and numbers that needs no converting.  ``post`` is the SDK's documented
    way to send a body as is, with the same key, retries, timeout and reply types."""
    from openai import AsyncStream, Stream
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    return sdk.post("/chat/completions", body=_request_body(endpoint, messages), cast_to=ChatCompletion,
                    stream=endpoint.stream, stream_cls=(AsyncStream if asynchronous else Stream)[ChatCompletionChunk])


def _client_args(endpoint: Endpoint) -> dict[str, Any]:
    endpoint.check()
    return {
        # Local servers need no key, but the SDK insists on one.
        "api_key": endpoint.api_key or "no-key-needed",
        "base_url": endpoint.base_url,
        "timeout": endpoint.timeout,
        "max_retries": endpoint.max_retries,
    }


class OpenAIClient:
    """``ModelClient`` and ``AsyncModelClient`` over the openai SDK."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._sync: Any = None
        self._async: Any = None

    def complete(self, messages: Sequence[Message], on_text: TextCallback | None = None) -> ModelReply:
        acc = _Accumulator(on_text)
        try:
            if self._sync is None:
                import openai

                self._sync = openai.OpenAI(**_client_args(self.endpoint))
            response = _post(self._sync, self.endpoint, messages)
            if self.endpoint.stream:
                for chunk in response:
                    acc.add_chunk(chunk)
                acc.check_complete(self.endpoint)
            else:
                acc.add_whole(response)
        except (KeyboardInterrupt, NoEndpoint):
            raise
        except Exception as exc:
            raise map_error(exc, self.endpoint) from None
        return acc.reply(messages, self.endpoint)

    async def acomplete(
        self, messages: Sequence[Message], on_text: TextCallback | None = None
    ) -> ModelReply:
        acc = _Accumulator(on_text)
        try:
            if self._async is None:
                import openai

                self._async = openai.AsyncOpenAI(**_client_args(self.endpoint))
            response = await _post(self._async, self.endpoint, messages, asynchronous=True)
            if self.endpoint.stream:
                async for chunk in response:
                    acc.add_chunk(chunk)
                acc.check_complete(self.endpoint)
            else:
                acc.add_whole(response)
        except NoEndpoint:
            raise
        except Exception as exc:
            raise map_error(exc, self.endpoint) from None
        return acc.reply(messages, self.endpoint)


class ScriptedClient:
    """A model that returns canned texts in order; for the loop's in-memory tests
    and for ``bench/``.  Records every request it is sent."""

    def __init__(self, replies: Iterable[str]) -> None:
        self.replies = list(replies)
        self.requests: list[list[Message]] = []

    def complete(self, messages: Sequence[Message], on_text: TextCallback | None = None) -> ModelReply:
        self.requests.append(list(messages))
        if not self.replies:
            raise ModelServerError("the scripted model has no reply left")
        text = self.replies.pop(0)
        if on_text:
            on_text(text)
        return ModelReply(text=text, model="scripted",
                          usage=Usage(sum(estimate_usage(m.content) for m in messages),
                                      estimate_usage(text)))

    async def acomplete(
        self, messages: Sequence[Message], on_text: TextCallback | None = None
    ) -> ModelReply:
        return self.complete(messages, on_text)
