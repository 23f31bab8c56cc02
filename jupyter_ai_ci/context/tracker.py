"""The kernel tracker: what IPython does not keep, recorded from ``%load_ext`` on.

IPython keeps neither the order in which names were bound (the namespace
dict keeps creation order only) nor the errors cells raised, nor what a cell
displayed, so a ``post_run_cell`` hook records them.  Every cell the user runs
pays for that hook, so it only notes the cell: what the cells bound (their code,
parsed) and the namespace (names and object ids, never values) are read once
per request, when the context asks for the order (``recency``).

``%load_ext`` starts the tracker, so this module is imported at the load and
must stay cheap: only the standard library modules IPython has loaded
already.  The context builder (``kernel_state``) reads the tracker; what the
tracker needs of the context's heavier modules (how a display reads as text)
is imported when a cell first displays something.
"""

from __future__ import annotations

import ast
import collections
import re
import weakref
from functools import lru_cache
from typing import Any, TypeGuard

from jupyter_ai_ci.context import figurehook


@lru_cache(maxsize=64)  # a cell run again (a notebook re-run, a loop of edits) is not walked again
def _bound_names(source: str) -> frozenset[str]:
    """Names a cell binds or mutates (``x = …``, ``df["a"] = …``, ``def f``).

    Asked for every cell run since the last request, when the context is built: the cell is
    parsed by ``parse_cell``, which skips IPython's transformer for plain Python (most of a
    parse's time) and keeps the last trees (an attempt's code was parsed by its risk scan)."""
    # Not at the load (see the module docstring): at the first settle after it.
    from jupyter_ai_ci.safety.astutil import parse_cell

    try:
        tree = parse_cell(source)
    except Exception:  # noqa: BLE001 -- not only SyntaxError: a deeply nested cell overflows the parser
        return frozenset()
    # Statements only, not every expression node (most of a tree): a name bound inside an
    # expression (``(n := …)``) is found by ``recency``'s namespace check instead.
    names: set[str] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue  # its body's names are its own (a ``global`` one is bound when it is called)
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _targets(target, names)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            _targets(node.target, names)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    _targets(item.optional_vars, names)
        elif isinstance(node, ast.Delete):  # ``del df["a"]`` changes df; ``del x`` binds nothing
            for target in node.targets:
                if not isinstance(target, ast.Name):
                    _targets(target, names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        for field in ("body", "orelse", "finalbody", "handlers"):
            stack.extend(getattr(node, field, ()))
        if isinstance(node, ast.Match):
            stack.extend(statement for case in node.cases for statement in case.body)
    return frozenset(names)


def _targets(target: ast.AST, names: set[str]) -> None:
    """The names an assignment target binds or changes: ``a, (b, *c)``, ``df["x"]``, ``obj.a.b``."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _targets(element, names)
        return
    if isinstance(target, ast.Starred):
        target = target.value
    while isinstance(target, (ast.Subscript, ast.Attribute)):
        target = target.value
    if isinstance(target, ast.Name):
        names.add(target.id)


MAX_UNREAD = 1000  # cells between two requests whose code is read; older ones count by their objects
# Cells whose code does not show what they bind: magics and shell escapes (%run, %store -r,
# %%time's body), star imports, exec/eval/globals(), assignment expressions.  Such a cell has
# the namespace compared before and after it, so what it bound is dated to it (they are few).
_OPAQUE = re.compile(r"^\s*[%!]|import\s*\*|\b(?:exec|eval|globals)\s*\(|:=", re.MULTILINE)


def _readable(raw: object) -> TypeGuard[str]:
    """A cell whose code says what it binds: not opaque (``_OPAQUE``), and not so long that
    reading it costs more than comparing the namespace."""
    return isinstance(raw, str) and len(raw) < 100_000 and not _OPAQUE.search(raw)


def _display_text(data: dict[str, Any], metadata: Any = None) -> str:
    # The notebook reader and the context's limits import the event types (~15 ms): not at the load.
    from jupyter_ai_ci.context.build import CELL_OUTPUT_CHARS
    from jupyter_ai_ci.notebook.reader import output_text

    # The metadata holds a figure's description (context/figurehook.py): the history says it too.
    shown = {"output_type": "display_data", "data": data, "metadata": metadata}
    return output_text([shown])[:CELL_OUTPUT_CHARS]


class KernelTracker:
    """Assignment order of names; the error each cell raised and what it displayed."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.tick = 0
        self._recency: dict[str, int] = {}
        self._read = 0  # the tick of the last settle (a read of ``recency``, or an opaque cell)
        # Cells run since then, (tick, source): parsed at the next settle, not as they run.
        self._unread: collections.deque[tuple[int, str]] = collections.deque(maxlen=MAX_UNREAD)
        # execution count -> (the cell's source, its error); the source guards
        # against counts restarting after %reset or a new history session.
        self.errors: dict[int, tuple[str, str]] = {}
        self.outputs: dict[int, tuple[int, str]] = {}  # Out[n] -> (id, description)
        # history number -> what its context record was made from, and the record (kernel_state)
        self.records: dict[int, tuple[Any, ...]] = {}
        # What a cell displayed (figures, display(df)): IPython keeps no record of it.
        self.displays: dict[int, tuple[str, list[str]]] = {}
        self._pending: list[str] = []
        self._ids = self._user_ids()

    def on_display(self, data: Any, metadata: Any = None) -> None:
        """Note what a cell shows (a figure, ``display(df)``): its text stand-in, never its bytes."""
        try:
            if len(self._pending) < 5 and isinstance(data, dict):
                self._pending.append(_display_text(data, metadata))
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

    def _user_ids(self) -> dict[str, int]:
        # IPython's _, _iN, _N grow with the history and are never described.
        return {name: id(value) for name, value in list(self.shell.user_ns.items()) if not name.startswith("_")}

    @property
    def recency(self) -> dict[str, int]:
        """Name -> tick of the last cell that bound it (higher is newer), for the names the
        namespace holds.  A cell's own code says what it binds (the cells run since the last
        read are parsed now).  A name bound where no cell's code shows it (a function setting a
        ``global``, a cell older than the ``MAX_UNREAD`` kept) is found by its new object and
        dated to the first cell since the last read: newer than what came before, older than
        what the cells since say they bound.  Doing this once per request, not once per cell,
        keeps a cell cheap, even in a kernel with a long history (IPython keeps two names per
        cell in the namespace)."""
        self._settle()
        return self._recency

    def _settle(self, unexplained: int | None = None) -> None:
        """Date what the cells run since the last settle bound; ``unexplained``: the tick for a
        name whose object changed that no cell's code accounts for (by default the first cell
        since the last settle)."""
        unexplained = min(self._read + 1, self.tick) if unexplained is None else unexplained
        ns = self.shell.user_ns
        while self._unread:
            tick, source = self._unread.popleft()
            for name in _bound_names(source):
                if name in ns and not name.startswith("_"):
                    self._recency[name] = tick
        ids = self._user_ids()
        for name, ident in ids.items():
            if self._ids.get(name) != ident and self._recency.get(name, 0) <= self._read:
                self._recency[name] = unexplained
        for name in [n for n in self._recency if n not in ids]:
            del self._recency[name]
        self._ids, self._read = ids, self.tick

    def pre_run_cell(self, info: Any) -> None:
        """Before a cell whose code does not show what it binds, date what the cells before it
        bound, so that what changes next is the cell's own."""
        if not _readable(getattr(info, "raw_cell", None)):
            self._settle()

    def post_run_cell(self, result: Any) -> None:
        self.tick += 1
        info = getattr(result, "info", None)
        raw = getattr(info, "raw_cell", None)
        if _readable(raw):
            self._unread.append((self.tick, raw))
        else:  # what it bound is dated to it now, while that is still known
            self._settle(self.tick)
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
            tracker.on_display(data if data is not None else kwargs.get("data"), metadata)
        return original(data, *args, **kwargs)

    publish.__wrapped__ = original  # type: ignore[attr-defined]
    pub.publish = publish


def tracker_for(shell: Any) -> KernelTracker:
    """The shell's tracker, created and hooked up on first use."""
    tracker = _trackers.get(shell)
    if tracker is None:
        tracker = _trackers[shell] = KernelTracker(shell)
        shell.events.register("pre_run_cell", tracker.pre_run_cell)
        shell.events.register("post_run_cell", tracker.post_run_cell)
        _watch_displays(shell, tracker)
        figurehook.watch(shell)  # figures' outputs say what they show (issue #40)
    return tracker


def forget(shell: Any) -> None:
    """Stop tracking ``shell``: unhook the cell hook and the display publisher."""
    tracker = _trackers.pop(shell, None)
    if tracker is not None:
        figurehook.unwatch(shell)
        for event, callback in (("pre_run_cell", tracker.pre_run_cell), ("post_run_cell", tracker.post_run_cell)):
            try:
                shell.events.unregister(event, callback)
            except (ValueError, KeyError):
                pass
        pub = getattr(shell, "display_pub", None)
        original = getattr(getattr(pub, "publish", None), "__wrapped__", None)
        if original is not None:
            pub.publish = original  # type: ignore[union-attr]
