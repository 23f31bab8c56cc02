"""Transactional attempts: a failed attempt leaves the namespace as it was.

Two halves.  ``may_change`` reads the code (AST only) and names the
variables it may rebind or mutate.  ``Transaction`` runs next to a namespace:
``begin`` remembers every binding (cheap: references), the working directory, and copies the
objects ``may_change`` named; ``rollback`` puts bindings, contents and the working directory
back and drops names the attempt created.  Copies are as cheap as the type allows: pandas
objects under copy-on-write are shallow copies that pandas itself protects;
numpy arrays are copied; anything else is deep-copied, up to a size cap.
What could not be copied is said, never silently skipped.
"""

from __future__ import annotations

import ast
import copy
import os
import re
import sys
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from jupyter_ai_ci.events import TransactionReport
from jupyter_ai_ci.safety.astutil import parse_cell, root_name
from jupyter_ai_ci.text import human_size

# Method names that change their receiver in place.  A call of one of these on
# a variable (``df.drop(..., inplace=True)`` is caught by the keyword) marks
# the variable as changed.
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "remove", "pop", "popitem", "clear", "sort", "reverse",
    "update", "add", "discard", "difference_update", "intersection_update",
    "symmetric_difference_update", "setdefault", "fill", "resize", "put", "itemset",
    "setflags", "partition", "__setitem__", "__delitem__", "__iadd__", "__imul__",
    "fit", "partial_fit", "fit_transform", "set_params", "load_state_dict",
})
# Functions that only read their arguments: passing a variable to one of them
# does not mark it.  Any other call with a variable as argument does (a
# ``random.shuffle(x)`` or ``np.copyto(a, b)`` mutates its argument).
READING_FUNCTIONS = frozenset({
    "print", "len", "repr", "str", "int", "float", "bool", "list", "tuple", "dict", "set",
    "frozenset", "sorted", "sum", "min", "max", "abs", "round", "any", "all", "type",
    "isinstance", "issubclass", "hasattr", "getattr", "id", "hash", "format", "range",
    "enumerate", "zip", "reversed", "display", "iter", "next", "map", "filter", "divmod",
})
# Libraries whose functions read their arguments, except the listed mutators;
# ``np.mean(a)`` need not copy ``a``.
READING_LIBRARIES = frozenset({"np", "numpy", "pd", "pandas", "plt", "matplotlib", "sns",
                               "seaborn", "math", "statistics", "json", "px"})
LIBRARY_MUTATORS = frozenset({"copyto", "shuffle", "put", "place", "putmask", "fill_diagonal"})
# Names IPython maintains itself (history: _, __, _i, _i7, _7, _oh …): never
# copied, and never dropped as "new" by a rollback.
IPYTHON_NAMES = frozenset({"In", "Out", "_oh", "_ih", "_dh"})
_HISTORY_NAME = re.compile(r"^(_+|_i+|_i?\d+)$")


def _ipython_name(name: str) -> bool:
    return name in IPYTHON_NAMES or bool(_HISTORY_NAME.match(name))
_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), frozenset, range)


def may_change(blocks: Iterable[str]) -> set[str]:
    """Variables the code may rebind, delete or mutate (a superset, by design)."""
    names: set[str] = set()
    for code in blocks:
        try:
            tree = parse_cell(code)
        except SyntaxError:
            continue
        names |= _scan(tree, "global" in code)
    return names


def _scan(tree: ast.Module, has_global: bool = True) -> set[str]:
    names: set[str] = set()
    declared_global: set[str] = set()
    for node in ast.walk(tree) if has_global else ():  # a walk of its own: skipped when it cannot find any
        if isinstance(node, ast.Global):
            declared_global.update(node.names)

    # Depth first with a stack, not recursion through ast.iter_child_nodes: a dozen lines of
    # generated code are ~150 nodes, and this scan runs at every checkpoint.
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_function = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not in_function:
                names.add(node.name)
            in_function = True  # names bound in a body are the body's own
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            in_function = True
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if not in_function or node.id in declared_global:
                names.add(node.id)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            _add(names, root_name(node))
        elif isinstance(node, ast.AugAssign):
            _add(names, root_name(node.target))
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and not in_function:
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.Call):
            _call(node, names)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST) and not isinstance(value, _LEAVES):
                stack.append((value, in_function))
            elif isinstance(value, list):
                stack.extend((item, in_function) for item in value
                             if isinstance(item, ast.AST) and not isinstance(item, _LEAVES))
    return names


# Nodes with nothing below them and nothing to find: Load/Store, operators.
_LEAVES = (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)


def _add(names: set[str], name: str | None) -> None:
    if name:
        names.add(name)


