"""Transactional attempts: a failed attempt leaves the kernel, its process and its files as they were.

``may_change`` (maychange.py) reads the code and names the variables it may rebind or mutate.
``Transaction`` runs next to a namespace: ``begin`` remembers every binding (cheap: references),
the working directory, and copies the objects ``may_change`` named; it also remembers the
process (``procstate``: the environment, ``sys.path``, the attributes of ``builtins`` and of the
modules the code names) and starts recording the files the code changes in the working folder
(``filejournal``).  ``rollback`` puts all of it back and drops names the attempt created.
Copies are as cheap as the type allows (``copies.py``).  What could not be copied is said,
never silently skipped.
"""

from __future__ import annotations

import copy
import itertools
import operator
import os
import re
import sys
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from jupyter_ai_ci.events import TransactionReport
from jupyter_ai_ci.safety import procstate
from jupyter_ai_ci.safety.copies import Saved, estimate_size, flat, is_ndarray, is_pandas, pandas_cow, restore_saved
from jupyter_ai_ci.safety.filejournal import Journal
from jupyter_ai_ci.safety.maychange import may_change
from jupyter_ai_ci.text import human_size

# Names IPython maintains itself (history: _, __, _i, _i7, _7, _oh …): never
# copied, and never dropped as "new" by a rollback.
IPYTHON_NAMES = frozenset({"In", "Out", "_oh", "_ih", "_dh"})
_HISTORY_NAME = re.compile(r"^(_+|_i+|_i?\d+)$")


def _ipython_name(name: str) -> bool:
    return name in IPYTHON_NAMES or bool(_HISTORY_NAME.match(name))


_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), frozenset, range)


@dataclass
class Transaction:
    """Snapshot and restore of one namespace around one attempt."""

    ns: MutableMapping[str, Any]
    max_bytes: int = 1 << 30
    bindings: dict[str, Any] = field(default_factory=dict)
    saved: dict[str, Saved] = field(default_factory=dict)
    _shared: dict[int, Any] = field(default_factory=dict)
    # A checkpoint is held: without one, a rollback would take every name for new and drop
    # it (a Reject after a kernel restart, or after the attempt was committed).
    open: bool = False
    changed: set[str] = field(default_factory=set)  # the names the attempt's code may change
    # A candidate or failed attempt that chdir'ed would leave the next one reading other files.
    cwd: str = ""
    moves: bool = False  # the code may change directory (a held fix rejected later goes back too)
    # The process (environment, sys.path, module attributes) and the files in the working folder:
    # what the attempt changes there is undone with its names (safety/procstate.py, filejournal.py).
    file_cap: int = 256 << 20
    process: procstate.ProcessState | None = None
    journal: Journal | None = None
    sealed: list[procstate.Change] | None = None  # what the attempt had changed when it ended
    _code: str = ""

    def _begin_outside(self) -> None:
        self.process = procstate.take(procstate.named_modules(self.changed, self.ns), self._code)
        if self.journal is not None:
            self.journal.discard()
        self.journal = Journal(tuple(dict.fromkeys(_roots(self.cwd))), self.file_cap)
        self.sealed = None
        self.journal.start()

    def seal(self) -> TransactionReport:
        """The attempt's code has ended but its fate is not decided (a candidate held for the
        vote, a tried fix offered): stop recording what changes -- the person's own cells run
        meanwhile are theirs -- and say what could not be undone."""
        if not self.open or self.journal is None or self.process is None:
            return TransactionReport(supported=self.open)
        self.journal.stop()
        self.journal.seal()
        if self.sealed is None:
            self.sealed = procstate.diff(self.process)
        return TransactionReport(not_saved=tuple(self.journal.notes))

    def begin(self, blocks: Iterable[str]) -> TransactionReport:
        self.bindings = dict(self.ns)
        self.saved.clear()
        self.open = True
        self.changed = may_change(blocks)
        self.cwd = current_dir()
        self.moves = any(_MOVES.search(code) for code in blocks)
        self._code = "\n".join(blocks)
        self._begin_outside()
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
        if is_pandas(obj) and pandas_cow():
            self.saved[name] = Saved(obj, obj.copy(deep=False), "pandas", estimate_size(obj, self.max_bytes))
            return None
        kind = next((k for t, k in ((list, "list"), (dict, "dict"), (set, "set"),
                                    (bytearray, "bytearray")) if type(obj) is t), "object")
        if kind != "object" and flat(obj):
            # Shallow copy: ~8 bytes per item, 100x faster than deepcopy on 10**6 ints.  The
            # cap holds for it too (it was copied whatever its size: found by a newcomer).
            if (size := sys.getsizeof(obj)) > self.max_bytes:
                return self._over(size)
            self.saved[name] = Saved(obj, obj.copy(), kind, size)
            return None
        size = estimate_size(obj, self.max_bytes)
        if size > self.max_bytes:
            return self._over(size)
        try:
            if is_ndarray(obj):
                self.saved[name] = Saved(obj, obj.copy(), "ndarray", size)
            elif is_pandas(obj):
                self.saved[name] = Saved(obj, obj.copy(deep=True), "pandas", size)
            else:
                memo = {k: v for k, v in self._shared.items() if k != id(obj)}
                self.saved[name] = Saved(obj, copy.deepcopy(obj, memo), kind, size)
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

        dropped = sorted(n for n in self.ns.keys() - self.bindings.keys() if not _ipython_name(n) and mine(n))
        for name in dropped:
            del self.ns[name]
        rebound = [n for n in _differ(self.bindings, self.ns) if mine(n)]
        for name in rebound:
            self.ns[name] = self.bindings[name]
        _, failed = restore_saved(self.saved, self.ns)
        restored = sorted(set(self.saved) | {n for n in rebound if not _ipython_name(n)})
        # A held fix rejected later (``only_changed``) goes back only if its own code moves:
        # a ``%cd`` the user ran since then stays.
        now = current_dir()
        if not self.cwd and now and self.moves:
            failed.append(f"the working directory (the attempt began in a deleted folder; it is now {now})")
        elif self.cwd and now != self.cwd and (not only_changed or self.moves):
            try:
                os.chdir(self.cwd)
                restored.append("the working directory")
            except OSError as exc:
                failed.append(f"the working directory ({type(exc).__name__}: {self.cwd} is gone)")
        outside, kept = self._rollback_outside()
        self.commit()
        return TransactionReport(restored=tuple(restored + outside), dropped=tuple(dropped),
                                 not_saved=tuple(failed + kept))

    def _rollback_outside(self) -> tuple[list[str], list[str]]:
        """The process and the files back as they were; (what was restored, what was not)."""
        if self.process is None or self.journal is None:
            return [], []
        self.journal.stop()
        changes = self.sealed if self.sealed is not None else procstate.diff(self.process)
        restored, kept, files = undo_outside(changes, self.journal, later=self.sealed is not None)
        return restored, kept + [f"not undone: {k}" for k in files]

    def handover(self) -> Kept | None:
        """Commit, and give what would undo the attempt to whoever keeps it (``%ask undo``):
        only what it changed -- the old values of the names it rebound or changed in place, the
        process's old values, the files' old contents -- never the rest of the namespace."""
        if not self.open or self.process is None or self.journal is None:
            self.commit()
            return None
        after = _MISSING
        created = {n: self.ns[n] for n in sorted(self.ns.keys() - self.bindings.keys())
                   if not _ipython_name(n) and not n.startswith("__")}
        # Not the interpreter's names either: a warning (even an ignored one) may rebind
        # __warningregistry__ in any later cell, and the undo took that for the person's change.
        rebound = {n: (self.bindings[n], self.ns.get(n, after)) for n in _differ(self.bindings, self.ns)
                   if not _ipython_name(n) and not n.startswith("__")}
        self.journal.stop()
        if self.sealed is None:
            self.journal.seal()
        process = self.sealed if self.sealed is not None else procstate.diff(self.process)
        now = current_dir()
        size = sum(s.size for s in self.saved.values()) + self.journal.bytes_kept + sum(
            estimate_size(old, self.max_bytes) for old, _ in rebound.values())
        kept = Kept(created, rebound, dict(self.saved), process, self.journal,
                    (self.cwd, now) if self.cwd and now != self.cwd else None, size)
        self.journal = None  # handed over: commit must not discard its copies
        self.commit()
        return kept

    def commit(self) -> None:
        # Holding copies past the attempt would make pandas copy on every later write.
        if self.journal is not None:
            self.journal.discard()
        self.journal = None
        self.process = None
        self.sealed = None
        self.open = False
        self.bindings = {}
        self.saved.clear()
        self._shared = {}


