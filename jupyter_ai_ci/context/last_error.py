"""The user's last error for the context: the cell, the failing line, the traceback.

Read from IPython's own record of the last exception (``sys.last_value`` and friends,
set by ``InteractiveShell.showtraceback`` in IPython 8 and 9), not from a hook of ours:
an error raised before ``%load_ext`` counts, and so does one in a kernel the server or
the command line talks to.  Code the magic runs never lands there (its executor takes
``showtraceback`` over).
"""

from __future__ import annotations

import linecache
import re
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from jupyter_ai_ci.context.privacy import masked_cut
from jupyter_ai_ci.text import strip_ansi

TRACEBACK_CHARS = 2400  # ~600 tokens, head and tail kept: where it entered the code, where it blew up
RECENT_CELLS = 3  # an error of one of the 3 cells before the running one is "recent"
_WALK = 100_000  # traceback nodes looked at, at most (a RecursionError has ~3000)
# "The cell above", not "revenue above 100"; "fix", "traceback", "doesn't work"...
_ABOUT_AN_ERROR = re.compile(
    r"\b(?:fix\w*|error\w*|traceback\w*|exception\w*|fail\w*|broken?|crash\w*|bug\w*|debug\w*|wrong"
    r"|(?:cell|code|one)s? above|(?:doesn|don|didn|isn|wasn|won)['’]?t work\w*|(?:does|did|do|is|was) not work"
    r"|not working)\b", re.IGNORECASE)
_INPUT_NAME = re.compile(r"^<ipython-input-(\d+)-")  # IPython's own cell names (the terminal)
_KERNEL_FILE = re.compile(r"ipykernel_\d+[\\/]\d+\.py$")  # ipykernel's, when its map is gone
_LIBRARY = re.compile(r"^.*[\\/](?:site-packages|dist-packages|lib[\\/]python3\.\d+)[\\/]")
Frame = tuple[str, int, str]  # file, line, function


@dataclass(frozen=True)
class LastError:
    count: int | None  # execution count of the cell that raised it, when known
    message: str  # "KeyError: 'Revenue'"
    failing: str  # where in the user's cells it failed, and that line
    traceback: str  # plain text, bounded, secrets masked
    source: str  # the cell that raised it ("" when unknown)

    def render(self) -> str:
        title = "### The last error" + (f" (In [{self.count}])" if self.count is not None else "")
        shown = f"```\n{self.traceback}\n```" if self.traceback != self.message else ""  # a SyntaxError's
        return "\n".join(part for part in (title, self.message, self.failing, shown) if part)


def worth_telling(error: LastError, request: str, next_count: int, asked_since: bool = False) -> bool:
    """Told when the request is about an error ("fix the cell above"), or the error is recent:
    raised by one of the ``RECENT_CELLS`` cells before the running one, no ``%%ask`` ran since.
    ``next_count`` is ``shell.execution_count``: n + 1 while ``In [n]`` runs (IPython counts a
    cell as it starts); from the server or command line, one past the last cell run."""
    recent = error.count is not None and next_count - error.count <= RECENT_CELLS + 1 and not asked_since
    return recent or _ABOUT_AN_ERROR.search(request) is not None


def _cell(names: dict[str, int], filename: str) -> tuple[bool, int | None]:
    """Whether ``filename`` is a notebook cell, and its execution count if known."""
    found = _INPUT_NAME.match(filename)
    if filename in names or found:  # IPython >= 8 maps every cell it compiled to its count
        return True, names[filename] if filename in names else int(found.group(1)) if found else None
    return _KERNEL_FILE.search(filename) is not None, None


def _walk(tb: TracebackType | None) -> list[Frame]:
    frames: list[Frame] = []
    while tb is not None and len(frames) < _WALK:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    return frames


