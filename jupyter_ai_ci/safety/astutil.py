"""Parsing generated code the way IPython will run it, and naming what it calls.

Shared by the policy scan and the transaction's "what may this change" scan.
Code goes through IPython's own input transformer first, so ``!rm x`` and
``%system`` are seen as the ``get_ipython().system(...)`` calls they become,
instead of being syntax errors.
"""

from __future__ import annotations

import ast
from functools import lru_cache


@lru_cache(maxsize=1)
def _transformer() -> object:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager()  # type: ignore[no-untyped-call]


def transform(code: str) -> str:
    """IPython syntax (magics, ``!`` escapes, ``?`` help) turned into Python."""
    try:
        return str(_transformer().transform_cell(code))  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 -- a transformer bug must not hide the code; parse it raw
        return code


def parse_cell(code: str) -> ast.Module:
    """Parse like a notebook cell; raises SyntaxError as IPython would.

    Top-level ``await`` is valid in a cell, so it is allowed here too.
    """
    tree = compile(transform(code), "<cell>", "exec",
                   flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    assert isinstance(tree, ast.Module)
    return tree


def imported_aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> dotted origin: ``import numpy as np`` gives ``np -> numpy``."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
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


def dotted(node: ast.AST, aliases: dict[str, str] | None = None) -> str | None:
    """``os.path.join`` for an attribute chain; ``get_ipython().system`` for a call on
    ``get_ipython()``; None for anything else (subscripts, calls on other results)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        base = (aliases or {}).get(node.id, node.id)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "get_ipython":
        base = "get_ipython()"
    else:
        return None
    return ".".join([base, *reversed(parts)])


def root_name(node: ast.AST) -> str | None:
    """The variable at the bottom of ``df.loc[0, 'x']`` or ``a.b.append``: ``df``, ``a``."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def literal_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None
