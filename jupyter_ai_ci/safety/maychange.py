"""Which variables an attempt's code may rebind, delete or mutate: read from its AST.

A superset by design: the transaction copies what is named here before the attempt runs
(``transaction.py``), and a name missed is a change a rollback cannot undo.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from jupyter_ai_ci.safety.astutil import parse_cell, root_name

# Method names that change their receiver in place.  A call of one of these on
# a variable (``df.drop(..., inplace=True)`` is caught by the keyword) marks
# the variable as changed.
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "remove", "pop", "popitem", "clear", "sort", "reverse",
    "update", "add", "discard", "difference_update", "intersection_update",
    "symmetric_difference_update", "setdefault", "fill", "resize", "put", "itemset",
    "setflags", "partition", "__setitem__", "__delitem__", "__iadd__", "__imul__",
    "fit", "partial_fit", "fit_transform", "set_params", "load_state_dict",
})
# Functions that only read their arguments: passing a variable to one of them
# does not mark it.  Any other call with a variable as argument does (a
# ``random.shuffle(x)`` or ``np.copyto(a, b)`` mutates its argument).
READING_FUNCTIONS = frozenset({
    "print", "len", "repr", "str", "int", "float", "bool", "list", "tuple", "dict", "set",
    "frozenset", "sorted", "sum", "min", "max", "abs", "round", "any", "all", "type",
    "isinstance", "issubclass", "hasattr", "getattr", "id", "hash", "format", "range",
    "enumerate", "zip", "reversed", "display", "iter", "next", "map", "filter", "divmod",
})
# Libraries whose functions read their arguments, except the listed mutators;
# ``np.mean(a)`` need not copy ``a``.
READING_LIBRARIES = frozenset({"np", "numpy", "pd", "pandas", "plt", "matplotlib", "sns",
                               "seaborn", "math", "statistics", "json", "px"})
LIBRARY_MUTATORS = frozenset({"copyto", "shuffle", "put", "place", "putmask", "fill_diagonal"})


def may_change(blocks: Iterable[str]) -> set[str]:
    """Variables the code may rebind, delete or mutate (a superset, by design)."""
    names: set[str] = set()
    for code in blocks:
        try:
            tree = parse_cell(code)
        except SyntaxError:
            continue
        names |= _scan(tree, "global" in code)
    return names


def _scan(tree: ast.Module, has_global: bool = True) -> set[str]:
    names: set[str] = set()
    declared_global: set[str] = set()
    for node in ast.walk(tree) if has_global else ():  # a walk of its own: skipped when it cannot find any
        if isinstance(node, ast.Global):
            declared_global.update(node.names)

    # Depth first with a stack, not recursion through ast.iter_child_nodes: a dozen lines of
    # generated code are ~150 nodes, and this scan runs at every checkpoint.
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_function = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not in_function:
                names.add(node.name)
            in_function = True  # names bound in a body are the body's own
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            in_function = True
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if not in_function or node.id in declared_global:
                names.add(node.id)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            _add(names, root_name(node))
        elif isinstance(node, ast.AugAssign):
            _add(names, root_name(node.target))
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and not in_function:
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.Call):
            _call(node, names)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST) and not isinstance(value, _LEAVES):
                stack.append((value, in_function))
            elif isinstance(value, list):
                stack.extend((item, in_function) for item in value
                             if isinstance(item, ast.AST) and not isinstance(item, _LEAVES))
    return names


# Nodes with nothing below them and nothing to find: Load/Store, operators.
_LEAVES = (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)


def _add(names: set[str], name: str | None) -> None:
    if name:
        names.add(name)


def _call(node: ast.Call, names: set[str]) -> None:
    func = node.func
    if isinstance(func, ast.Attribute):
        inplace = any(k.arg == "inplace" and not (isinstance(k.value, ast.Constant) and not k.value.value)
                      for k in node.keywords)
        if func.attr in MUTATING_METHODS or inplace:
            _add(names, root_name(func.value))
    reading = isinstance(func, ast.Name) and func.id in READING_FUNCTIONS or (
        isinstance(func, ast.Attribute) and root_name(func) in READING_LIBRARIES
        and func.attr not in LIBRARY_MUTATORS)
    if not reading:
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if isinstance(arg, (ast.Name, ast.Starred, ast.Attribute, ast.Subscript)):
                _add(names, root_name(arg))
