"""Reading the live kernel for the context: variables in assignment order,
recent cells with outputs and errors, the notebook file when known.

What IPython does not keep (assignment order, errors, displays) is recorded
by the kernel tracker, ``context.tracker``: a module of its own because
``%load_ext`` starts it, and this one imports the whole context builder.
"""

from __future__ import annotations

import fnmatch
import os
import re
import types
from collections.abc import Mapping, Sequence
from typing import Any

from jupyter_ai_ci.context.build import Context, fit_context, user_variables
from jupyter_ai_ci.context.datafiles import file_notes
from jupyter_ai_ci.context.describe import describe
from jupyter_ai_ci.context.environment import environment_lines
from jupyter_ai_ci.context.last_error import last_error, worth_telling
from jupyter_ai_ci.context.privacy import secret_values
from jupyter_ai_ci.context.tracker import KernelTracker, tracker_for
from jupyter_ai_ci.events import CellRecord, Message
from jupyter_ai_ci.notebook.reader import NOT_RUN, saved_cells, session_notebook
from jupyter_ai_ci.safety.remote import undone_cells

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASK_PREFIXES = ("%%ask", "%ask", "get_ipython().run_cell_magic('ask'", "get_ipython().run_line_magic('ask'")


def _is_ask(source: str) -> bool:
    # %%ask cells are the conversation, which has its own piece of the context.
    return source.lstrip().startswith(_ASK_PREFIXES)


def _out_text(tracker: KernelTracker | None, number: int, value: Any) -> str:
    # Out[n] never changes once set; describing 200 of them on every request
    # would be most of the build's time.  Keyed by identity to be safe.
    if tracker is None:
        return describe("Out", value)
    cached = tracker.outputs.get(number)
    if cached is None or cached[0] != id(value):
        cached = tracker.outputs[number] = (id(value), describe("Out", value))
    return cached[1]


_NO_OUTPUT = object()


def history_cells(shell: Any, tracker: KernelTracker | None = None, limit: int = 200) -> list[CellRecord]:
    """Recent cells from the kernel's history: source as typed, ``Out``, the error raised.

    Asked for every request: a cell's record is kept (``tracker.records``) while its source,
    ``Out`` entry, display and error are the very objects it was made from, so a long
    history costs a look-up per cell, not a description."""
    manager = getattr(shell, "history_manager", None)
    raw = list(getattr(manager, "input_hist_raw", None) or shell.user_ns.get("In", []))
    outputs = shell.user_ns.get("Out", {})
    if not isinstance(outputs, Mapping):
        outputs = {}
    errors = tracker.errors if tracker is not None else {}
    displays = tracker.displays if tracker is not None else {}
    kept: dict[int, tuple[Any, ...]] = tracker.records if tracker is not None else {}
    cells = []
    start = max(1, len(raw) - limit)
    undone = undone_cells(shell)  # an undone attempt's or request's cells (safety/remote.py)
    for number in range(start, len(raw)):
        if number in undone:
            continue
        source = raw[number]
        out, shown, error = outputs.get(number, _NO_OUTPUT), displays.get(number), errors.get(number)
        entry = kept.get(number)
        if entry is None or entry[0] is not source or entry[1] is not out or entry[2] is not shown \
                or entry[3] is not error:
            entry = kept[number] = (source, out, shown, error, _history_cell(tracker, number, source, out, shown,
                                                                              error))
        if entry[4] is not None:
            cells.append(entry[4])
    if len(kept) > 2 * limit:  # numbers that scrolled out of the window, or a history that restarted
        for number in [n for n in kept if not start <= n < len(raw)]:
            del kept[number]
    return cells


def _history_cell(tracker: KernelTracker | None, number: int, source: Any, out: Any,
                  shown: tuple[str, list[str]] | None, error: tuple[str, str] | None) -> CellRecord | None:
    if not isinstance(source, str) or not source.strip() or _is_ask(source):
        return None
    parts = [_out_text(tracker, number, out)] if out is not _NO_OUTPUT else []
    if shown is not None and shown[0].rstrip() == source.rstrip():
        parts += shown[1]
    if error is not None and error[0].rstrip() == source.rstrip():
        parts.append(f"raised {error[1]}")
    return CellRecord(source, "\n".join(parts), label=f"In [{number}]")


class _FileView:
    """The saved notebook's cells as the merge needs them, made once per read of the file."""

    def __init__(self, cells: Sequence[CellRecord]) -> None:
        self.cells = cells  # held, so that the identity it is looked up by is not reused
        self.kept = [c for c in cells if not _is_ask(c.source)]
        self.saved = {c.source.strip() for c in self.kept}
        self.not_run = [i for i, c in enumerate(self.kept) if c.label.endswith(NOT_RUN)]


