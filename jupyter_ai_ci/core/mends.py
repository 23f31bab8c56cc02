"""What the run changes in the model's code by itself, with no model call (issue #37).

Two failures have one right change that needs no judgement, and a model call for it (10-30 s on
a laptop's CPU) was waste; worse, a 1.5B model often sent the same code back and spent the retries:
- a missing conventional import (core/imports.py): the line goes on top of the first cell;
- an inplace change pandas made on a copy (core/noop.py): ``df['t'].ffill(inplace=True)`` runs as
  ``df['t'] = df['t'].ffill()``, the assignment pandas' own warning points to.
The failed attempt is undone like any other, runs again mended, and one line says what changed.
Within a step a mend holds for every later reply and candidate: a fix that writes the same line
again gets the same change.  The conversation keeps the code as it ran (``said``), so the next
request, a fix or a follow-up, reads what the kernel did, not the line that changed nothing.
A line is rewritten only when pandas' warning is the attempt's failure: an attempt that raised
something else is the model's to fix (the warning is in the output it is shown), and running it
again first would cost a whole run of the code for nothing.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import replace
from typing import Any

from jupyter_ai_ci.core.imports import checked_import, with_imports
from jupyter_ai_ci.core.noop import NOOP_ENAME, rewrites
from jupyter_ai_ci.events import Action, Attempt, Message, ModelReply
from jupyter_ai_ci.text import fenced_lines


class Mends:
    """The mends made so far in one step: import lines, and lines run as another."""

    def __init__(self, imports: Sequence[str] = (), lines: dict[str, str] | None = None) -> None:
        self.imports = list(imports)
        self.lines = dict(lines or {})  # a line of the model's (stripped) -> the line run instead

    def copy(self) -> Mends:
        """Another candidate's own mends, starting from these (what it adds is its own)."""
        return Mends(self.imports, self.lines)

    def text(self, text: str, fenced: bool = False) -> str:
        """``text`` (one block; a reply, ``fenced``: only in its fenced blocks) with each mended line
        replaced, its indent kept."""
        if not self.lines:
            return text
        lines = text.split("\n")
        inside = fenced_lines(text) if fenced else range(len(lines))
        for n in inside:
            if n < len(lines) and (instead := self.lines.get(lines[n].strip())):
                lines[n] = lines[n][:len(lines[n]) - len(lines[n].lstrip())] + instead
        return "\n".join(lines)

    def said(self, reply: ModelReply, messages: list[Message]) -> ModelReply:
        """``reply`` mended; the conversation's copy of it too, so it holds the code as it ran."""
        text = self.text(reply.text, fenced=True)
        if text == reply.text:
            return reply
        if messages and messages[-1].role == "assistant" and messages[-1].content == reply.text:
            messages[-1] = Message("assistant", text)
        return replace(reply, text=text)

    def code(self, blocks: Sequence[str]) -> list[str]:
        """``blocks`` as they run: mended lines replaced, the imports on top."""
        return with_imports([self.text(block) for block in blocks], self.imports)

    def find(self, attempt: Attempt, step: int) -> Generator[Action, Any, str]:
        """A mend for ``attempt``'s failure, made: what it did, in a few words ("" when there is none,
        and the model is asked as for any error)."""
        line = yield from checked_import(attempt.error, attempt.code, self.imports, attempt.number, step)
        if line:
            self.imports.append(line)
            return f"added `{line}`"
        error = attempt.error
        found = [(old, new) for old, new in rewrites(attempt.results, attempt.code) if old not in self.lines] \
            if error is not None and error.ename == NOOP_ENAME else []
        if not found:
            return ""
        self.lines.update(found)
        return f"wrote {' and '.join(f'`{new}`' for _, new in found)} for the line{'s' if len(found) > 1 else ''} " \
            "that changed a copy"
