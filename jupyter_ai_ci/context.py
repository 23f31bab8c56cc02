"""What the model is told about the notebook, fitted to a token budget.

Descriptions come from cheap attributes (``shape``, ``dtypes``, ``len``),
never from an unbounded ``repr``: a 10 GB DataFrame or an object whose
``__repr__`` is slow or raises must cost little and never fail.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .llm import estimate_tokens
from .text import head_tail

MAX_COLUMNS = 40
SECRET_NAME = re.compile(r"key|token|secret|passw|credential|auth", re.IGNORECASE)
SECRET_VALUE = re.compile(
    r"\b(sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|xox[abp]-[A-Za-z0-9-]{10,})"
)
_SKIP_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})


@dataclass(frozen=True)
class CellRecord:
    source: str
    output: str = ""


def _type_name(obj: Any) -> str:
    t = type(obj)
    module = t.__module__
    return t.__qualname__ if module == "builtins" else f"{module.split('.')[0]}.{t.__qualname__}"


def _is_dataframe(obj: Any) -> bool:
    t = type(obj)
    return t.__name__ == "DataFrame" and t.__module__.startswith(("pandas", "polars"))


def mask_secrets(text: str) -> str:
    return SECRET_VALUE.sub("***", text)


def describe(name: str, obj: Any, full: bool = False) -> str:
    """One bounded line (or a few, when ``full``) about a variable."""
    try:
        return _describe(name, obj, full)
    except Exception:  # a hostile object must not break the request
        return f"{name}: {_type_name(obj)}"


def _describe(name: str, obj: Any, full: bool) -> str:
    kind = _type_name(obj)
    if SECRET_NAME.search(name):
        return f"{name}: {kind} (value hidden: the name looks like a secret)"
    if _is_dataframe(obj):
        rows, cols = obj.shape
        columns = list(obj.columns)
        dtypes = obj.dtypes
        shown = columns[: MAX_COLUMNS if full else 12]
        parts = [f"{c!s}:{dtypes[c]!s}" for c in shown] if full else [str(c) for c in shown]
        more = f", … {len(columns) - len(shown)} more" if len(columns) > len(shown) else ""
        return f"{name}: {kind} {rows} rows × {cols} columns [{', '.join(parts)}{more}]"
    shape = getattr(obj, "shape", None)
    if isinstance(shape, tuple) and not isinstance(obj, type):
        dtype = getattr(obj, "dtype", None)
        return f"{name}: {kind} shape={shape}" + (f" dtype={dtype}" if dtype is not None else "")
    if isinstance(obj, (int, float, complex, bool)) or obj is None:
        return f"{name}: {kind} = {obj!r}"[:200]
    if isinstance(obj, str):
        value = mask_secrets(obj)
        return f"{name}: str len={len(obj)} = {head_tail(repr(value), 120)}"
    if isinstance(obj, (list, tuple, set, frozenset, dict)):
        return f"{name}: {kind} len={len(obj)}"
    if isinstance(obj, (types.FunctionType, type)):
        doc = (obj.__doc__ or "").strip().splitlines()
        return f"{name}: {'class' if isinstance(obj, type) else 'function'}" + (f" — {doc[0][:100]}" if doc else "")
    return f"{name}: {kind}"


def user_variables(
    ns: Mapping[str, Any], hidden: Mapping[str, Any] | frozenset[str] = frozenset()
) -> list[tuple[str, Any]]:
    """The user's own variables, in assignment order (dicts keep it), newest first."""
    out = []
    for name, obj in ns.items():
        if name.startswith("_") or name in _SKIP_NAMES or name in hidden:
            continue
        if isinstance(obj, types.ModuleType):
            continue
        out.append((name, obj))
    out.reverse()
    return out


def build_context(
    request: str,
    variables: Sequence[tuple[str, Any]],
    cells: Sequence[CellRecord],
    budget_tokens: int,
) -> str:
    """Variables the request names (full), other variables, then recent cells,
    most recent first, until the budget is spent.  Deterministic."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", request))
    lines: list[str] = []
    used = 0

    def add(line: str) -> bool:
        nonlocal used
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens:
            return False
        lines.append(line)
        used += cost
        return True

    named = [(n, o) for n, o in variables if n in words]
    others = [(n, o) for n, o in variables if n not in words]
    if variables:
        add("### Variables")
        for n, o in named:
            add(describe(n, o, full=True))
        for n, o in others:
            if not add(describe(n, o)):
                break
    if cells:
        add("### Recent cells (most recent first)")
        for cell in reversed(cells):
            text = f"```python\n{head_tail(cell.source, 1200)}\n```"
            if cell.output:
                text += f"\nOutput:\n```\n{head_tail(mask_secrets(cell.output), 600)}\n```"
            if not add(text):
                break
    return ("## Notebook context (live kernel state)\n" + "\n".join(lines)) if lines else ""
