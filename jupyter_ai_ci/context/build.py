"""What the model is told about the notebook, fitted to a token budget.

Pieces, in priority order (the request itself, and a retry's code and
traceback, travel outside the budget and are never cut):

1. variables the request names (or whose DataFrame columns it names), in full;
2. the user's last error, when recent or asked about (``last_error.py``):
   the failing line and the traceback, or without the traceback if short of room;
3. data files in the working directory (``datafiles.py``): the ones the request
   names first, each with its columns, dtypes and two rows, or a line each;
4. other user variables, one line each, most recently assigned first;
5. recent cells with their outputs, most recent first; older ones a line each;
6. earlier exchanges of this kernel (sent as chat history);
7. the environment: Python, the data libraries imported.

The budget is spent in two passes: first every piece up to its share, so a
long notebook cannot crowd out the conversation; then what is left goes to
the pieces in priority order.  The same state gives the same text (replay
depends on it).

The text is written in another order, the steadiest pieces first (``DISPLAY``):
data files (by name), the environment, the cells in the order they ran, other
variables, the variables the request is about, the last error.  A model server
reuses the work done on the longest prefix a request shares with the last one
(llama.cpp's prompt cache, OpenAI's prompt caching): with the files first, a
local model on a CPU reads a new request's context in seconds instead of most of
a minute.  And what matters most for the request sits next to it.

Descriptions live in ``describe.py``, secret masking in ``privacy.py``, token
counting in ``tokens.py``.
"""

from __future__ import annotations

import fnmatch
import re
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from jupyter_ai_ci.context.budget import Budget, Section, kept
from jupyter_ai_ci.context.describe import _is_frame, describe
from jupyter_ai_ci.context.privacy import mask_secrets, masked_cut
from jupyter_ai_ci.events import CellRecord, Message
from jupyter_ai_ci.tokens import count_tokens, counter_name

__all__ = ["CellRecord", "Context", "build_context", "describe", "fit_context", "mask_secrets", "user_variables"]

_SKIP_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
# The order the pieces are written in: steadiest first (see the module docstring).
DISPLAY = ("files", "environment", "cells", "variables", "named", "last_error")
# Share of the budget each piece may take in the first pass (see module docstring).
# The last error's 0.10 (300 tokens of the default 3000: its failing line and a
# short traceback; a longer one is upgraded from what is left) came out of the
# named variables' and the cells' shares.  A share left unused goes to the second pass.
# The data files' 0.15 (450 tokens: three or four tables with their columns) came out of
# the named variables', the cells' and the environment's shares: with no variable loaded
# yet, the files are the whole answer to "what are the columns?".
SHARES = {"named": 0.25, "last_error": 0.10, "files": 0.15, "variables": 0.12, "cells": 0.20,
          "conversation": 0.15, "environment": 0.03}
MAX_CELLS = 200  # cells looked at; older ones are counted, not read
CELL_SOURCE_CHARS = 1200
CELL_OUTPUT_CHARS = 600
TURN_CHARS = 2000
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CONTEXT_HEADER = "## Notebook context (live kernel state)\n"
NOTHING_LOADED = "### Variables\nnone: no file above is loaded yet"
# The read calls the file descriptions give use ``pd``: a small model copies them without the
# import (16 of 37 first attempts failed on ``NameError: pd`` with the rule in the system prompt
# alone).  Said last, next to the request, and only when the kernel really has no ``pd``.
NO_PANDAS = "`pd` is not defined in the kernel: code that reads a file above starts with `import pandas as pd`"
_HEADER = CONTEXT_HEADER
HINT = "(hint)"  # a piece that is a hint said next to the request, not an item of a section


@dataclass(frozen=True)
class Context:
    text: str  # the notebook context, placed above the request
    history: tuple[Message, ...]  # earlier exchanges that fit, oldest first
    tokens: int  # of text and history together
    budget: int
    counter: str  # how tokens were counted
    # Each item of ``text`` with its section's title, in the order written: what a follow-up
    # sent after the earlier request's own conversation is told anew (``context/since.py``).
    pieces: tuple[tuple[str, str], ...] = ()


