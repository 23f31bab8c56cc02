"""Reading a chat completion's reply: server-sent events and JSON, as plain dicts.

The SDK still sends the request (``client.py``); reading the body here instead of
through its ``Stream`` of typed chunk models is most of what an attempt costs on
the client's side with a fast model (see docs/benchmarks.md).  It reads what the
SDK's stream reads: ``data:`` lines up to ``[DONE]``, an ``{"error": …}`` event
raising, and a stream that ends with no ``finish_reason`` is a reply cut off.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from jupyter_ai_ci.errors import ModelServerError
from jupyter_ai_ci.events import Message, ModelReply, Usage
from jupyter_ai_ci.tokens import estimate_usage

TextCallback = Callable[[str], None]


class Accumulator:
    """Collects a streamed or whole reply into a ModelReply.  Reads the JSON as plain
    dicts: building the SDK's typed models for each chunk was most of the client's time.

    A request for several choices (``n``) gets each by its ``index``; streamed, their chunks
    interleave.  Only choice 0's text goes to ``on_text``: it is the one a driver shows as it
    comes (the others are candidates, run later, ``ModelReply.alternatives``)."""

    def __init__(self, on_text: TextCallback | None) -> None:
        self.on_text = on_text
        self.choices: dict[int, _Choice] = {}
        self.model = ""
        self.usage: Usage | None = None
        self.started = time.perf_counter()

    def _usage(self, usage: Any) -> None:
        if isinstance(usage, dict) and usage:
            self.usage = Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))

    def add_chunk(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            raise ValueError("a streamed chunk is not a JSON object")
        if chunk.get("error"):
            raise StreamError(chunk["error"])
        self.model = chunk.get("model") or self.model
        self._usage(chunk.get("usage"))
        for choice in chunk.get("choices") or ():
            index = _index(choice, 0)
            got = self.choices.setdefault(index, _Choice())
            text = (choice.get("delta") or {}).get("content")
            if text:
                got.parts.append(text)
                if self.on_text and index == 0:
                    self.on_text(text)
            got.finish = choice.get("finish_reason") or got.finish

    def check_complete(self, host: str) -> None:
        # Every OpenAI-compatible server ends a stream with a finish_reason for each choice;
        # without one the connection dropped mid-reply.
        if not self.choices or any(c.finish is None for c in self.choices.values()):
            raise ModelServerError(
                f"the reply from {host} was cut off mid-stream; try again"
            )

    def add_whole(self, completion: Any) -> None:
        if not isinstance(completion, dict):
            raise ValueError("the reply is not a JSON object")
        self.model = completion.get("model") or ""
        choices = completion.get("choices")
        if not choices:
            raise ModelServerError("the model's reply had no choices; check the endpoint and model name")
        for place, choice in enumerate(choices):
            text = (choice.get("message") or {}).get("content") or ""
            self.choices[_index(choice, place)] = _Choice([text], choice.get("finish_reason"))
        text = self._texts()[0]
        if self.on_text and text:
            self.on_text(text)
        self._usage(completion.get("usage"))

    def _texts(self) -> list[str]:
        """Each choice's text in index order (choice 0 first); one empty text for none."""
        return ["".join(self.choices[i].parts) for i in sorted(self.choices)] or [""]

    def reply(self, messages: Sequence[Message], model: str) -> ModelReply:
        texts = self._texts()
        usage = self.usage or Usage(  # the prompt once, whatever the number of choices
            sum(estimate_usage(m.content) for m in messages), sum(estimate_usage(t) for t in texts)
        )
        return ModelReply(
            text=texts[0],
            model=self.model or model,
            usage=usage,
            finish_reason=self.choices[min(self.choices)].finish if self.choices else None,
            seconds=time.perf_counter() - self.started,
            alternatives=tuple(texts[1:]),
        )


@dataclass
class _Choice:
    parts: list[str] = field(default_factory=list)
    finish: str | None = None


def _index(choice: Any, default: int) -> int:
    """A choice's ``index``; ``default`` where a server leaves it out (one choice, usually)."""
    index = choice.get("index") if isinstance(choice, dict) else None
    return index if isinstance(index, int) and not isinstance(index, bool) else default


class StreamError(Exception):
    """An ``{"error": …}`` event in the middle of a stream (the SDK raises ``APIError`` there)."""


DONE = object()  # the [DONE] event: the stream's last
NOTHING = object()  # a line that completes no event (``null`` is a JSON value)


class _Events:
    """The server-sent-event grammar chat completions use, fed a line at a time; one copy for
    the blocking and the asyncio reader.  ``data:`` lines (joined when an event has several),
    blank lines ending an event; ``event:``/``id:``/``retry:`` fields and ``:`` comments are
    skipped."""

    def __init__(self) -> None:
        self.data: list[str] = []

    def feed(self, line: str) -> Any:
        """The event ``line`` completes (its JSON, or ``DONE``), else ``NOTHING``."""
        if line.startswith("data:"):
            self.data.append(line[6:] if line.startswith("data: ") else line[5:])
            return NOTHING
        if line or not self.data:
            return NOTHING
        text = "\n".join(self.data)
        self.data = []
        return DONE if text.startswith("[DONE]") else json.loads(text)

    def end(self) -> Any:
        """An event the body ended without a blank line after, or ``NOTHING``."""
        if self.data and not self.data[0].startswith("[DONE]"):
            return json.loads("\n".join(self.data))
        return NOTHING


def events(lines: Iterable[str]) -> Iterator[Any]:
    """The JSON of each server-sent event's data, up to ``[DONE]``."""
    parser = _Events()
    lines = iter(lines)  # what follows [DONE] is drained from where the events stopped
    for line in lines:
        event = parser.feed(line)
        if event is DONE:
            # Read to the body's end (the chunked terminator follows): a response closed
            # before it loses its connection, and the next request would open a new one.
            for _ in lines:
                pass
            return
        if event is not NOTHING:
            yield event
    if (last := parser.end()) is not NOTHING:
        yield last


async def aevents(lines: AsyncIterator[str]) -> AsyncIterator[Any]:
    parser = _Events()
    async for line in lines:
        event = parser.feed(line)
        if event is DONE:
            async for _ in lines:  # to the body's end, as in ``events``
                pass
            return
        if event is not NOTHING:
            yield event
    if (last := parser.end()) is not NOTHING:
        yield last
