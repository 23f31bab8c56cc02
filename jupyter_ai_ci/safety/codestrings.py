"""Code the request hands to something that runs it: strings run as Python, magics, unpickled data.

Found in a security review (issue #38, item 4): ``get_ipython().run_cell(src)``, ``.ex``, ``.ev``,
``run_line_magic`` / ``run_cell_magic`` of ``%time``, ``%timeit``, ``%prun``, ``%%capture``,
``%debug``, and ``timeit.timeit`` / ``repeat`` / ``Timer`` run a string as Python, out of the scan's
sight.  A string the code shows (a literal, a name bound once to one, an f-string without holes)
is read as the code it is: ``inner_trees`` gives its tree, which the scan reads with the request's
own, so ``run_cell("import os; os.system('id')")`` is judged as ``os.system``.  One the code does
not show cannot be judged, so it is asked about (``code_risks``).  So is deserialising: unpickling
runs whatever the data names.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from jupyter_ai_ci.safety import sql
from jupyter_ai_ci.safety.astutil import Scope, dotted, resolved, transform
from jupyter_ai_ci.safety.literals import literal_text
from jupyter_ai_ci.safety.risktable import CODE_MAGICS, RISKY_MAGICS, WRITE_MAGICS

__all__ = ["code_risks", "inner_trees"]

Found = tuple[str, str, str, int]  # (kind, name, why, line), as policy.Risk takes them
# The calls that run a string as Python: name -> each such argument's (position, keyword).
_RUNS_STRINGS: dict[str, tuple[tuple[int, str], ...]] = {
    "get_ipython().run_cell": ((0, "raw_cell"),),
    "get_ipython().run_cell_async": ((0, "raw_cell"),),
    "get_ipython().ex": ((0, "cmd"),),
    "get_ipython().ev": ((0, "expr"),),
    "timeit.timeit": ((0, "stmt"), (1, "setup")),
    "timeit.repeat": ((0, "stmt"), (1, "setup")),
    "timeit.Timer": ((0, "stmt"), (1, "setup")),
}
_MAGIC_RUNNERS = ("get_ipython().run_line_magic", "get_ipython().run_cell_magic", "get_ipython().magic")
_UNREAD = "runs a string as code that the scan cannot read: "
_UNPICKLES = "unpickles data, which can run any code"
_BUILDS = "builds the objects the data names, which can run any code"
# Loaders that run code the data names, and why: always (None), or unless an argument keeps them
# from it: (its position, its keyword, the values that do).
_DESERIALISERS: dict[str, tuple[tuple[int, str, tuple[object, ...]] | None, str]] = {
    "pandas.read_pickle": (None, _UNPICKLES),
    "joblib.load": (None, _UNPICKLES),
    "numpy.load": ((2, "allow_pickle", (False,)), _UNPICKLES),
    "torch.load": ((-1, "weights_only", (True,)), _UNPICKLES),  # -1: by keyword only
    "yaml.unsafe_load": (None, _BUILDS),
    "yaml.unsafe_load_all": (None, _BUILDS),
    "yaml.load": ((1, "Loader", ("yaml.SafeLoader", "yaml.CSafeLoader", "yaml.BaseLoader", "yaml.CBaseLoader",
                                 "yaml.FullLoader", "yaml.CFullLoader")), _BUILDS),
}


def inner_trees(scope: Scope) -> list[tuple[ast.Module, int]]:
    """The code in the strings the request runs as Python, each once, with the line that runs it."""
    found: dict[str, tuple[ast.Module, int]] = {}
    for node in scope.nodes:
        if not isinstance(node, ast.Call) or _last(node.func, scope) not in _RUNNERS:
            continue  # the called name's last part tells most calls apart, at a fraction of resolving it
        if (name := resolved(node.func, scope)) is not None:
            for source in _code(node, name, scope)[0]:
                tree = parsed(source)
                if tree is not None and source not in found:
                    found[source] = (tree, node.lineno)
    return list(found.values())


_RUNNERS = frozenset({None, *(name.rpartition(".")[2] for name in (*_RUNS_STRINGS, *_MAGIC_RUNNERS))})


def _last(func: ast.expr, scope: Scope) -> str | None:
    """The last part of a called name where it is cheap to read; None where only ``resolved`` tells
    (``globals()['rc'](...)``, a name bound to the kernel's ``rc``), which is in ``_RUNNERS``."""
    if isinstance(func, ast.Attribute):
        return func.attr
    name = scope.aliases.get(func.id, func.id) if isinstance(func, ast.Name) else "__main__."
    return None if name.startswith("__main__.") else name.rpartition(".")[2]


def code_risks(node: ast.Call, name: str, scope: Scope) -> list[Found] | None:
    """Why a call that runs code it is given needs approval; None when the call is not one of those."""
    line = node.lineno
    if name in _DESERIALISERS:
        return [("eval", name, _DESERIALISERS[name][1], line)] if _deserialises(node, name, scope) else []
    if name not in _RUNS_STRINGS and name not in _MAGIC_RUNNERS:
        return None
    magic = _magic(node, name, scope)[0] if name in _MAGIC_RUNNERS else None
    if magic in RISKY_MAGICS:
        return [("write" if magic in WRITE_MAGICS else "shell", f"%{magic}", RISKY_MAGICS[magic], line)]
    if magic == "sql":
        return [("delete", "%sql", why, line) for why in sql.magic_findings(node, scope)]
    sources, unread = _code(node, name, scope)
    shown = f"%{magic}" if magic else name
    return [("eval", shown, why, line) for why in unread] + [
        ("eval", shown, f"runs a string that does not parse as Python: {_short(s)}", line)
        for s in sources if parsed(s) is None]


@lru_cache(maxsize=64)
def parsed(source: str) -> ast.Module | None:
    """A string's tree, as IPython would run it (shared: read it, never change it); None if it does not parse."""
    try:
        tree = compile(transform(source), "<string>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                       dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    assert isinstance(tree, ast.Module)
    return tree


def _code(node: ast.Call, name: str, scope: Scope) -> tuple[list[str], list[str]]:
    """The strings a call runs as Python that the code shows, and why the others cannot be read."""
    sources: list[str] = []
    unread: list[str] = []
    if any(k.arg is None for k in node.keywords):  # run_cell(**kwargs): what it runs is not in sight
        unread.append(_UNREAD + _short(ast.unparse(node)))
    elif name in _RUNS_STRINGS:
        for position, keyword in _RUNS_STRINGS[name]:
            arg = _arg(node, position, keyword)
            text = literal_text(arg, scope.values) if arg is not None else None
            if text is not None:
                sources.append(text)
            elif arg is not None and not (name.startswith("timeit.") and _function(arg, scope)):
                unread.append(_UNREAD + _short(ast.unparse(arg)))
    elif name in _MAGIC_RUNNERS:
        magic, line, cell = _magic(node, name, scope)
        if magic is None:
            unread.append("runs a magic whose name is computed at run time")
        elif magic in CODE_MAGICS:
            for text, options in ((line, True), (cell, False)):
                if text is None:
                    unread.append(f"runs a line or cell as code that the scan cannot read (%{magic})")
                elif text.strip():
                    sources.extend(_after_options(text) if options else [text])
    return sources, unread


def _magic(node: ast.Call, name: str, scope: Scope) -> tuple[str | None, str | None, str | None]:
    """A magic call's name (lower case), line and cell: "" where there is none, None where the
    code does not show it."""
    if name == "get_ipython().magic":  # the old API: magic('timeit -n1 x')
        text = literal_text(node.args[0], scope.values) if node.args else ""
        if text is None:
            return None, None, ""
        called, _, rest = text.lstrip("%").partition(" ")
        return called.lower(), rest, ""
    magic, line, cell = (literal_text(arg, scope.values) if arg is not None else ""
                         for arg in (_arg(node, 0, "magic_name"), _arg(node, 1, "line"), _arg(node, 2, "cell")))
    return (magic or "").lower() or None, line, cell


def _after_options(text: str) -> list[str]:
    """The code in a magic's line after its options (``-n1 -r 3 f(x)``): each part from a word on
    that parses, so that whatever IPython takes for the code is among them (the whole line, when
    none does: it does not parse, which is asked about)."""
    words = text.split(" ")
    found = [rest for start in range(len(words)) if parsed(rest := " ".join(words[start:])) is not None]
    return found or [text]


def _function(node: ast.expr, scope: Scope) -> bool:
    """A lambda, or a name the code binds with ``def``: timeit calls it; its body is the code's own."""
    return isinstance(node, ast.Lambda) or (isinstance(node, ast.Name) and any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == node.id for n in scope.nodes))


def _deserialises(node: ast.Call, name: str, scope: Scope) -> bool:
    rule = _DESERIALISERS[name][0]
    if rule is None:
        return True
    position, keyword, safe = rule
    arg = _arg(node, position, keyword)
    if arg is None:  # the default: safe
        return False
    value = arg.value if isinstance(arg, ast.Constant) else dotted(arg, scope.aliases)
    return value not in safe


def _arg(node: ast.Call, position: int, keyword: str) -> ast.expr | None:
    for k in node.keywords:
        if k.arg == keyword:
            return k.value
    if position < 0:
        return None
    if any(isinstance(a, ast.Starred) for a in node.args[:position + 1]):
        return next(a for a in node.args if isinstance(a, ast.Starred))  # f(*args): computed, whatever it is
    return node.args[position] if len(node.args) > position else None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= 50 else text[:47] + "...")
