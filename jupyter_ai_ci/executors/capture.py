"""Bounded capture of what a cell prints: memory stays flat however much it prints."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, TextIO

from jupyter_ai_ci.notebook.reader import figure_words



class CappedText:
    """Keeps the first and last ``limit // 2`` characters written, and a count.

    A loop printing 10**7 lines costs ``limit`` characters of memory here.
    """

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head: list[str] = []
        self.head_len = 0
        self.tail: deque[str] = deque()
        self.tail_len = 0
        self.total = 0

    def write(self, text: str) -> None:
        self.total += len(text)
        if self.head_len < self.half:
            room = self.half - self.head_len
            self.head.append(text[:room])
            self.head_len += min(len(text), room)
            text = text[room:]
            if not text:
                return
        self.tail.append(text[-self.half:])
        self.tail_len += min(len(text), self.half)
        while self.tail_len - len(self.tail[0]) >= self.half:
            self.tail_len -= len(self.tail.popleft())

    def getvalue(self) -> str:
        head = "".join(self.head)
        tail = "".join(self.tail)
        if not self.tail:
            return head
        cut = self.total - len(head) - len(tail)
        if cut <= 0:
            return head + tail
        # Trim the tail to its budget after the cut marker.
        tail = tail[-self.half:]
        cut = self.total - len(head) - len(tail)
        return f"{head}\n… {cut} characters cut …\n{tail}"


class Tee:
    """A text stream that writes through to ``stream`` and tells ``on_write``.

    At most ``limit`` characters go through (0: no limit), then one marker:
    a loop printing 10**7 lines must not flood the frontend either.  A negative
    ``limit``: nothing goes through (the caller shows the text elsewhere).
    """

    def __init__(self, stream: TextIO, on_write: Callable[[str], None], limit: int = 0) -> None:
        self._stream = stream
        self._on_write = on_write
        self._left = limit if limit > 0 else -1
        self._silent = limit < 0

    def write(self, text: str) -> int:
        self._on_write(text)
        if self._silent:
            return len(text)
        if self._left < 0:
            return self._stream.write(text)
        if self._left == 0:
            return len(text)
        shown = text[: self._left]
        self._left -= len(shown)
        self._stream.write(shown)
        if self._left == 0:
            self._stream.write("\n… output cut here: the rest is not shown …\n")
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        # flush, isatty, encoding, fileno … come from the real stream.
        return getattr(self._stream, name)


def standin(data: dict[str, Any]) -> str:
    """What the model is told about a rich output: its kind, never the bytes."""
    plain = str(data.get("text/plain", ""))[:200]
    for mime in ("image/png", "image/jpeg", "image/svg+xml"):
        if mime in data:
            return f"{mime} {plain}".strip()
    if "text/html" in data:
        return f"text/html {plain}".strip()
    kinds = ", ".join(k for k in data if k != "text/plain")
    return f"{kinds} {plain}".strip() if kinds else plain


class OutputRecorder:
    """Records one execution's outputs: capped text for the model, and
    nbformat-shaped outputs (also capped) for frontends that insert real cells."""

    def __init__(self, text_limit: int, keep_limit: int = 2_000_000) -> None:
        self.text = CappedText(text_limit)
        self.keep_limit = keep_limit
        self.kept = 0
        self._outputs: list[dict[str, Any]] = []
        self.displays: list[str] = []
        self.figures: list[str] = []  # what the figures shown show, in words (figure_words)
        self.result: str | None = None
        self.dropped = 0

    @property
    def outputs(self) -> list[dict[str, Any]]:
        # Stream text is kept as parts and joined here: appending to one
        # growing string is quadratic (minutes for 200,000 prints).
        return [{**o, "text": "".join(o["text"])} if o["output_type"] == "stream" else o
                for o in self._outputs]

    def clear(self) -> None:
        """``clear_output``: forget the outputs kept so far (the model's text keeps them)."""
        self._outputs.clear()
        self.kept = 0

    def _keep(self, size: int) -> bool:
        if self.kept + size > self.keep_limit:
            self.dropped += 1
            return False
        self.kept += size
        return True

    def stream(self, name: str, text: str) -> None:
        self.text.write(text)
        if not self._keep(len(text)):
            return
        last = self._outputs[-1] if self._outputs else None
        if last and last["output_type"] == "stream" and last["name"] == name:
            last["text"].append(text)
        else:
            self._outputs.append({"output_type": "stream", "name": name, "text": [text]})

    def _figure(self, data: dict[str, Any], metadata: dict[str, Any] | None) -> None:
        words = figure_words(data, metadata)
        # A figure that is a cell's last value is shown twice by the inline backend: said once.
        if words and (not self.figures or self.figures[-1] != words):
            self.figures.append(words)

    def display(self, data: dict[str, Any], metadata: dict[str, Any] | None) -> None:
        self.displays.append(standin(data))
        self._figure(data, metadata)
        if self._keep(sum(len(str(v)) for v in data.values())):
            self._outputs.append(
                {"output_type": "display_data", "data": dict(data), "metadata": dict(metadata or {})}
            )

    def execute_result(self, data: dict[str, Any], metadata: dict[str, Any] | None) -> None:
        self.result = str(data.get("text/plain", ""))
        self._figure(data, metadata)
        if self._keep(sum(len(str(v)) for v in data.values())):
            self._outputs.append({
                "output_type": "execute_result",
                "data": dict(data),
                "metadata": dict(metadata or {}),
                "execution_count": None,
            })

    def notes(self) -> tuple[str, ...]:
        notes = []
        if self.text.total > self.text.half * 2:
            notes.append(f"output was {self.text.total} characters; head and tail kept")
        if self.dropped:
            notes.append(f"output past {self.keep_limit} characters was not kept for the notebook")
        return tuple(notes)