def user_variables(
    ns: Mapping[str, Any],
    hidden: Mapping[str, Any] | frozenset[str] = frozenset(),
    exclude: Iterable[str] = (),
    recency: Mapping[str, int] | None = None,
) -> list[tuple[str, Any]]:
    """The user's own variables, most recently assigned first.

    ``recency`` (name -> tick of the last cell that bound it, higher is newer)
    comes from the kernel tracker; without it, dict order stands in for
    assignment order (it is creation order: a rebinding does not move a name).
    """
    patterns = tuple(exclude)
    out = []
    for name, obj in list(ns.items()):
        if name.startswith("_") or name in _SKIP_NAMES or name in hidden:
            continue
        if isinstance(obj, types.ModuleType) or any(fnmatch.fnmatchcase(name, p) for p in patterns):
            continue
        out.append((name, obj))
    out.reverse()
    if recency:
        out.sort(key=lambda item: -recency.get(item[0], 0))  # stable: ties keep dict order
    return out


def _named(request: str, variables: Sequence[tuple[str, Any]], also: str) -> list[tuple[str, Any]]:
    """Variables the request is about, then DataFrames whose columns it names,
    then names from ``also`` (the previous answer's code: "now plot it")."""
    words = set(_WORD.findall(request))
    lower = {w.lower() for w in words}
    direct = [(n, o) for n, o in variables if n in words]
    by_column = []
    for n, o in variables:
        if n not in words and _is_frame(o):
            try:
                if any(str(c).lower() in lower for c in o.columns):
                    by_column.append((n, o))
            except Exception:
                continue
    later = set(_WORD.findall(also)) - words - {n for n, _ in by_column}
    chosen = direct + by_column + [(n, o) for n, o in variables if n in later]
    if not chosen:  # "plot it": the newest DataFrame is the likeliest subject
        chosen = [(n, o) for n, o in variables if _is_frame(o)][:1]
    return chosen


def _cell_forms(cell: CellRecord, known: Sequence[str]) -> tuple[str, str]:
    label = f"{cell.label} " if cell.label else ""
    source = masked_cut(cell.source, CELL_SOURCE_CHARS, known)
    if cell.kind == "markdown":
        full = f"[{label}markdown]\n{source}"
    else:
        full = f"[{label.strip() or 'cell'}]\n```python\n{source}\n```"
        if cell.output:
            full += f"\nOutput:\n```\n{masked_cut(cell.output, CELL_OUTPUT_CHARS, known)}\n```"
    lines = cell.source.strip().splitlines() or [""]
    first = lines[0][:100]
    short = f"[{label}{'markdown' if cell.kind == 'markdown' else 'code'}] {first}" + (
        f" … ({len(lines)} lines)" if len(lines) > 1 else "")
    return full, short


# A cell as ``_cell_forms`` writes it in full, read back (``cell_parts``): kept beside the writer.
_CELL = re.compile(r"\A\[[^\n]*\]\n```python\n(?P<source>.*?)\n```(?:\nOutput:\n```\n(?P<output>.*)\n```)?\Z",
                   re.DOTALL)


def cell_parts(text: str) -> tuple[str, str] | None:
    """The source and output ("" if none) of a code cell's full form; None for any other text."""
    cell = _CELL.match(text)
    return (cell.group("source"), cell.group("output") or "") if cell is not None else None


def _error_forms(text: str) -> tuple[str, str | None]:
    """The error section in full, and without its fenced traceback."""
    if not text.startswith("### "):
        text = f"### The last error\n{text}"
    head, fence, _ = text.partition("\n```")
    return text, (f"{head}\n(traceback not shown: no room)" if fence else None)


def _value(obj: Any, known: Sequence[str]) -> Any:
    # A string holding a secret is masked before describe() cuts it to a sample.
    # describe() samples only the head of a string, so only the head is searched.
    if isinstance(obj, str) and any(k in obj[:400] for k in known):
        return mask_secrets(obj, known)
    return obj


def _cut_turn(turn: Sequence[Message], limit: int, secrets: Sequence[str]) -> tuple[Message, ...]:
    """A turn as sent in the history: each message cut to ``limit`` and masked (the same
    message when that changes nothing)."""
    cut = [(m, masked_cut(m.content, limit, secrets)) for m in turn]
    return tuple(m if text == m.content else Message(m.role, text) for m, text in cut)


