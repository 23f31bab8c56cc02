"""What a name stands for once the code has bound it: whether the model's code gives one of the
kernel's names (safety/kernelnames.py) a meaning of its own before it uses it, or only seems to;
and which names it binds exactly once, to what (``sh = os.system`` makes ``sh`` an alias).

``from subprocess import run`` in a user's cell and ``run(...)`` in the model's code is a process.
The code may bind ``run`` itself -- ``def run(items): ...`` first, at top level: then it is the
code's own.  Anything weaker leaves it the kernel's: a binding in a branch, a loop or a
function, an import further down, an annotation without a value, a ``def run(x=run(...))``
whose default runs first.  A superset, as the rest of the scan: a false alarm asks, a miss runs.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["rebound_first", "single_bindings"]


def rebound_first(trees: Sequence[ast.Module], name: str) -> bool:
    """Whether the first top-level statement that mentions ``name`` binds it, whatever happens:
    an import of it, a ``def`` or ``class`` whose decorators, defaults, annotations and bases do
    not read it, or an assignment of a value that does not."""
    for tree in trees:
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) and any(
                    (a.asname or a.name.split(".")[0]) == name for a in stmt.names):
                return True  # import json as run: bound, whatever the kernel held
            mentions = [n for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == name]
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == name:
                inside = {id(n) for part in stmt.body for n in ast.walk(part)}
                return not any(id(n) not in inside for n in mentions)  # def run(x=run(...)) runs the kernel's
            if mentions:
                assigns = isinstance(stmt, ast.Assign) or (isinstance(stmt, ast.AnnAssign) and stmt.value is not None)
                return assigns and all(not isinstance(n.ctx, ast.Load) for n in mentions)
    return False


# The nodes single_bindings counts or reads; one test skips the rest (most nodes).
_BINDING = (ast.Name, ast.arg, ast.alias, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler,
            ast.MatchAs, ast.MatchStar, ast.Assign, ast.AnnAssign, ast.withitem, ast.NamedExpr)


def single_bindings(nodes: Iterable[ast.AST]) -> dict[str, ast.expr]:
    """Names bound exactly once in the code, by ``name = expr`` or ``with expr as name``.

    A name bound twice, by a loop, an argument, an import or unpacking could hold anything
    when it is used, so it is left out and its uses count as computed.
    """
    counts: Counter[str] = Counter()
    values: dict[str, ast.expr] = {}
    for node in nodes:
        if not isinstance(node, _BINDING):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] += 1
        elif isinstance(node, ast.arg):
            counts[node.arg] += 1
        elif isinstance(node, ast.alias):
            counts[(node.asname or node.name).split(".")[0]] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            counts[node.name] += 1
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            counts[node.name] += 1
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and node.value and isinstance(node.target, ast.Name):
            values[node.target.id] = node.value
        elif isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
            values[node.optional_vars.id] = node.context_expr
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            values[node.target.id] = node.value  # (s := os.system): an alias as s = os.system is
    return {name: value for name, value in values.items() if counts[name] == 1}
