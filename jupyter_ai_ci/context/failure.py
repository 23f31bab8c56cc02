"""What a failed attempt had in hand when it raised, taken before its rollback.

A fix needs what the traceback does not say: the columns of the DataFrame the
failed code loaded (the rollback removes it a moment later), and for a
``KeyError`` on a column that does not exist, the closest real names --
``did you mean 'dept'?`` -- as Python 3.12 does for a ``NameError``, done
for data.  ``inspect_failure`` runs in the kernel, between the failed block
and the rollback, for every driver: the magic calls it directly, the server
and the command line as a silent user expression (``expression`` /
``kernel_side`` / ``from_reply``), as with ``snapshot``.
"""

from __future__ import annotations

import ast
import builtins
import importlib.machinery
import json
import os
import re
import sys
import types
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from jupyter_ai_ci import inkernel
from jupyter_ai_ci.context.apihints import api_hints
from jupyter_ai_ci.context.closenames import close, mean
from jupyter_ai_ci.context.describe import _is_frame, describe
from jupyter_ai_ci.context.environment import scan
from jupyter_ai_ci.context.privacy import mask_secrets, secret_values
from jupyter_ai_ci.events import FailureNotes
from jupyter_ai_ci.safety.astutil import parse_cell
from jupyter_ai_ci.safety.maychange import may_change

MAX_VARIABLES = 6
MAX_CHARS = 2400  # of variable descriptions
MAX_LISTED = 30  # names listed after "its columns:"
_SINGLE = re.compile(r"'((?:[^'\\]|\\.){1,80})'")
_DOUBLE = re.compile(r'"((?:[^"\\]|\\.){1,80})"')
_DTYPE_ARG = re.compile(r"dtype='[^']*'")
_ATTRIBUTE = re.compile(r"'([\w.]+)' object has no attribute '(\w+)'|module '([\w.]+)' has no attribute '(\w+)'")
_NAME = re.compile(r"name '(\w+)' is not defined")
_DATE_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?|\d{1,2}/\d{1,2}/\d{2,4}")
_BUILTIN_NAMES = dir(builtins)  # for "did you mean"; read once, not sorted again per failure
_IMPORTS = {"pd": "import pandas as pd", "np": "import numpy as np", "plt": "import matplotlib.pyplot as plt",
            "sns": "import seaborn as sns", "stats": "from scipy import stats", "math": "import math",
            "datetime": "import datetime", "os": "import os", "re": "import re", "json": "import json",
            "sp": "import scipy as sp", "scipy": "import scipy.stats", "sm": "import statsmodels.api as sm"}


def referenced(code: Sequence[str]) -> list[str]:
    """Names the code reads or binds, in order of first appearance."""
    seen: dict[str, int] = {}
    for block_index, block in enumerate(code):
        try:
            tree = parse_cell(block)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                seen.setdefault(node.id, block_index * 1_000_000 + node.lineno * 1000 + node.col_offset)
    return sorted(seen, key=seen.__getitem__)


def _data_like(obj: Any) -> bool:
    return not isinstance(obj, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)) \
        and not callable(obj) or _is_frame(obj)


def _variables(ns: Mapping[str, Any], names: Sequence[str], changed: set[str]) -> list[str]:
    out: list[str] = []
    used = 0
    for name in names:
        if len(out) >= MAX_VARIABLES or name.startswith("_") or name not in ns or not _data_like(ns[name]):
            continue
        text = describe(name, ns[name], full=True)
        if name in changed:
            first, _, rest = text.partition("\n")
            text = first + "   (set by the failed code)" + (f"\n{rest}" if rest else "")
        if used + len(text) > MAX_CHARS:
            break
        out.append(text)
        used += len(text)
    return out


def _labels(obj: Any) -> list[str]:
    """Column names of a DataFrame, string keys of a dict: what a KeyError could have meant."""
    try:
        if _is_frame(obj):
            return [str(c) for c in list(obj.columns)[:500]]
        if isinstance(obj, dict):
            return [str(k) for k in list(obj)[:500] if isinstance(k, (str, int))]
        if type(obj).__name__ == "Series" and len(obj.index) <= 500:
            return [str(k) for k in obj.index]
    except Exception:  # noqa: BLE001 -- a hostile object gives no hint, never an error
        return []
    return []


def _listing(labels: Sequence[str]) -> str:
    more = f", … {len(labels) - MAX_LISTED} more" if len(labels) > MAX_LISTED else ""
    return ", ".join(repr(label) for label in labels[:MAX_LISTED]) + more


