"""What the run changes in the model's code by itself, with no model call (issue #37).

Two failures have one right change that needs no judgement, and a model call for it (10-30 s on
a laptop's CPU) was waste; worse, a 1.5B model often sent the same code back and spent the retries:
- a missing conventional import (core/imports.py): the line goes on top of the first cell;
- an inplace change pandas made on a copy (core/noop.py): ``df['t'].ffill(inplace=True)`` runs as
  ``df['t'] = df['t'].ffill()``, the assignment pandas' own warning points to.
The failed attempt is undone like any other, runs again mended, and one line says what changed.
Within a step a mend holds for every later reply and candidate: a fix that writes the same line
again gets the same change.  The conversation keeps the code as it ran (``text``), so the next
request, a fix or a follow-up, reads what the kernel did, not the line that changed nothing.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from jupyter_ai_ci.core.imports import checked_import, with_imports
from jupyter_ai_ci.core.noop import rewrite
from jupyter_ai_ci.events import Action, Attempt


class Mends:
    """The mends made so far in one step: import lines, and lines run as another."""

    def __init__(self, imports: Sequence[str] = (), lines: dict[str, str] | None = None) -> None:
        self.imports = list(imports)
        self.lines = dict(lines or {})  # a line of the model's (stripped) -> the line run instead

    def copy(self) -> Mends:
        """Another candidate's own mends, starting from these (what it adds is its own)."""
        return Mends(self.imports, self.lines)

    def text(self, text: str) -> str:
        """``text`` (a reply, or one block) with each mended line replaced, its indent kept."""
        if not self.lines:
            return text
        out = []
        for line in text.split("\n"):
            instead = self.lines.get(line.strip())
            out.append(line[:len(line) - len(line.lstrip())] + instead if instead else line)
        return "\n".join(out)

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
        found = rewrite(attempt.results, attempt.code)
        if found is None or found[0] in self.lines:
            return ""
        self.lines[found[0]] = found[1]
        return f"wrote `{found[1]}` for the line that changed a copy"
