"""Parsing generated code the way IPython will run it, and naming what it calls.

Shared by the policy scan and the transaction's "what may this change" scan.
Code goes through IPython's own input transformer first, so ``!rm x`` and
``%system`` are seen as the ``get_ipython().system(...)`` calls they become,
instead of being syntax errors.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from jupyter_ai_ci.safety.rebinding import rebound_first, single_bindings
from jupyter_ai_ci.safety.risktable import HIDDEN
from jupyter_ai_ci.safety.starimports import star_imports


@lru_cache(maxsize=1)
def _transformer() -> object:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager()  # type: ignore[no-untyped-call]


# What IPython's transformer acts on: magics, shell escapes and help (``%``, ``!``, ``?``
# anywhere), autocall escapes and pasted prompts at a line's start (``/ , ; >>> ... In [``), and
# leading blank lines or indentation (tested apart).  Broader than IPython's own tests, so code
# without any of it comes out unchanged and skips the transformer (~30 µs, most of a parse).
_IPYTHON_SYNTAX = re.compile(r"[%!?]|^[ \t]*(?:[/;,>\[.]|In\b)", re.MULTILINE)


def transform(code: str) -> str:
    """IPython syntax (magics, ``!`` escapes, ``?`` help) turned into Python."""
    if not code[:1].isspace() and _IPYTHON_SYNTAX.search(code) is None:
        return code
    try:
        return str(_transformer().transform_cell(code))  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 -- a transformer bug must not hide the code; parse it raw
        return code


@lru_cache(maxsize=16)
def parse_cell(code: str) -> ast.Module:
    """Parse like a notebook cell; raises SyntaxError as IPython would.

    Top-level ``await`` is valid in a cell, so it is allowed here too.  An attempt's
    blocks are read three times (syntax check and risk scan in the loop, then the
    checkpoint's may-change scan in the executor, which gets the code, not the
    tree), so the last few trees are kept and parsed once.  They are shared: read
    them, never change them.
    """
    tree = compile(transform(code), "<cell>", "exec",
                   flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    assert isinstance(tree, ast.Module)
    return tree


def imported_aliases(nodes: Iterable[ast.AST]) -> dict[str, str]:
    """Local name -> dotted origin: ``import numpy as np`` gives ``np -> numpy``."""
    aliases: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if a.name != "*":
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


# Calls that name a module or attribute by a string: resolved when the string is a literal,
# so ``importlib.import_module('os').system`` reads as ``os.system`` and is judged like it.
IMPORTERS = ("importlib.import_module", "__import__", "importlib.__import__",
             "pydoc.locate", "pkgutil.resolve_name")  # these two: any object, by its dotted name
# Lookups in these by a literal key are the name itself: ``__builtins__['exec']`` is ``exec``.
_NAMESPACES = ("builtins", "__builtins__", "sys.modules")
# Methods of the kernel's namespace (``globals()``) that return the value under a key.
NAMESPACE_LOOKUPS = ("__main__.get", "__main__.pop", "__main__.setdefault", "__main__.__getitem__")
LOOKUP_METHODS = frozenset(name.split(".")[1] for name in NAMESPACE_LOOKUPS)  # get, pop, ...
# What ``get_ipython`` is called by: the builtin, or imported from IPython (generated code often does).
GET_IPYTHON = frozenset({"get_ipython", "IPython.get_ipython", "IPython.core.getipython.get_ipython"})


def dotted(node: ast.AST, aliases: dict[str, str] | None = None) -> str | None:
    """``os.path.join`` for an attribute chain; ``get_ipython().system`` for a call on
    ``get_ipython()``; ``os.system`` for ``getattr(os, 'system')``,
    ``importlib.import_module('os').system``, ``sys.modules['os'].system``, ``vars(os)['system']``
    or ``operator.attrgetter('system')(os)``; ``os.__dict__`` for ``vars(os)``; None for anything
    else (other subscripts, calls on other results)."""
    aliases = aliases or {}
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.NamedExpr):  # (run := run)(...): the value is what is called
        return dotted(node.value, aliases)
    if isinstance(node, ast.Attribute):
        base = dotted(node.value, aliases)
        if (base, node.attr) in (("get_ipython()", "user_ns"), ("__main__", "__dict__")):
            return "__main__"  # the kernel's namespace by another way than globals()
        return None if base is None else _plain(f"{base}.{node.attr}")
    if isinstance(node, ast.Subscript):
        key = literal_str(node.slice)
        base = dotted(node.value, aliases)
        if key is not None and base == "__main__":  # globals()['run']: the kernel's own run
            return f"__main__.{key}"
        if key is not None and base is not None and base.endswith(".__dict__"):  # vars(os)['system']
            return _plain(f"{base[:-len('.__dict__')]}.{key}")
        return key if key is not None and base in _NAMESPACES else None
    if isinstance(node, ast.Call):
        func = dotted(node.func, aliases)
        first = literal_str(node.args[0]) if node.args else None
        if func in GET_IPYTHON and not node.args:
            return "get_ipython()"
        if func in ("globals", "vars", "locals") and not node.args:
            return "__main__"  # the namespace the kernel's names live in (a cell's top level)
        if func in NAMESPACE_LOOKUPS and first:  # globals().get('run')
            return f"__main__.{first}"
        if func == "vars" and len(node.args) == 1:  # vars(os): os.__dict__, as a namespace of names
            base = dotted(node.args[0], aliases)
            return None if base is None else "__main__" if base == "__main__" else f"{base}.__dict__"
        owner, _, method = (func or "").rpartition(".")
        if first and method in LOOKUP_METHODS and owner.endswith(".__dict__"):  # os.__dict__.get('system')
            return _plain(f"{owner[:-len('.__dict__')]}.{first}")
        if func in IMPORTERS and first:  # __import__ returns the top; resolve_name takes 'subprocess:run' too
            return first.split(".")[0] if func.endswith("__import__") else first.replace(":", ".")
        attr = literal_str(node.args[1]) if len(node.args) > 1 else None
        if func == "getattr" and attr:
            base = dotted(node.args[0], aliases)
            return None if base is None else _plain(f"{base}.{attr}")
        if isinstance(node.func, ast.Call) and len(node.args) == 1 and len(node.func.args) == 1:
            # operator.attrgetter('system')(os) is os.system, as getattr(os, 'system') is.
            name, base = literal_str(node.func.args[0]), dotted(node.args[0], aliases)
            if name and base is not None and dotted(node.func.func, aliases) == "operator.attrgetter":
                return _plain(f"{base}.{name}")
    return None


def in_kernel(name: str, meaning: Callable[[str], str | None]) -> str:
    """``__main__.run.x`` (the kernel's ``run``, reached through its namespace) as what ``run``
    means there (``meaning``: a name's dotted target, or None), ``.x`` kept; other names as they are."""
    if not name.startswith("__main__."):
        return name
    head, _, rest = name[len("__main__."):].partition(".")
    return ".".join(p for p in (meaning(head) or head, rest) if p)


def resolved(node: ast.AST, scope: Scope) -> str | None:
    """``dotted`` in a request's scope, the kernel's names reached through its namespace read as
    what they are there (``globals()['run']`` -> ``subprocess.run``)."""
    name = dotted(node, scope.aliases)
    return None if name is None else in_kernel(name, lambda head: scope.kernel.get(head) or scope.aliases.get(head))


def _plain(name: str) -> str:
    """``builtins.exec`` is the builtin ``exec``, ``posix.system`` is ``os.system``: one name for the
    scan's patterns to match."""
    for prefix in ("builtins.", "__builtins__."):
        if name.startswith(prefix) and ".__dict__" not in name:  # the namespace, not a builtin
            return name[len(prefix):]
    if name.startswith(("posix.", "nt.")):  # what os imports its functions from
        return "os." + name.partition(".")[2]
    return name


def root_name(node: ast.AST) -> str | None:
    """The variable at the bottom of ``df.loc[0, 'x']`` or ``a.b.append``: ``df``, ``a``."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def literal_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


@dataclass(frozen=True)
class Scope:
    """What the names in a request's code stand for, as far as reading it tells."""
    aliases: dict[str, str]  # name -> dotted origin: imports, and names bound once to a module or function
    values: dict[str, ast.expr]  # names bound exactly once -> the expression bound
    # Every node of the blocks, each block walked in turn.  The scans read this instead of
    # walking the trees again: a walk costs more than most of the checks made on its nodes.
    nodes: tuple[ast.AST, ...] = ()
    # Modules star-imported (``from shutil import *``) whose names the scan could not read.
    unread_stars: tuple[str, ...] = ()
    stars: tuple[str, ...] = ()  # every star-imported module
    moved: str = ""  # the working directory, from the notebook's folder (policy.PolicySettings.moved)
    # What the kernel's own names stand for (safety/kernelnames.py): ``globals()['run']``,
    # ``from __main__ import run`` and ``__main__.run`` reach them by another way than the name.
    kernel: dict[str, str] = field(default_factory=dict)
    # The kernel's names the code reads that the reading above gave another meaning (``run(...)``
    # then ``import json as run`` further down): the scan reads the code again with the kernel's.
    overridden: dict[str, str] = field(default_factory=dict)
    folders: tuple[str, str] | None = None  # policy.PolicySettings.folders: where links are looked up


# Names a builtin function keeps when it is assigned to another name (``e = eval``).
BUILTIN_CALLABLES = frozenset({"eval", "exec", "compile", "open", "__import__", "getattr", "setattr",
                                "exit", "quit", "get_ipython()"})


_CONVENTIONAL = {"pd": "pandas", "np": "numpy", "plt": "matplotlib.pyplot"}


def scope_of(trees: Sequence[ast.Module], moved: str = "",
             bindings: Sequence[tuple[str, str]] = ()) -> Scope:
    """One scope for all of an attempt's blocks: they run one after another in one namespace.
    ``bindings``: what names the kernel already holds stand for (safety/kernelnames.py)."""
    nodes = tuple(node for tree in trees for node in walk(tree))
    aliases = imported_aliases(nodes)  # in block order: a later block's import wins, as when run
    values = single_bindings(nodes)
    # Generated code often uses the kernel's own ``pd``/``np``/``plt`` without importing them.
    names = [n for n in nodes if isinstance(n, ast.Name)]
    bound = {n.id for n in names if not isinstance(n.ctx, ast.Load)}
    loaded = {n.id for n in names if isinstance(n.ctx, ast.Load)}
    used = loaded - bound
    # The kernel's names the code reads and does not surely rebind first (``run`` from a user's
    # ``from subprocess import run``).  They win over convention: ``pd`` bound to ``os`` is ``os``.
    kernel = {name: origin for name, origin in bindings if name in loaded and not rebound_first(trees, name)}
    for name, origin in kernel.items():
        if name not in aliases:
            aliases[name] = origin
    for name, origin in _CONVENTIONAL.items():
        if name in used and name not in aliases:
            aliases[name] = origin
    stars, unread = star_imports(nodes, aliases, used)
    # A name bound once to a module or a risky function is an alias for it: ``sh = os.system``,
    # ``m = importlib.import_module('os')``.  Repeat so aliases of aliases resolve in any order.
    for _ in range(3):
        # (``__main__``: ``f = globals()['run']`` is the kernel's ``run``; the risky modules: the
        # kernel's own ``os``, which the code may use without importing it.)
        modules = {v.split(".")[0] for v in aliases.values()} | BUILTIN_CALLABLES | {"__main__"} | HIDDEN
        for name, value in values.items():
            target = dotted(value, aliases)
            if target and (isinstance(value, ast.Call) or target.split(".")[0] in modules):
                aliases[name] = target
    # Those the code gave another meaning anyway (an import or a binding elsewhere in it).
    overridden = {name: origin for name, origin in kernel.items() if aliases.get(name) != origin}
    return Scope(aliases, values, nodes, tuple(unread), tuple(stars), moved, dict(bindings), overridden)


def walk(tree: ast.AST) -> list[ast.AST]:
    """``ast.walk``'s nodes, in its order, as a list: about twice as fast, and a scan of a
    dozen lines of generated code walks ~150 nodes."""
    nodes = [tree]
    for node in nodes:  # grows as it goes: breadth first, like ast.walk's queue
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                nodes.append(value)
            elif isinstance(value, list):
                nodes.extend(item for item in value if isinstance(item, ast.AST))
    return nodes