_file_view: _FileView | None = None


def _view(cells: Sequence[CellRecord]) -> _FileView:
    # By identity: the reader hands out the same tuple while the file is unchanged (a list may
    # change in place, so only a tuple is kept).
    global _file_view
    if not isinstance(cells, tuple):
        return _FileView(cells)
    if _file_view is None or _file_view.cells is not cells:
        _file_view = _FileView(cells)
    return _file_view


def merged_cells(file_cells: Sequence[CellRecord], kernel_cells: Sequence[CellRecord]) -> list[CellRecord]:
    """The saved notebook (``%%ask`` cells left out), then cells run since the last save (not yet
    in the file).  A saved cell saved before it ran is the kernel's (what it gave, its number):
    it read "(not run)" with no output until the next save (found by a newcomer with ``%ask
    --show-context``)."""
    view = _view(file_cells)
    merged = list(view.kept)
    if view.not_run:
        ran = {c.source.strip(): c for c in kernel_cells}  # the latest run of each source
        for index in view.not_run:
            merged[index] = ran.get(merged[index].source.strip(), merged[index])
    merged += [c for c in kernel_cells if c.source.strip() not in view.saved]
    return merged


def without_excluded(cells: Sequence[CellRecord], exclude: Sequence[str]) -> list[CellRecord]:
    """Cells that mention no excluded name: excluding ``customers`` must also
    keep out the cell that loaded it and the rows it printed."""
    if not exclude:
        return list(cells)
    kept = []
    for cell in cells:
        names = set(_IDENTIFIER.findall(cell.source))
        if not any(fnmatch.filter(names, pattern) for pattern in exclude):
            kept.append(cell)
    return kept


def gather_context(shell: Any, request: str, conversation: Sequence[Message], budget: int,
                   exclude: Sequence[str] = (), notebook: Sequence[CellRecord] | None = None,
                   secrets: Sequence[str] | None = None) -> Context:
    """Everything the model is told about this kernel, fitted to ``budget`` tokens.

    ``notebook``: the notebook's cells as the driver sees them (the panel's live
    cells, the file the command line opened); else the saved file, if known.
    ``secrets``: ``secret_values(shell.user_ns)`` if the caller has just found them."""
    tracker = tracker_for(shell)
    ns = shell.user_ns
    variables = user_variables(ns, getattr(shell, "user_ns_hidden", {}), exclude, tracker.recency)
    cells = history_cells(shell, tracker)
    path = session_notebook(ns=ns) if notebook is None else None
    from_file = saved_cells(path) if path is not None else notebook
    if from_file is not None:
        cells = merged_cells(from_file, cells)
    secrets = secret_values(ns) if secrets is None else secrets
    files, total = file_notes(os.getcwd(), request, exclude)
    return fit_context(request, variables, without_excluded(cells, exclude), budget, conversation=conversation,
                       environment=environment_lines(), secrets=secrets,
                       last_error=_error_text(shell, request, exclude, secrets), files=files, files_total=total,
                       pandas_bound=_is_pandas(ns.get("pd")))


def _is_pandas(obj: Any) -> bool:
    # A module, not any object: a user's own ``pd`` may be hostile (its __getattr__ raising).
    return isinstance(obj, types.ModuleType) and obj.__name__ == "pandas"


def _error_text(shell: Any, request: str, exclude: Sequence[str], secrets: Sequence[str]) -> str:
    """The user's last error as a context section, or "" (see ``last_error.worth_telling``).

    An error raised by a ``%%ask`` cell is the run's own (a model that could not
    be reached), not the user's; one whose cell mentions an excluded name is
    kept out with that cell."""
    try:
        error = last_error(shell, secrets)
    except Exception:  # noqa: BLE001 -- a hostile exception must not cost the user the whole request
        return ""
    if error is None or _is_ask(error.source) or not without_excluded([CellRecord(error.source, "")], exclude):
        return ""
    raw = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if not isinstance(raw, list):
        count = getattr(shell, "execution_count", None)
        return error.render() if worth_telling(error, request, count if isinstance(count, int) else 0) else ""
    # Counted from the history, not shell.execution_count (IPython 8 and 9 step it at different
    # times): the %%ask running now is the history's last entry; from the server or the command
    # line no cell is running.  A %%ask between the error and now was told of it already.
    running = len(raw) - 1 if raw and isinstance(raw[-1], str) and _is_ask(raw[-1]) else len(raw)
    # Newest first: the last %%ask is usually near the end, however old the error.
    asked = error.count is not None and any(
        isinstance(raw[n], str) and _is_ask(raw[n]) for n in range(running - 1, error.count, -1))
    # len(raw): n + 1 while In [n] runs, and one past the last cell run when none does.
    return error.render() if worth_telling(error, request, len(raw), asked) else ""
