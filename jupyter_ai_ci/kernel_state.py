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

from .context import CELL_OUTPUT_CHARS, CellRecord, Context, fit_context, user_variables
from .describe import describe
from .environment import environment_lines
from .events import Message
from .notebook_file import notebook_cells, output_text, session_notebook
from .privacy import secret_values

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

    def on_display(self, msg: Any) -> Any:
        """ipykernel display hook: note what is shown, pass the message on untouched."""
        try:
            if len(self._pending) < 5 and msg.get("msg_type") == "display_data":
                data = msg["content"]["data"]
                text = output_text([{"output_type": "display_data", "data": data}])
                self._pending.append(text[:CELL_OUTPUT_CHARS])
        except Exception:
            pass
        return msg

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
        count = getattr(result, "execution_count", None)
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


def tracker_for(shell: Any) -> KernelTracker:
    """The shell's tracker, created and hooked up on first use."""
    tracker = _trackers.get(shell)
    if tracker is None:
        tracker = _trackers[shell] = KernelTracker(shell)
        shell.events.register("post_run_cell", tracker.post_run_cell)
        # ipykernel's publisher takes hooks; the terminal's has none (and no figures to tell).
        register = getattr(getattr(shell, "display_pub", None), "register_hook", None)
        if callable(register):
            register(tracker.on_display)
    return tracker


def forget(shell: Any) -> None:
    tracker = _trackers.pop(shell, None)
    if tracker is not None:
        try:
            shell.events.unregister("post_run_cell", tracker.post_run_cell)
            unregister = getattr(getattr(shell, "display_pub", None), "unregister_hook", None)
            if callable(unregister):
                unregister(tracker.on_display)
        except (ValueError, KeyError):
            pass


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
                   exclude: Sequence[str] = ()) -> Context:
    """Everything the model is told about this kernel, fitted to ``budget`` tokens."""
    tracker = tracker_for(shell)
    ns = shell.user_ns
    variables = user_variables(ns, getattr(shell, "user_ns_hidden", {}), exclude, tracker.recency)
    cells = history_cells(shell, tracker)
    path = session_notebook(ns=ns)
    from_file = notebook_cells(path) if path is not None else None
    if from_file is not None:
        cells = merged_cells([c for c in from_file if not _is_ask(c.source)], cells)
    return fit_context(request, variables, without_excluded(cells, exclude), budget, conversation=conversation,
                       environment=environment_lines(), secrets=secret_values(ns))