def _stack(frames: list[Frame], names: dict[str, int], raised: bool) -> list[str]:
    """The frames as IPython shows them; ``raised``: of the exception the user saw."""
    first = next((i for i, f in enumerate(frames) if _cell(names, f[0])[0]), None)
    if first is None and raised:  # IPython's own frames only (a SyntaxError while compiling the cell)
        return []
    frames = frames[first or 0:]  # IPython's run_code above the cell: hidden, as IPython does
    items: list[Frame | str] = []  # a frame, or a note standing for some
    repeats = 0
    for i, frame in enumerate(frames):  # a recursion: one line repeated, said once (as Python does)
        repeats = repeats + 1 if i and frame == frames[i - 1] else 0
        items += [frame] if repeats < 3 else []
        if repeats >= 3 and (i + 1 == len(frames) or frames[i + 1] != frame):
            items.append(f"  [Previous line repeated {repeats - 2} more times]")
    head, tail = 10, 20  # frames shown per exception, at most: where it entered, where it blew up
    if len(items) > head + tail:
        items[head:-tail] = [f"  … {len(items) - head - tail} frames not shown …"]
    lines: list[str] = []
    for item in items:
        if isinstance(item, str):
            lines.append(item)
            continue
        is_cell, count = _cell(names, item[0])
        where = ("Cell" + (f" In [{count}]" if count is not None else "")) if is_cell else \
            f'File "{_LIBRARY.sub("", item[0])}"'  # site-packages paths: long, and differ per machine
        code = linecache.getline(item[0], item[1]).strip()[:300]
        lines += [f"  {where}, line {item[1]}, in {item[2]}"] + ([f"    {code}"] if code else [])
    return lines


def _message(exc: BaseException) -> str:  # a SyntaxError's starts with where: the first unindented line
    lines = "".join(traceback.format_exception_only(type(exc), exc)).splitlines()
    return next((line for line in lines if line and not line[0].isspace()), type(exc).__name__)[:300]


def last_error(shell: Any, secrets: Sequence[str] = ()) -> LastError | None:
    """IPython's last exception, or None when there is none or it predates the
    history (its cell's number now names another cell: ``%reset``, a new session)."""
    # Every IPython sets last_value (8.12 not last_exc, even on 3.12); last_exc: a Python without it.
    exc = getattr(sys, "last_value", None)
    exc = getattr(sys, "last_exc", None) if exc is None else exc
    if not isinstance(exc, BaseException):
        return None
    names = getattr(getattr(shell, "compile", None), "_filename_map", None)
    names = names if isinstance(names, dict) else {}
    chain: list[BaseException] = []  # newest first, as raised; a cycle or a long chain is cut
    node: BaseException | None = exc
    while node is not None and len(chain) < 3 and all(node is not seen for seen in chain):
        chain.append(node)
        node = node.__cause__ or (None if node.__suppress_context__ else node.__context__)
    parts: list[str] = []
    for i, one in enumerate(reversed(chain)):
        if i:  # how it follows the one above, in Python's words
            parts.append("\nThe above exception was the direct cause of the following exception:\n"
                         if one.__cause__ is not None else
                         "\nDuring handling of the above exception, another exception occurred:\n")
        stack = _stack(_walk(one.__traceback__), names, one is exc)
        parts += (["Traceback (most recent call last):", *stack] if stack else []) + [_message(one)]
    # The cell that ran is the outermost cell frame; the line that failed, the deepest.
    cells = [(name, line) for name, line, _ in _walk(exc.__traceback__) if _cell(names, name)[0]]
    if not cells and isinstance(exc, SyntaxError) and exc.filename and _cell(names, exc.filename)[0]:
        cells.append((exc.filename, exc.lineno or 0))
    count, source, failing = None, "", ""
    if cells:
        count, source = _cell(names, cells[0][0])[1], "".join(linecache.getlines(cells[0][0]))
        history = getattr(getattr(shell, "history_manager", None), "input_hist_parsed", None)
        if count is not None and isinstance(history, list) and (
                not 0 < count < len(history) or str(history[count]).rstrip() != source.rstrip()):
            return None
        where, line = _cell(names, cells[-1][0])[1], linecache.getline(*cells[-1]).strip()[:300]
        label = "" if where is None else f"In [{where}], "
        failing = f"Failing line ({label}line {cells[-1][1]}):\n    {line}" if line else ""
    # Messages can carry colours (some libraries colour theirs); secrets are masked before the cut.
    text = masked_cut(strip_ansi("\n".join(parts)), TRACEBACK_CHARS, secrets)
    return LastError(count, strip_ansi(_message(exc)), failing, text, source)
