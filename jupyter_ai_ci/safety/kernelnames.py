"""Names the kernel already binds to risky modules and functions, for the risk scan.

The scan reads the attempt's code alone.  A user's earlier cell can bind a name the model's code
then calls bare: ``from subprocess import run`` (or ``from os import *``, ``import shutil as
sh``, ``shell = get_ipython().system``) and then ``run('rm -rf data', shell=True)``, which the
code alone reads as a call of an unknown ``run``, flagged by nothing.  So the kernel names, once
per request and inside the kernel (context/snapshot.py), what each such name is: its module and
function as the risk table spells them.  The scan uses a name from here only when the code
itself does not bind it.

Only modules, functions, classes and methods are looked at (``isinstance`` on the value, never an
attribute of an arbitrary object), and only those from the modules the risk table has rules for.

Within one request of several steps the kernel is named before step 1 (the snapshot) and asked
again between the steps (context/stepnames.py); what a step's code binds is also read from the
code itself (``bound_by``), for a driver that cannot ask.
"""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Mapping, Sequence
from typing import Any

from jupyter_ai_ci.safety.astutil import BUILTIN_CALLABLES, in_kernel, scope_of
from jupyter_ai_ci.safety.risktable import HIDDEN, KERNEL_NAMED
from jupyter_ai_ci.safety.starimports import star_names

__all__ = ["MAX_BINDINGS", "bound_by", "risky_bindings"]

MAX_BINDINGS = 2000  # a `from os import *` binds ~300; past this, the rest is not worth a request's time
# What a function's ``__module__`` says, as the risk table spells it.
_SPELLED = {"posix": "os", "nt": "os", "builtins": ""}
# The shell's methods that run shell commands or code, as the risk table and safety/codestrings.py
# spell them (IPython binds ``system`` to ``system_piped`` or ``system_raw``, a test shell to
# ``xsys``: compared by value, the first that is equal naming it).
_IPYTHON_SHELL = ("system", "system_piped", "system_raw", "getoutput", "run_cell", "ex", "ev", "run_line_magic",
                  "run_cell_magic")
_CALLABLE = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.BuiltinMethodType, type)
# Where a function is imported from can differ from its ``__module__`` (asyncio's
# create_subprocess_shell lives in asyncio.subprocess, builtins' open in io): these modules'
# callables are named as the risk table spells them, by identity, the first module winning.
_BY_IDENTITY = ("builtins", "os", "subprocess", "shutil", "asyncio", "socket", "pty", "urllib.request",
                "http.client", "ctypes", "runpy", "importlib", "pickle", "marshal", "multiprocessing", "signal",
                "code", "sys", "requests", "httpx", "urllib3", "aiohttp", "ftplib", "smtplib", "paramiko", "dill")
# The objects are kept with their names: an id is only unique while its object lives.
_identity: tuple[tuple[bool, ...], dict[int, tuple[Any, str]]] = ((), {})


def _known_callables() -> dict[int, tuple[Any, str]]:
    """id -> dotted name for the callables of ``_BY_IDENTITY``'s loaded modules; rebuilt when one
    more of them is loaded.  Read from each module's ``vars`` (no attribute lookup, no lazy import)."""
    global _identity
    loaded = tuple(name in sys.modules for name in _BY_IDENTITY)
    if loaded == _identity[0]:
        return _identity[1]
    known: dict[int, tuple[Any, str]] = {}
    for name, present in zip(_BY_IDENTITY, loaded, strict=True):
        if not present:
            continue
        for attr, value in list(vars(sys.modules[name]).items()):
            if not attr.startswith("_") and isinstance(value, _CALLABLE) and id(value) not in known:
                known[id(value)] = (value, attr if name == "builtins" else f"{name}.{attr}")
    _identity = (loaded, known)
    return known


def _module_name(module: str) -> str:
    root, _, rest = module.partition(".")
    spelled = _SPELLED.get(root, root)
    return ".".join(p for p in (spelled, rest) if p)


def _target(value: Any, shell: Any, known: dict[int, tuple[Any, str]]) -> str | None:
    kind = type(value)  # never ``isinstance``: it reads ``__class__``, which a proxy may make raise
    if issubclass(kind, types.ModuleType):
        name = value.__name__
        return _module_name(name) if isinstance(name, str) and name.split(".")[0] in KERNEL_NAMED else None
    if not issubclass(kind, _CALLABLE):
        return None
    same = known.get(id(value))
    if same is not None and same[0] is value:
        return same[1]
    if shell is not None and getattr(value, "__self__", None) is shell:
        spelled = next((attr for attr in _IPYTHON_SHELL if value == getattr(shell, attr, None)), None)
        return f"get_ipython().{spelled}" if spelled else None
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or module.split(".")[0] not in KERNEL_NAMED:
        return None
    return ".".join(p for p in (_module_name(module), qualname) if p)


def risky_bindings(ns: Mapping[str, Any], shell: Any = None) -> tuple[tuple[str, str], ...]:
    """``(name, dotted target)`` for each name in ``ns`` bound to something the risk table knows,
    when the name alone does not say it (``run`` for ``subprocess.run``; not ``os`` for ``os``)."""
    found: list[tuple[str, str]] = []
    known = _known_callables()
    for name, value in list(ns.items()):
        if not isinstance(name, str) or name.startswith("_") or len(found) >= MAX_BINDINGS:
            continue
        try:
            target = _target(value, shell, known)
        except Exception:  # noqa: BLE001 -- an object that fails to be looked at is not a risky binding
            continue
        if target and target != name:
            found.append((name, target))
    return tuple(found)


def _risky(target: str) -> bool:
    return target.split(".")[0] in KERNEL_NAMED or target in BUILTIN_CALLABLES or target.startswith("get_ipython()")


def bound_by(trees: Sequence[ast.Module], bindings: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """``bindings`` and the risky names code that ran left bound, as ``risky_bindings`` would
    name them from the kernel afterwards: its imports, aliases (``sh = os.system``) and star
    imports.  A name the code binds to something else keeps its old meaning: a superset, as the
    scan is (a false alarm asks, a miss runs)."""
    found = dict(bindings)
    scope = scope_of(trees, bindings=bindings)
    for name, target in scope.aliases.items():
        target = in_kernel(target, found.get)  # r = globals()['run']: what the kernel's run is
        if name != target and _risky(target):
            found[name] = target
    for module in scope.stars:
        if module.split(".")[0] in HIDDEN:
            found.update((name, f"{module}.{name}") for name in sorted(star_names(module) or ()))
    # At the cap the kernel's older names go first: this step's are the ones the next step calls.
    return tuple(found.items())[-MAX_BINDINGS:]