def fit_context(
    request: str,
    variables: Sequence[tuple[str, Any]],
    cells: Sequence[CellRecord],
    budget_tokens: int,
    *,
    conversation: Sequence[Message] = (),
    environment: Sequence[str] = (),
    secrets: Sequence[str] = (),
    last_error: str = "",
    files: Sequence[tuple[str, str]] = (),
    files_total: int = 0,
    pandas_bound: bool = True,
) -> Context:
    """Fit the pieces to ``budget_tokens``; see the module docstring.

    ``last_error``: the error section, its own ``### `` title first
    (``LastError.render()``); one without a title gets a plain one.
    ``files``: the data files' (full, one-line) descriptions (``datafiles.file_notes``),
    of ``files_total`` data files in all; ``pandas_bound``: whether ``pd`` names pandas in the kernel."""
    secrets = tuple(secrets)  # part of the kept forms' key
    turns = [tuple(conversation[i:i + 2]) for i in range(0, len(conversation) - 1, 2)][::-1]
    previous = turns[0][1].content if turns else ""
    named = _named(request, variables, previous)
    named_names = {n for n, _ in named}
    recent = list(reversed(cells[-MAX_CELLS:]))

    def turn_forms(turn: tuple[Message, ...]) -> tuple[str, str]:
        full = "\n\n".join(masked_cut(m.content, TURN_CHARS, secrets) for m in turn)
        return full, "\n\n".join(masked_cut(m.content, TURN_CHARS // 8, secrets) for m in turn)

    sections = [
        Section("named", "### Variables the request is about", named,
                 lambda v: (describe(v[0], _value(v[1], secrets), full=True), describe(v[0], _value(v[1], secrets)))),
        Section("last_error", "", [last_error.strip()] if last_error.strip() else [], _error_forms, text=True),
        Section("files", "### Data files in the working directory", list(files), lambda f: f, text=True),
        Section("variables", "### Other variables (most recently assigned first)",
                 [v for v in variables if v[0] not in named_names],
                 lambda v: (describe(v[0], _value(v[1], secrets)), None)),
        Section("cells", "### Recent cells (in the order they ran)", recent, lambda c: _cell_forms(c, secrets),
                 text=True),
        Section("conversation", "", turns, turn_forms, text=True),
        Section("environment", "### Environment", list(environment), lambda line: (line, None), text=True),
    ]
    # A little is kept back for the "… N more not shown" notes, so the model
    # always knows when something was left out.
    reserve = min(30, budget_tokens // 20)
    budget = Budget(budget_tokens - reserve, secrets)
    budget.used = count_tokens(_HEADER)
    for section in sections:
        budget.fill(section, SHARES[section.key] * budget_tokens)
    for section in sections:
        budget.fill(section, float("inf"), upgrade=True)
    budget.total = budget_tokens

    lines: list[str] = []
    pieces: list[tuple[str, str]] = []
    by_key = {section.key: section for section in sections}
    for key in DISPLAY:
        section = by_key[key]
        if not section.taken:
            continue
        left = len(section.items) - section.next + (len(cells) - len(recent) if key == "cells" else 0)
        left += max(files_total - len(files), 0) if key == "files" else 0
        texts = [t.text for t in section.taken]
        if key == "cells":
            texts.reverse()  # taken newest first; written as they ran
        elif key == "files":
            texts.sort()  # taken named first; written by name (each starts with its name)
        note = f"(… {left} more not shown)" if left else ""
        if note and budget.used + count_tokens(note) + 1 <= budget_tokens:
            budget.used += count_tokens(note) + 1
        else:
            note = ""
        lines += [section.title] if section.title else []
        lines += ([note] if note and key == "cells" else []) + texts + ([note] if note and key != "cells" else [])
        pieces += [(section.title, t) for t in texts]
    # Files and no variable: a small model took a file's description for a DataFrame already
    # loaded under the file's name (customers_raw.drop_duplicates() with nothing loaded).
    hints = [NOTHING_LOADED] if not variables else []
    hints += [NO_PANDAS] if not pandas_bound else []
    for hint in hints if by_key["files"].taken else []:
        if budget.used + count_tokens(hint) + 1 <= budget_tokens:
            lines.append(hint)
            pieces.append((HINT, hint))
            budget.used += count_tokens(hint) + 1
    text = (_HEADER + "\n".join(lines)) if lines else ""
    turns_taken = next(section for section in sections if section.key == "conversation").taken
    history: list[Message] = []
    for taken in reversed(turns_taken):
        limit = TURN_CHARS if taken.form == 0 else TURN_CHARS // 8
        turn: tuple[Message, ...] = taken.item
        history += kept(("history" if limit == TURN_CHARS else "history-short", turn, secrets),
                         partial(_cut_turn, turn, limit, secrets))
    return Context(text, tuple(history), budget.used, budget_tokens, counter_name(), tuple(pieces))


def build_context(
    request: str,
    variables: Sequence[tuple[str, Any]],
    cells: Sequence[CellRecord],
    budget_tokens: int,
    **pieces: Any,
) -> str:
    """The context text alone (``fit_context(...).text``), for callers that
    send no history."""
    return fit_context(request, variables, cells, budget_tokens, **pieces).text
