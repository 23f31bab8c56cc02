"""Reading the live kernel for the context: variables in assignment order,
recent cells with outputs and errors, the notebook file when known.

IPython keeps neither the order in which names were bound (the namespace
dict keeps creation order only) nor the errors cells raised, so a
``post_run_cell`` hook records both.  It costs a pass over the namespace's
keys per cell (microseconds for hundreds of names) and never touches values.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import weakref
from collections.abc import Sequence
from typing import Any

from jupyter_ai_ci.context.build import CELL_OUTPUT_CHARS, Context, fit_context, user_variables
from jupyter_ai_ci.context.describe import describe
from jupyter_ai_ci.context.environment import environment_lines
from jupyter_ai_ci.context.last_error import last_error, worth_telling
from jupyter_ai_ci.context.privacy import secret_values
from jupyter_ai_ci.events import CellRecord, Message
from jupyter_ai_ci.notebook.reader import notebook_cells, output_text, session_notebook

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASK_PREFIXES = ("%%ask", "%ask", "get_ipython().run_cell_magic('ask'", "get_ipython().run_line_magic('ask'")


def _bound_names(source: str) -> set[str]:
    """Names a cell binds or mutates (``x = …``, ``df["a"] = …``, ``def f``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            base = node.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                names.add(base.id)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


class KernelTracker:
    """Assignment order of names; the error each cell raised and what it displayed."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.tick = 0
        self.recency: dict[str, int] = {}
        # execution count -> (the cell's source, its error); the source guards
        # against counts restarting after %reset or a new history session.
        self.errors: dict[int, tuple[str, str]] = {}
        self.outputs: dict[int, tuple[int, str]] = {}  # Out[n] -> (id, description)
        # What a cell displayed (figures, display(df)): IPython keeps no record of it.
        self.displays: dict[int, tuple[str, list[str]]] = {}
        self._pending: list[str] = []
        self._ids = {name: id(value) for name, value in list(shell.user_ns.items()) if not name.startswith("_")}

    def on_display(self, data: Any) -> None:
        """Note what a cell shows (a figure, ``display(df)``): its text stand-in, never its bytes."""
        try:
            if len(self._pending) < 5 and isinstance(data, dict):
                text = output_text([{"output_type": "display_data", "data": data}])
                self._pending.append(text[:CELL_OUTPUT_CHARS])
        except Exception:
            pass

    def _history_number(self, raw: Any, count: Any) -> Any:
        """The cell's index in the input history, which ``history_cells`` reads by.  Usually the
        result's execution count; after ``execution_count`` was set by hand, IPython 9 numbers
        the result one off from the history, so the history's own last entry decides."""
        hist = getattr(getattr(self.shell, "history_manager", None), "input_hist_raw", None)
        if isinstance(hist, list) and isinstance(raw, str) and hist and hist[-1] == raw:
            return len(hist) - 1
        return count

    def post_run_cell(self, result: Any) -> None:
        self.tick += 1
        ns = self.shell.user_ns
        ids = {}
        for name, value in list(ns.items()):
            if name.startswith("_"):  # IPython's _, _iN, _N grow with history; never described
                continue
            ids[name] = id(value)
            if self._ids.get(name) != ids[name]:
                self.recency[name] = self.tick
        self._ids = ids
        info = getattr(result, "info", None)
        raw = getattr(info, "raw_cell", None)
        if isinstance(raw, str) and len(raw) < 100_000:
            try:
                source = self.shell.transform_cell(raw)
            except Exception:
                source = raw
            for name in _bound_names(source) & ids.keys():
                self.recency[name] = self.tick
        for name in [n for n in self.recency if n not in ids]:
            del self.recency[name]
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        count = self._history_number(raw, getattr(result, "execution_count", None))
        if self._pending and isinstance(count, int) and isinstance(raw, str):
            self.displays[count] = (raw, self._pending)
        self._pending = []
        if error is not None and isinstance(count, int) and isinstance(raw, str):
            try:
                message = f"{type(error).__name__}: {error}"[:300]
            except Exception:  # an exception whose __str__ raises
                message = type(error).__name__
            self.errors[count] = (raw, message)


_trackers: weakref.WeakKeyDictionary[Any, KernelTracker] = weakref.WeakKeyDictionary()


def _watch_displays(shell: Any, tracker: KernelTracker) -> None:
    """See every ``display_pub.publish`` of this shell.

    ipykernel's publisher hooks are thread-local (ipykernel 7 may run cells on another
    thread than the one that loaded us) and the terminal's publisher has none, so the
    shell's own publisher is wrapped instead; ``forget`` puts it back."""
    pub = getattr(shell, "display_pub", None)
    original = getattr(pub, "publish", None)
    if pub is None or not callable(original):
        return

    def publish(data: Any = None, *args: Any, **kwargs: Any) -> Any:
        tracker.on_display(data if data is not None else kwargs.get("data"))
        return original(data, *args, **kwargs)

    publish.__wrapped__ = original  # type: ignore[attr-defined]
    pub.publish = publish


def tracker_for(shell: Any) -> KernelTracker:
    """The shell's tracker, created and hooked up on first use."""
    tracker = _trackers.get(shell)
    if tracker is None:
        tracker = _trackers[shell] = KernelTracker(shell)
        shell.events.register("post_run_cell", tracker.post_run_cell)
        _watch_displays(shell, tracker)
    return tracker


def forget(shell: Any) -> None:
    tracker = _trackers.pop(shell, None)
    if tracker is not None:
        try:
            shell.events.unregister("post_run_cell", tracker.post_run_cell)
        except (ValueError, KeyError):
            pass
        pub = getattr(shell, "display_pub", None)
        original = getattr(getattr(pub, "publish", None), "__wrapped__", None)
        if original is not None:
            pub.publish = original  # type: ignore[union-attr]


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


def history_cells(shell: Any, tracker: KernelTracker | None = None, limit: int = 200) -> list[CellRecord]:
    """Recent cells from the kernel's history: source as typed, ``Out``, the error raised."""
    manager = getattr(shell, "history_manager", None)
    raw = list(getattr(manager, "input_hist_raw", None) or shell.user_ns.get("In", []))
    outputs = shell.user_ns.get("Out", {})
    errors = tracker.errors if tracker is not None else {}
    cells = []
    start = max(1, len(raw) - limit)
    for number in range(start, len(raw)):
        source = raw[number]
        if not source.strip() or _is_ask(source):
            continue
        parts = [_out_text(tracker, number, outputs[number])] if number in outputs else []
        shown = tracker.displays.get(number) if tracker is not None else None
        if shown is not None and shown[0].rstrip() == source.rstrip():
            parts += shown[1]
        if number in errors and errors[number][0].rstrip() == source.rstrip():
            parts.append(f"raised {errors[number][1]}")
        cells.append(CellRecord(source, "\n".join(parts), label=f"In [{number}]"))
    return cells


def merged_cells(file_cells: Sequence[CellRecord], kernel_cells: Sequence[CellRecord]) -> list[CellRecord]:
    """The saved notebook, then cells run since the last save (not yet in the file)."""
    saved = {c.source.strip() for c in file_cells}
    return [*file_cells, *(c for c in kernel_cells if c.source.strip() not in saved)]


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
                   exclude: Sequence[str] = (), notebook: Sequence[CellRecord] | None = None) -> Context:
    """Everything the model is told about this kernel, fitted to ``budget`` tokens.

    ``notebook``: the notebook's cells as the driver sees them (the panel's live
    cells, the file the command line opened); else the saved file, if known."""
    tracker = tracker_for(shell)
    ns = shell.user_ns
    variables = user_variables(ns, getattr(shell, "user_ns_hidden", {}), exclude, tracker.recency)
    cells = history_cells(shell, tracker)
    path = session_notebook(ns=ns) if notebook is None else None
    from_file = notebook_cells(path) if path is not None else notebook
    if from_file is not None:
        cells = merged_cells([c for c in from_file if not _is_ask(c.source)], cells)
    secrets = secret_values(ns)
    return fit_context(request, variables, without_excluded(cells, exclude), budget, conversation=conversation,
                       environment=environment_lines(), secrets=secrets,
                       last_error=_error_text(shell, request, exclude, secrets))


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
    asked = error.count is not None and any(
        isinstance(source, str) and _is_ask(source) for source in raw[error.count + 1:running])
    # len(raw): n + 1 while In [n] runs, and one past the last cell run when none does.
    return error.render() if worth_telling(error, request, len(raw), asked) else ""