def _quoted(text: str) -> list[str]:
    """Quoted names in an exception message: 'x' first (a KeyError's repr), then "x"."""
    return list(dict.fromkeys(_SINGLE.findall(text) or _DOUBLE.findall(text)))


def _key_hints(ns: Mapping[str, Any], names: Sequence[str], evalue: str) -> list[str]:
    text = _DTYPE_ARG.sub("", evalue)
    missing = _quoted(text)[:4]
    if not missing and evalue.strip().lstrip("-").isdigit():
        missing = [evalue.strip()]
    holders = [(n, ns[n]) for n in names if n in ns and _labels(ns[n])]
    hints = []
    for word in missing:
        owners = [(n, labels) for n, obj in holders if (labels := _labels(obj)) and word not in labels]
        for name, labels in owners[:2]:
            kind = "column" if _is_frame(ns[name]) else "key"
            options = close(word, labels)
            hint = f"{word!r} is not a {kind} of {name}."
            hint += f" Did you mean {mean(options)}?" if options else ""
            hints.append(f"{hint} {name}'s {kind}s: {_listing(labels)}")
    return hints


def _attribute_hints(ns: Mapping[str, Any], names: Sequence[str], evalue: str,
                     error: BaseException | None = None) -> list[str]:
    found = _ATTRIBUTE.search(evalue)
    if not found:
        return []
    type_name, attribute, module, module_attribute = found.groups()
    if module:
        owner = sys.modules.get(module)
        options = close(module_attribute, [n for n in dir(owner) if not n.startswith("_")]) if owner else []
        return [f"{module} has no {module_attribute!r}. Did you mean {module}.{options[0]}?"] if options else []
    hints = []
    for name in names:
        obj = ns.get(name)
        if obj is None or type(obj).__name__ != type_name.split(".")[-1]:
            continue
        labels = _labels(obj)
        columns = close(attribute, labels)
        if columns:
            hints.append(f"{name}.{attribute} is not a column of {name}; did you mean {name}[{columns[0]!r}]? "
                         f"{name}'s columns: {_listing(labels)}")
        else:
            hints += _closest_attribute(type_name, attribute, obj)
        break
    if not hints and isinstance(error, AttributeError) and getattr(error, "name", None) == attribute:
        # Not a variable (``df['date'].dt.weekday_name``): the exception knows its object (3.10+).
        hints += _closest_attribute(type_name, attribute, error.obj)
    return hints


def _closest_attribute(type_name: str, attribute: str, obj: Any) -> list[str]:
    options = close(attribute, [a for a in dir(type(obj)) if not a.startswith("_")])
    return [f"{type_name} has no attribute {attribute!r}. Did you mean .{options[0]}?"] if options else []


def undefined_name(evalue: str) -> str | None:
    """The name a NameError's message says is not defined, if it says one."""
    found = _NAME.search(evalue)
    return found.group(1) if found else None


def _name_hints(ns: Mapping[str, Any], names: Sequence[str], evalue: str) -> list[str]:
    word = undefined_name(evalue)
    if word is None:
        return []
    statement = _IMPORTS.get(word) or (f"import {word}" if word not in ns and _importable(word) else "")
    if statement:
        return [f"{word!r} is not defined: the code must import it itself (`{statement}`)."]
    for name in names:  # a column used as if it were a variable
        if word in _labels(ns.get(name)) and _is_frame(ns.get(name)):
            return [f"{word!r} is a column of {name}, not a variable: use {name}[{word!r}]."]
    pool = [n for n in ns if not n.startswith("_")] + _BUILTIN_NAMES
    options = close(word, pool)
    return [f"{word!r} is not defined. Did you mean {mean(options)}?"] if options else []


def _importable(name: str) -> bool:
    """A top-level module that is installed (found, not imported: nothing of it runs).  Not one
    in the working directory: a file someone left there, named like the missing variable, is
    not a module to tell the model to import."""
    try:
        return name in sys.builtin_module_names or \
            importlib.machinery.PathFinder.find_spec(name, _search_path(os.getcwd(), tuple(sys.path))) is not None
    except (ImportError, ValueError, OSError):
        return False


@lru_cache(maxsize=4)
def _search_path(cwd: str, path: tuple[str, ...]) -> tuple[str, ...]:
    """``sys.path`` without the working directory (made again only when either changes)."""
    here = os.path.abspath(cwd)
    return tuple(p for p in path if p and os.path.abspath(p) != here)


