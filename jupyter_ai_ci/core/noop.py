"""Code that ran but changed nothing where it meant to: pandas' ``ChainedAssignmentError`` (issue #37).

Under pandas 3 (Copy-on-Write) an inplace method or an assignment through a chained selection --
``df['col'].fillna(0, inplace=True)``, ``df['col'][0] = 1`` -- changes a copy, never the
DataFrame: the code runs to its end and the answer is computed from data the step was meant to
have changed.  pandas says so, in a ``ChainedAssignmentError`` warning the cell prints, and goes on.
A small model writes these often (the suite's ``ffill_mean``, and DABench's many "fill the missing
values" questions), and nothing else in the run could see it: the result is shown as done.

So an attempt whose output holds that warning about a line of its own code is a failed attempt,
its error made from the warning: it is undone like any other, and its fix request carries pandas'
own advice.  A warning from inside a library, or naming no line, is left alone.

Its commonest form has one right change, which the run makes itself with no model call
(``assignment``; core/mends.py): ``df['col'].fillna(0, inplace=True)`` becomes
``df['col'] = df['col'].fillna(0)``, the assignment pandas' own warning points to.  Only this
warning: pandas 2's ``FutureWarning`` about the same code is not an error (the change does reach
the DataFrame there), and a ``SettingWithCopyWarning`` may or may not mean one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from jupyter_ai_ci.events import ErrorInfo, ExecutionResult

# Said like an exception's name, so the notices and the summary read it as any failure; not the
# class's bare name, which a ChainedAssignmentError really raised (warnings made errors) has.
NOOP_ENAME = "ChainedAssignmentError (warning)"

# As Python's warnings.showwarning prints it: "FILE:LINE: ChainedAssignmentError: MESSAGE", the
# message's lines, then the source line indented by two spaces (absent when there is no source).
_HEAD = re.compile(r"^[^\n]*?:(\d+): ChainedAssignmentError: ", re.M)
_DOCS = re.compile(r"\n+See the documentation[^\n]*")
_SOURCE = re.compile(r"\n  (\S[^\n]*)")


def warned(output: str) -> list[tuple[str, str]]:
    """Each ChainedAssignmentError warning in ``output``: (the warning as printed, the line of code
    it names, "" when it names none)."""
    found = []
    heads = list(_HEAD.finditer(output))
    for at, start in enumerate(heads):
        # pandas ends its message with "See the documentation ...: URL"; Python then prints the
        # source line, indented by two spaces.  Without that last line (another pandas), the first
        # line is the warning.
        bound = heads[at + 1].start() if at + 1 < len(heads) else len(output)
        docs = _DOCS.search(output, start.end(), bound)
        newline = output.find("\n", start.end(), bound)
        end = docs.end() if docs else (newline if newline >= 0 else bound)
        source = _SOURCE.match(output, end)
        if source:
            end = source.end()
        found.append((output[start.start():end], source.group(1).strip() if source else ""))
    return found


def _own(output: str, code: Sequence[str]) -> list[tuple[str, str]]:
    """The warnings about a line of ``code`` itself.  One raised inside a library (its own chained
    assignment, which the model's code cannot change), or naming no line, is not the attempt's
    doing: failing the attempt for it would spend the retries on code that is right."""
    found = warned(output)
    if not found:  # every attempt's output is read: the code's lines only when pandas warned
        return []
    lines = {line.strip() for block in code for line in block.splitlines() if line.strip()}
    return [(printed, line) for printed, line in found if line and line in lines]


def _ours(output: str, code: Sequence[str]) -> tuple[str, str] | None:
    """The first of ``_own``'s warnings (None when there is none)."""
    return next(iter(_own(output, code)), None)


def noop_error(results: Sequence[ExecutionResult], code: Sequence[str]) -> ErrorInfo | None:
    """The error of an attempt that ran cleanly but whose ``code`` pandas says changed a copy."""
    for result in results:
        found = _ours(result.output, code)
        if found is None:
            continue
        printed, line = found
        first = _HEAD.sub("", printed.splitlines()[0]).rstrip(".")
        # The cell's file name (/tmp/ipykernel_…/….py) tells the model nothing: the line number does;
        # nor does a link it cannot follow.
        shown = _HEAD.sub(r"line \1: ChainedAssignmentError: ", _DOCS.sub("", printed), count=1)
        return ErrorInfo(NOOP_ENAME, f"{first} at `{line[:200]}`: the change never reached the DataFrame", shown)
    return None


# The inplace methods whose result, assigned back to the selection, is the change meant: each maps
# values to values on the same index.  Not dropna, sort_values, drop_duplicates: assigned back,
# pandas aligns them on the index again, so the rows they drop or move would come back.
_VALUE_METHODS = frozenset({"fillna", "ffill", "bfill", "replace", "interpolate", "clip", "where", "mask"})


# What a DataFrame or Series is besides its columns: ``df.T = …`` or ``df.values = …`` is no column.
_NOT_COLUMNS = frozenset({"T", "values", "index", "columns", "str", "dt", "cat", "array", "loc", "iloc", "at",
                          "iat", "plot", "sparse", "style", "attrs", "flags", "axes", "shape", "dtypes", "name"})
# Calls a selection may make and be the same rows when made twice (the assignment makes it again).
_PURE_CALLS = frozenset({"isna", "notna", "isnull", "notnull", "isin", "between", "eq", "ne", "lt", "le", "gt",
                         "ge", "contains", "startswith", "endswith", "duplicated"})


def _same_twice(node: ast.expr) -> bool:
    """Whether ``node`` selects the same rows when evaluated twice: ``df[cols.pop()]`` or
    ``df.loc[df.sample(3).index]`` would not, and the assignment would change other rows."""
    for inner in ast.walk(node):
        if isinstance(inner, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Lambda)):
            return False
        if isinstance(inner, ast.Call) and not (isinstance(inner.func, ast.Attribute)
                                                and inner.func.attr in _PURE_CALLS):
            return False
    return True


