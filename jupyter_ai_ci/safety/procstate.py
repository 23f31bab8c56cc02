"""The process's part of a transaction: ``os.environ``, ``sys.path``, and module attributes.

A failed attempt that sets an environment variable, puts a folder on ``sys.path`` or
monkeypatches ``pd.read_csv`` (or ``builtins.sum``) changes what every later cell sees, as much
as a variable does; a candidate that does it makes the next one agree on state it did not make.

``take`` remembers, by reference (cheap: a few hundred pointers), the environment, ``sys.path``,
``builtins`` and the attributes of every module the code names (``pd.x = …`` with ``pd`` bound to
pandas, ``import os; os.environ…``, ``setattr(np, …)``).  ``diff`` is what changed since, each as
a (before, after) pair; ``restore`` puts the before back where the value is still the after (a
held fix rejected later, an undo: a change the person made since is theirs to keep, and said).
"""

from __future__ import annotations

import builtins
import os
# Bound here, once: code in the kernel that patches ``builtins.sorted`` cannot change what we read.
from builtins import all, delattr, dict, isinstance, len, list, set, setattr, sorted, type, vars  # noqa: UP029
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from jupyter_ai_ci.safety import globalstate

_ABSENT: Any = object()
# builtins that IPython itself puts in and takes out around every cell (its BuiltinTrap), and
# the last result: never ours to restore.
_IPYTHON_BUILTINS = frozenset({"exit", "quit", "get_ipython", "_", "__IPYTHON__", "display", "dreload"})
# Modules whose attributes the interpreter and the kernel change by themselves (streams, hooks).
_VOLATILE_MODULES = frozenset({"sys", "__main__", "builtins"})
# Our own hold on the builtins' dict: code that rebinds ``builtins.vars`` cannot hide a patch.
_BUILTINS: dict[str, Any] = builtins.__dict__


@dataclass
class ProcessState:
    """What the process looked like when an attempt began (references, not copies)."""

    environ: dict[str, str]
    path: list[Any]
    attrs: dict[str, tuple[ModuleType, dict[str, Any]]]  # "pandas" -> (module, its dict then)
    states: dict[str, Any]  # what libraries keep for the whole process (globalstate.py), by label


@dataclass
class Change:
    """One thing the attempt changed: ``label`` as the person reads it, and how to put it back."""

    label: str  # "os.environ['UNDO_T']", "sys.path", "builtins.sum"
    kind: str  # "env", "path", "attr", "state"
    key: str  # the variable, or the attribute's name
    before: Any
    after: Any
    module: ModuleType | None = None
    holder: globalstate.Holder | None = None


@dataclass
class Restored:
    restored: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # "label (changed since; not restored)"


def named_modules(names: Iterable[str], ns: Mapping[str, Any]) -> dict[str, ModuleType]:
    """The modules the code names: a name bound to a module in the namespace, or a module's
    own name once imported.  ``builtins`` always: ``sum = …`` in a cell binds a variable, but
    ``builtins.sum = …`` or ``__builtins__.sum = …`` changes every cell's ``sum``."""
    found: dict[str, ModuleType] = {"builtins": builtins}
    for name in names:
        value = ns.get(name, _ABSENT)
        module = value if isinstance(value, ModuleType) else sys.modules.get(name)
        if isinstance(module, ModuleType) and module.__name__ not in _VOLATILE_MODULES:
            found[module.__name__] = module
    return found


def take(modules: Mapping[str, ModuleType], code: str = "") -> ProcessState:
    attrs = {name: (m, dict(_BUILTINS if m is builtins else vars(m))) for name, m in modules.items()}
    return ProcessState(dict(os.environ), list(sys.path), attrs, globalstate.take(code))


def _skip(module: ModuleType, key: str) -> bool:
    if module is builtins:
        return key in _IPYTHON_BUILTINS
    return key.startswith("__")  # __warningregistry__, __loader__ …: the interpreter's


def diff(before: ProcessState) -> list[Change]:
    """What changed since ``before``, in the order a person reads it."""
    changes: list[Change] = []
    env = dict(os.environ)
    for key in sorted(set(before.environ) | set(env)) if env != before.environ else ():
        old, new = before.environ.get(key, _ABSENT), env.get(key, _ABSENT)
        if old != new:
            changes.append(Change(f"os.environ[{key!r}]", "env", key, old, new))
    if sys.path != before.path:
        changes.append(Change("sys.path", "path", "", before.path, list(sys.path)))
    for name, (module, then) in before.attrs.items():
        now = _BUILTINS if module is builtins else vars(module)
        if len(now) == len(then) and all(now.get(k, _ABSENT) is v for k, v in then.items()):
            continue  # the common case, decided in one pass
        for key in sorted(set(then) | set(now)):
            old, new = then.get(key, _ABSENT), now.get(key, _ABSENT)
            if old is not new and not _skip(module, key):
                changes.append(Change(f"{name}.{key}", "attr", key, old, new, module))
    for holder, old, new in globalstate.changed(before.states):
        changes.append(Change(holder.label, "state", holder.label, old, new, holder=holder))
    return changes


def _current(change: Change) -> Any:
    if change.kind == "env":
        return os.environ.get(change.key, _ABSENT)
    if change.kind == "path":
        return list(sys.path)
    if change.holder is not None:
        module = sys.modules.get(change.holder.module)
        return change.holder.get(module) if module is not None else _ABSENT
    assert change.module is not None
    space = _BUILTINS if change.module is builtins else vars(change.module)
    return space.get(change.key, _ABSENT)


def _same(change: Change, now: Any) -> bool:
    if change.holder is not None:
        return now is not _ABSENT and change.holder.same(now, change.after)
    return bool(now == change.after) if change.kind in ("env", "path") else now is change.after


def restore(changes: Iterable[Change]) -> Restored:
    """Put each change's ``before`` back where the value is still its ``after``."""
    out = Restored()
    for change in changes:
        if not _same(change, _current(change)):
            out.kept.append(f"{change.label} (changed since; not restored)")
            continue
        try:
            _put(change)
        except Exception as exc:  # noqa: BLE001 -- a read-only attribute, a module that refuses
            out.kept.append(f"{change.label} ({type(exc).__name__})")
            continue
        out.restored.append(change.label)
    return out


def _put(change: Change) -> None:
    old = change.before
    if change.kind == "env":
        if old is _ABSENT:
            os.environ.pop(change.key, None)  # unsetenv too: subprocesses see it gone
        else:
            os.environ[change.key] = old
    elif change.kind == "path":
        sys.path[:] = old  # the same list object: importlib's caches hold it
    elif change.holder is not None:
        globalstate.put(change.holder, old)
    else:
        assert change.module is not None
        space = _BUILTINS if change.module is builtins else change.module
        if old is _ABSENT:
            space.pop(change.key, None) if space is _BUILTINS else delattr(space, change.key)
        elif space is _BUILTINS:
            _BUILTINS[change.key] = old
        else:
            setattr(space, change.key, old)