def _file_hints(evalue: str, cwd: str) -> list[str]:
    quoted = _quoted(evalue)
    if not quoted:
        return []
    wanted = os.path.basename(quoted[-1])
    files = [name for name, _, _ in scan(cwd)[0]]
    options = close(wanted, files)
    listing = ", ".join(files[:12]) or "none"
    return [f"There is no {wanted!r} in the working directory ({cwd})."
            + (f" Did you mean {mean(options)}?" if options else "") + f" Data files there: {listing}"]


def _text_dates(obj: Any) -> list[str]:
    """Columns of a DataFrame that hold dates as text (``'2024-01-05'``), from their first values."""
    found = []
    for column in list(getattr(obj, "columns", ()))[:MAX_LISTED]:
        values = obj[column]
        if str(values.dtype) not in ("object", "str", "string"):
            continue
        first = values.dropna().head(3).tolist()
        if first and all(isinstance(v, str) and _DATE_TEXT.fullmatch(v.strip()) for v in first):
            found.append(str(column))
    return found


def _date_hints(ns: Mapping[str, Any], frames: Sequence[str], evalue: str) -> list[str]:
    """``.dt`` on text, or text minus text: the dates were never parsed."""
    if not ("datetimelike" in evalue or ".dt" in evalue or ("unsupported operand" in evalue and "'str'" in evalue)):
        return []
    for name in frames:
        columns = _text_dates(ns[name])
        if columns:
            listed = ", ".join(repr(c) for c in columns)
            return [f"{name}'s column(s) {listed} hold dates as text, not datetimes: convert first, "
                    f"{name}[{columns[0]!r}] = pd.to_datetime({name}[{columns[0]!r}]) "
                    f"(or read the file with parse_dates=[{listed}])."]
    return []


def inspect_failure(ns: Mapping[str, Any], code: Sequence[str], ename: str, evalue: str,
                    cwd: str | None = None, error: BaseException | None = None) -> FailureNotes:
    """The variables the failed code used or set, described, and hints for names it got wrong.

    ``error``: the exception itself, where the caller still has it (an AttributeError knows
    the object it was raised on)."""
    try:
        names = referenced(code)
        changed = may_change(code)
        # Frames the code did not name can still be what a KeyError was about (a groupby's result).
        frames = [n for n in names if n in ns and _is_frame(ns[n])]
        hints = api_hints(ename, evalue)
        if hints:
            pass  # an API that changed: its current form says more than the closest name would
        elif ename == "KeyError" or "not in index" in evalue or "are in the [columns]" in evalue:
            hints = _key_hints(ns, frames + [n for n in names if n not in frames], evalue)
        elif ename == "AttributeError":
            hints = _attribute_hints(ns, names, evalue, error if str(error) == evalue else None)
        elif ename in ("NameError", "UnboundLocalError"):
            hints = _name_hints(ns, names, evalue)
        elif ename in ("FileNotFoundError",):
            hints = _file_hints(evalue, cwd or os.getcwd())
        hints = hints or _date_hints(ns, frames, evalue)
        secrets = secret_values(ns)
        return FailureNotes(tuple(mask_secrets(v, secrets) for v in _variables(ns, names, changed)),
                            tuple(mask_secrets(h, secrets) for h in hints))
    except Exception:  # noqa: BLE001 -- the fix request goes without notes rather than not at all
        return FailureNotes()


# ---- across the kernel boundary -------------------------------------------

def expression(code: Sequence[str], ename: str, evalue: str) -> str:
    payload = json.dumps({"code": list(code), "ename": ename, "evalue": evalue})
    return inkernel.call("jupyter_ai_ci.context.failure", payload)  # no bare __import__ (issue #30, item 9)


def kernel_side(payload: str) -> str:
    """Runs inside the kernel: the notes as JSON."""
    from IPython.core.getipython import get_ipython

    data = json.loads(payload)
    shell: Any = get_ipython()  # type: ignore[no-untyped-call]
    notes = inspect_failure(shell.user_ns, [str(c) for c in data.get("code", [])], str(data.get("ename", "")),
                            str(data.get("evalue", "")), error=getattr(sys, "last_value", None))
    return json.dumps({"variables": list(notes.variables), "hints": list(notes.hints)})


def from_reply(user_expression: Mapping[str, Any]) -> FailureNotes:
    """The notes from a ``user_expressions`` entry; none when the kernel could not answer."""
    try:
        if user_expression.get("status") != "ok":
            return FailureNotes()
        data = json.loads(ast.literal_eval(user_expression["data"]["text/plain"]))
        return FailureNotes(tuple(str(x) for x in data.get("variables", [])),
                            tuple(str(x) for x in data.get("hints", [])))
    except (ValueError, SyntaxError, KeyError, TypeError, AttributeError):
        return FailureNotes()
