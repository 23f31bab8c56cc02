"""The string an expression will be, as far as reading the code tells: paths, SQL, code run from a string."""

from __future__ import annotations

import ast
import re

# A format spec that only ever yields a number (``{i:02d}``, ``{x:.2f}``): no slash, no "..".
_NUMERIC_SPEC = re.compile(r"[<>=^]?[+\- ]?#?0?\d*[,_]?(\.\d+)?[bdoxXeEfFgGn%]")


def literal_text(node: ast.AST | None, values: dict[str, ast.expr], hole: str | None = None) -> str | None:
    """The string an expression will be, as far as reading the code tells.

    Follows names bound once (``values``), f-strings and ``+``.  With ``hole`` unknown
    parts become ``hole`` (``f"DROP TABLE {name}"`` reads ``DROP TABLE ?``), which is
    enough to judge SQL; without it anything unknown makes the whole string unknown,
    as a path must be.  None when nothing of it is known.
    """
    text = _text(node, values, hole, 0) if node is not None else None
    return None if text is None or (hole is not None and text == hole) else text


def _text(node: ast.AST, values: dict[str, ast.expr], hole: str | None, depth: int) -> str | None:
    if depth > 8:  # a = b; b = a + 'x' ... cannot loop, but a long chain is not worth following
        return hole
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in values:
        return _text(values[node.id], values, hole, depth + 1)
    if isinstance(node, ast.FormattedValue):
        spec = _text(node.format_spec, values, None, depth + 1) if node.format_spec else None
        if spec and _NUMERIC_SPEC.fullmatch(spec):
            return "0"
        return _text(node.value, values, hole, depth + 1)
    if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
        parts = node.values if isinstance(node, ast.JoinedStr) else [node.left, node.right]
        texts = [_text(p, values, hole, depth + 1) for p in parts]
        return None if any(t is None for t in texts) else "".join(t for t in texts if t is not None)
    if hole is not None and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _text(node.left, values, hole, depth + 1)  # "... %s" % x: the template tells
    if hole is not None and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "format":
        return _text(node.func.value, values, hole, depth + 1)
    return hole