def _selection(node: ast.expr) -> bool:
    """``df['col']``, ``df.col``, ``df.loc[rows, 'col']``: one selection from a named object, which an
    assignment reaches.  A selection of a selection (``df[mask]['col']``) would be chained again."""
    if isinstance(node, ast.Subscript):
        base = node.value
        if isinstance(base, ast.Attribute) and base.attr in ("loc", "iloc"):
            base = base.value
        return isinstance(base, ast.Name) and _same_twice(node.slice)
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr not in _NOT_COLUMNS


def assignment(line: str) -> str:
    """``line`` -- ``SELECTION.method(..., inplace=True)``, alone on its line -- as the assignment
    that makes the change on the DataFrame: ``SELECTION = SELECTION.method(...)``, in the model's own
    spelling ("" for any other line: the model is asked, as for any error)."""
    try:
        body = ast.parse(line.strip()).body
    except SyntaxError:
        return ""
    call = body[0].value if len(body) == 1 and isinstance(body[0], ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr in _VALUE_METHODS and _selection(call.func.value)):
        return ""
    flags = [k for k in call.keywords if k.arg == "inplace"]
    if (len(flags) != 1 or not isinstance(flags[0].value, ast.Constant) or flags[0].value.value is not True
            or any(k.arg is None for k in call.keywords)):  # **options could hold another inplace
        return ""
    source = line.strip()
    target = ast.get_source_segment(source, call.func.value)
    kept = [ast.get_source_segment(source, a) for a in [*call.args, *(k for k in call.keywords if k.arg != "inplace")]]
    if target is None or None in kept:
        return ""
    comment = source[len(ast.get_source_segment(source, call) or source):].strip()  # the model's own, kept
    return (f"{target} = {target}.{call.func.attr}({', '.join(str(k) for k in kept)})"
            + (f"  {comment}" if comment.startswith("#") else ""))


def rewrites(results: Sequence[ExecutionResult], code: Sequence[str]) -> list[tuple[str, str]]:
    """Each line of ``code`` pandas says changed a copy, with the assignment to run instead (those
    ``assignment`` knows; all of them, so that code with several runs once more, not once for each)."""
    found: dict[str, str] = {}
    for result in results:
        for _, line in _own(result.output, code):
            if line not in found and (instead := assignment(line)):
                found[line] = instead
    return list(found.items())


def without_warning(output: str, code: Sequence[str]) -> str:
    """``output`` without the warning ``noop_error`` was made from (the fix request shows it once)."""
    found = _ours(output, code)
    if found is None:
        return output
    at = output.index(found[0])
    return (output[:at] + output[at + len(found[0]):].removeprefix("\n")).strip("\n")
