"""Whether the model's code gives one of the kernel's names (safety/kernelnames.py) a meaning of
its own before it uses it, or only seems to.

``from subprocess import run`` in a user's cell and ``run(...)`` in the model's code is a process.
The code may bind ``run`` itself -- ``def run(items): ...`` first, at top level: then it is the
code's own.  Anything weaker leaves it the kernel's: a binding in a branch, a loop or a
function, an import further down, an annotation without a value, a ``def run(x=run(...))``
whose default runs first.  A superset, as the rest of the scan: a false alarm asks, a miss runs.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

__all__ = ["rebound_first"]


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

