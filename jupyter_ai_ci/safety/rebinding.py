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
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["kernel_meanings", "rebound_first"]


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


def kernel_meanings(trees: Sequence[ast.Module], nodes: Iterable[ast.AST], aliases: Mapping[str, str],
                    bindings: Sequence[tuple[str, str]]) -> dict[str, str]:
    """The kernel's names the code reads (``nodes``) that ``aliases`` gave another meaning (an
    import or a binding elsewhere in the code) and the code did not surely rebind first: a second
    reading of the code with these meanings finds what the first could not."""
    if not bindings:
        return {}
    loaded = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return {name: origin for name, origin in bindings
            if name in loaded and aliases.get(name) != origin and not rebound_first(trees, name)}