def _call(node: ast.Call, names: set[str]) -> None:
    func = node.func
    if isinstance(func, ast.Attribute):
        inplace = any(k.arg == "inplace" and not (isinstance(k.value, ast.Constant) and not k.value.value)
                      for k in node.keywords)
        if func.attr in MUTATING_METHODS or inplace:
            _add(names, root_name(func.value))
    reading = isinstance(func, ast.Name) and func.id in READING_FUNCTIONS or (
        isinstance(func, ast.Attribute) and root_name(func) in READING_LIBRARIES
        and func.attr not in LIBRARY_MUTATORS)
    if not reading:
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if isinstance(arg, (ast.Name, ast.Starred, ast.Attribute, ast.Subscript)):
                _add(names, root_name(arg))


# ---- snapshots --------------------------------------------------------------


def _pandas_cow() -> bool:
    pd = sys.modules.get("pandas")
    if pd is None:
        return False
    if int(pd.__version__.split(".")[0]) >= 3:
        return True  # copy-on-write is always on from pandas 3
    return bool(pd.options.mode.copy_on_write is True)


def _is_pandas(obj: Any) -> bool:
    module = type(obj).__module__  # "pandas" for public classes from pandas 3 on
    return (module == "pandas" or module.startswith("pandas.")) and hasattr(obj, "_update_inplace")


_ATOMS = frozenset({int, float, complex, str, bytes, bool, type(None)})


def _flat(obj: Any) -> bool:
    """A list/dict/set of plain values: a shallow copy is a full snapshot."""
    items = obj.values() if isinstance(obj, dict) else obj
    # The items' types walked in C (stops at the first other type): half the time of a
    # generator, which was 30 of the 45 ms a 1M-item list's snapshot took.
    return _ATOMS.issuperset(map(type, items))


def _is_ndarray(obj: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, np.ndarray)


def estimate_size(obj: Any, cap: int) -> int:
    """Bytes an eager copy of ``obj`` would take, roughly; stops counting past ``cap``."""
    if _is_ndarray(obj):
        return int(obj.nbytes)
    if _is_pandas(obj):
        return int(obj.memory_usage(deep=False).sum()) if hasattr(obj.memory_usage(), "sum") else 0
    total = 0
    seen: set[int] = set()
    stack = [obj]
    while stack and total <= cap:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        try:
            total += sys.getsizeof(item)
        except TypeError:
            total += 64
        if _is_ndarray(item):
            total += int(item.nbytes)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif hasattr(item, "__dict__") and not isinstance(item, type):
            stack.append(vars(item))
    return total


@dataclass
class _Saved:
    original: Any
    copy: Any
    how: str  # "pandas", "ndarray", "list", "dict", "set", "bytearray", "object", "rebind"


