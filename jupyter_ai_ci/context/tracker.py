"""The kernel tracker: what IPython does not keep, recorded from ``%load_ext`` on.

IPython keeps neither the order in which names were bound (the namespace
dict keeps creation order only) nor the errors cells raised, nor what a cell
displayed, so a ``post_run_cell`` hook records them.  It costs a pass over the
namespace's keys per cell (microseconds for hundreds of names) and never
touches values.

``%load_ext`` starts the tracker, so this module is imported at the load and
must stay cheap: only the standard library modules IPython has loaded
already.  The context builder (``kernel_state``) reads the tracker; what the
tracker needs of the context's heavier modules (how a display reads as text)
is imported when a cell first displays something.
"""

from __future__ import annotations

import ast
import weakref
from typing import Any


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


def _display_text(data: dict[str, Any]) -> str:
    # The notebook reader and the context's limits import the event types (~15 ms): not at the load.
    from jupyter_ai_ci.context.build import CELL_OUTPUT_CHARS
    from jupyter_ai_ci.notebook.reader import output_text

    return output_text([{"output_type": "display_data", "data": data}])[:CELL_OUTPUT_CHARS]


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
                self._pending.append(_display_text(data))
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
        metadata = args[0] if args else kwargs.get("metadata")
        # The %%ask cell's own progress display is not something the user's code showed.
        if not (isinstance(metadata, dict) and "jupyter_ai_ci" in metadata):
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
    """Stop tracking ``shell``: unhook the cell hook and the display publisher."""
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