_MISSING: Any = object()


def _differ(before: dict[str, Any], ns: MutableMapping[str, Any]) -> Iterator[str]:
    """The names whose binding is not the object it was (deleted ones too).  Compared in C:
    IPython's history names (``_i7``, ``_7`` …) make a namespace grow with every cell run, and
    a loop in Python over them was a cost that grew with the notebook."""
    names = list(before)
    return itertools.compress(names, map(operator.is_not, before.values(), map(ns.get, names, repeat(_MISSING))))


@dataclass
class Kept:
    """What undoes one committed attempt, later (``undostack.py``)."""

    created: dict[str, Any]  # names it made -> what it left in them
    rebound: dict[str, tuple[Any, Any]]  # name -> (before, what it left; _MISSING: deleted)
    saved: dict[str, Saved]  # the objects it changed in place, with their copies from before
    process: list[procstate.Change]
    journal: Journal
    cwd: tuple[str, str] | None  # (before, after) when it moved
    size: int  # bytes held to undo it


# Code that may change the kernel's directory: os.chdir / fchdir, contextlib.chdir, %cd and its kin.
_MOVES = re.compile(r"chdir|^\s*%?(?:cd|pushd|popd)\b", re.MULTILINE)


def _roots(cwd: str) -> list[str]:
    """The folders whose files the attempt's changes are undone in: the kernel's working
    directory (the notebook's folder, where Jupyter starts the kernel)."""
    return [os.path.realpath(cwd)] if cwd else []


def undo_outside(changes: list[procstate.Change], journal: Journal,
                 later: bool) -> tuple[list[str], list[str], list[str]]:
    """The process's ``changes`` and ``journal``'s files put back; (restored, process state not
    restored, files not restored).  ``later``: only what is still as the attempt left it."""
    back = procstate.restore(changes)
    files, kept_files = journal.restore(later=later)
    return back.restored + files, back.kept, kept_files


def current_dir() -> str:
    try:
        return os.getcwd()
    except OSError:  # the directory the kernel stands in was deleted: nothing to go back to
        return ""