@dataclass
class Transaction:
    """Snapshot and restore of one namespace around one attempt."""

    ns: MutableMapping[str, Any]
    max_bytes: int = 1 << 30
    bindings: dict[str, Any] = field(default_factory=dict)
    saved: dict[str, _Saved] = field(default_factory=dict)
    _shared: dict[int, Any] = field(default_factory=dict)
    # A checkpoint is held: without one, a rollback would take every name for new and drop
    # it (a Reject after a kernel restart, or after the attempt was committed).
    open: bool = False
    changed: set[str] = field(default_factory=set)  # the names the attempt's code may change
    # A candidate or failed attempt that chdir'ed would leave the next one reading other files.
    cwd: str = ""
    moves: bool = False  # the code may change directory (a held fix rejected later goes back too)

    def begin(self, blocks: Iterable[str]) -> TransactionReport:
        self.bindings = dict(self.ns)
        self.saved.clear()
        self.open = True
        self.changed = may_change(blocks)
        self.cwd = _cwd()
        self.moves = any(_MOVES.search(code) for code in blocks)
        not_saved: list[str] = []
        chosen = {name: self.ns[name] for name in sorted(self.changed)
                  if name in self.ns and not _ipython_name(name) and not name.startswith("__")}
        # Objects snapshotted on their own stay shared inside other copies:
        # after a restore, ``rows[0] is df`` holds as it did before.
        self._shared = {id(obj): obj for obj in chosen.values()}
        for name, obj in chosen.items():
            if isinstance(obj, (*_IMMUTABLE, type)) or (callable(obj) and not hasattr(obj, "__dict__")):
                continue  # rebinding is all that can happen; bindings cover it
            why = self._save(name, obj)
            if why:
                not_saved.append(f"{name} ({why})")
        return TransactionReport(saved=tuple(self.saved), not_saved=tuple(not_saved))

    def _save(self, name: str, obj: Any) -> str | None:
        if type(obj).__name__ == "module":
            return None
        if _is_pandas(obj) and _pandas_cow():
            self.saved[name] = _Saved(obj, obj.copy(deep=False), "pandas")
            return None
        kind = next((k for t, k in ((list, "list"), (dict, "dict"), (set, "set"),
                                    (bytearray, "bytearray")) if type(obj) is t), "object")
        if kind != "object" and _flat(obj):
            # Shallow copy: ~8 bytes per item, 100x faster than deepcopy on 10**6 ints.  The
            # cap holds for it too (it was copied whatever its size: found by a newcomer).
            if (size := sys.getsizeof(obj)) > self.max_bytes:
                return self._over(size)
            self.saved[name] = _Saved(obj, obj.copy(), kind)
            return None
        size = estimate_size(obj, self.max_bytes)
        if size > self.max_bytes:
            return self._over(size)
        try:
            if _is_ndarray(obj):
                self.saved[name] = _Saved(obj, obj.copy(), "ndarray")
            elif _is_pandas(obj):
                self.saved[name] = _Saved(obj, obj.copy(deep=True), "pandas")
            else:
                memo = {k: v for k, v in self._shared.items() if k != id(obj)}
                self.saved[name] = _Saved(obj, copy.deepcopy(obj, memo), kind)
        except Exception as exc:  # noqa: BLE001 -- uncopyable: files, sockets, locks, connections
            return f"cannot be copied: {type(exc).__name__}: {str(exc)[:80]}"
        return None

    def _over(self, size: int) -> str:
        # In bytes that mean something: "about 0 MB, over the 0 MB snapshot cap" for 800 kB and 1 kB.
        return f"about {human_size(size)}, over the {human_size(self.max_bytes)} snapshot cap"

    def rollback(self, only_changed: bool = False) -> TransactionReport:
        """Put the namespace back as it was at ``begin``.  ``only_changed``: only the names the
        attempt's code may change (a held fix rejected later: cells the user ran since then
        keep what they did).  Nothing without a checkpoint."""
        if not self.open:
            return TransactionReport(supported=False)

        def mine(name: str) -> bool:
            return not only_changed or name in self.changed

        dropped = sorted(n for n in list(self.ns) if n not in self.bindings and not _ipython_name(n) and mine(n))
        for name in dropped:
            del self.ns[name]
        rebound = [n for n, v in self.bindings.items() if self.ns.get(n, _MISSING) is not v and mine(n)]
        for name in rebound:
            self.ns[name] = self.bindings[name]
        failed: list[str] = []
        for name, s in self.saved.items():
            try:
                _restore(s)
            except Exception as exc:  # noqa: BLE001 -- fall back to the copy itself: the name is right, aliases are not
                self.ns[name] = s.copy
                failed.append(f"{name} (restored as a copy: {type(exc).__name__})")
        restored = sorted(set(self.saved) | {n for n in rebound if not _ipython_name(n)})
        # A held fix rejected later (``only_changed``) goes back only if its own code moves:
        # a ``%cd`` the user ran since then stays.
        now = _cwd()
        if not self.cwd and now and self.moves:
            failed.append(f"the working directory (the attempt began in a deleted folder; it is now {now})")
        elif self.cwd and now != self.cwd and (not only_changed or self.moves):
            try:
                os.chdir(self.cwd)
                restored.append("the working directory")
            except OSError as exc:
                failed.append(f"the working directory ({type(exc).__name__}: {self.cwd} is gone)")
        self.commit()
        return TransactionReport(restored=tuple(restored), dropped=tuple(dropped), not_saved=tuple(failed))

    def commit(self) -> None:
        # Holding copies past the attempt would make pandas copy on every later write.
        self.open = False
        self.bindings = {}
        self.saved.clear()
        self._shared = {}


_MISSING = object()


# Code that may change the kernel's directory: os.chdir / fchdir, contextlib.chdir, %cd and its kin.
_MOVES = re.compile(r"chdir|^\s*%?(?:cd|pushd|popd)\b", re.MULTILINE)


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # the directory the kernel stands in was deleted: nothing to go back to
        return ""


def _restore(s: _Saved) -> None:
    """Put the copy's contents back into the original object, so other
    references to it (aliases, containers) see the restored value too."""
    o, c = s.original, s.copy
    if s.how == "pandas":
        o._update_inplace(c.copy(deep=False))
    elif s.how == "ndarray":
        if o.shape != c.shape or o.dtype != c.dtype:
            raise ValueError("shape changed")
        o[...] = c
    elif s.how in ("list", "bytearray"):
        o[:] = c
    elif s.how in ("dict", "set"):
        o.clear()
        o.update(c)
    elif hasattr(o, "__dict__") and not hasattr(type(o), "__slots__"):
        vars(o).clear()
        vars(o).update(vars(c))
    else:
        raise TypeError("no in-place restore")
