"""Bounded descriptions of kernel variables.

Never an unbounded ``repr``: a 10 GB DataFrame or an object whose
``__repr__`` is slow or raises must cost little and never fail.  We read
cheap attributes (``shape``, ``dtypes``, ``len``), look at a few elements
through bounded slices (``head``, ``islice``, ``flat[:n]``), and call
``repr`` only on objects whose repr is known to be small (scalars) or on
slices we have already bounded.
"""

from __future__ import annotations

import inspect
import itertools
import types
from collections.abc import Iterable
from typing import Any

from jupyter_ai_ci.context.privacy import SECRET_VALUE
from jupyter_ai_ci.context.secretnames import MASK, holds_secret, is_secret_name

MAX_COLUMNS = 40  # columns listed with dtypes in a full description
COMPACT_COLUMNS = 8  # column names in a one-line description
SAMPLE_ROWS = 3
SAMPLE_ITEMS = 4
# Null counts read every cell; above this many we say so instead of paying for it
# (1,000,000 × 20 floats take ~20 ms, which alone would break the build's budget).
MAX_NULL_COUNT_CELLS = 2_000_000
MAX_LINE = 160
MAX_SAMPLE_CHARS = 1200


def type_name(obj: Any) -> str:
    t = type(obj)
    module = getattr(t, "__module__", "") or ""
    qual = getattr(t, "__qualname__", t.__name__)
    qual = t.__name__ if "<locals>" in qual else qual
    return qual if module in ("builtins", "__main__") else f"{module.split('.')[0]}.{qual}"


def _short(text: str, limit: int = MAX_LINE) -> str:
    text = SECRET_VALUE.sub(MASK, text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _scalar(obj: Any) -> str | None:
    """A small repr for values whose repr is known to be small, else None."""
    if type(obj).__module__ == "numpy" and getattr(obj, "shape", None) == ():
        item = obj.item()  # a numpy scalar: its Python value, never an array
        return None if isinstance(item, (str, bytes)) and len(item) > 60 else _scalar(item)
    if obj is None or isinstance(obj, (bool, float, complex)):
        return repr(obj)
    if isinstance(obj, int):
        # repr of a huge int is quadratic (and refused past 4300 digits).
        return repr(obj) if obj.bit_length() <= 128 else f"<int of {obj.bit_length()} bits>"
    if isinstance(obj, (str, bytes)):
        # Mask a wider window before cutting: a key cut in half is no longer recognisable.
        head = obj[:300]
        if isinstance(head, str):
            head = SECRET_VALUE.sub(MASK, head)
        return _short(repr(head[:60]) + ("…" if len(obj) > 60 else ""), 80)
    return None


def _is_frame(obj: Any) -> bool:
    # By name, so pandas is never imported; through the MRO, so subclasses
    # (geopandas.GeoDataFrame) are frames too.
    return any(t.__name__ == "DataFrame" and t.__module__.startswith(("pandas", "polars"))
               for t in type(obj).__mro__)


def _frame(name: str, obj: Any, full: bool) -> str:
    kind = type_name(obj)
    columns = list(itertools.islice(iter(obj.columns), MAX_COLUMNS if full else COMPACT_COLUMNS))
    rows, ncols = obj.shape
    more = ncols - len(columns)
    if not full:
        names = ", ".join(_short(str(c), 40) for c in columns) + (f", … {more} more" if more > 0 else "")
        return f"{name}: {kind} {rows} rows × {ncols} columns [{names}]"
    # By position: duplicate column names and polars' list of dtypes both work.
    dtypes = list(itertools.islice(iter(obj.dtypes), len(columns)))
    listed = ", ".join(f"{_short(str(c), 40)}:{d!s}" for c, d in zip(columns, dtypes, strict=False))
    lines = [f"{name}: {kind} {rows} rows × {ncols} columns [{listed}" + (f", … {more} more]" if more > 0 else "]")]
    pandas = hasattr(obj, "iloc")
    if pandas:
        index = obj.index
        if type(index).__name__ != "RangeIndex":
            label = f" named {_short(str(index.name), 40)}" if index.name is not None else ""
            lines.append(f"  index: {type(index).__name__} {index.dtype}{label}")
        # Whole-frame isna: slicing columns first (iloc) costs more than it saves.
        if rows * max(ncols, 1) <= MAX_NULL_COUNT_CELLS:
            nulls = obj.isna().sum().tolist()[: len(columns)]
            found = {str(c): int(n) for c, n in zip(columns, nulls, strict=False) if n}
            lines.append(f"  nulls: {found}" if found else "  nulls: none")
        else:
            lines.append("  nulls: not counted (large)")
    try:  # the sample formats user objects: its failure must not cost the schema
        head = obj.head(SAMPLE_ROWS)
        head = head.iloc[:, : len(columns)] if pandas and ncols > len(columns) else head
        # A column named like a secret (password, api_key …) shows its name, never its values.
        hidden = {i for i, c in enumerate(columns) if isinstance(c, str) and holds_secret(c)}
        if pandas:  # one conversion, not itertuples' one lookup per column
            rows = zip(head.index.tolist(), head.to_numpy(dtype=object).tolist(), strict=False)
            sample = _table(columns, ((index, *(MASK if i in hidden else v for i, v in enumerate(values)))
                                      for index, values in rows))
        else:
            sample = str(head) if not hidden else "(not shown: it has a column named like a secret)"
        lines.append("  first rows:\n" + "\n".join(
            "    " + line for line in _short(sample, MAX_SAMPLE_CHARS).splitlines()))
    except Exception:
        pass
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    text = _scalar(value)
    if text is None or isinstance(value, (str, bytes)):
        text = str(value)  # timestamps, categories, strings: their str, cut below
    return text if len(text) <= 30 else text[:29] + "…"


def _table(columns: list[Any], rows: Iterable[tuple[Any, ...]]) -> str:
    """A few rows as an aligned text table.  pandas' own to_string costs ~5 ms
    for three rows; this costs ~0.1 ms, and the model needs no more."""
    grid = [["", *(_cell(c) for c in columns)]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in grid) for i in range(len(grid[0]))]
    return "\n".join("  ".join(v.rjust(w) for v, w in zip(r, widths, strict=False)).rstrip() for r in grid)


def _array(name: str, obj: Any, full: bool) -> str:
    shape = obj.shape
    dtype = getattr(obj, "dtype", None)
    text = f"{name}: {type_name(obj)} shape={tuple(shape)!r}" + (f" dtype={dtype}" if dtype is not None else "")
    if type(obj).__name__ == "Series":
        text += f" name={obj.name!r}" if obj.name is not None else ""
        if full:
            values = [_scalar(v) or type_name(v) for v in obj.iloc[:5].tolist()]
            text += f" first values: [{_short(', '.join(values))}]"
    elif full and hasattr(obj, "flat"):
        # flat[:n] copies n elements whatever the array's size or layout.
        values = [_scalar(v) or type_name(v) for v in obj.flat[:5].tolist()]
        text += f" first values: [{_short(', '.join(values))}]"
    return text


def _container(name: str, obj: Any, full: bool) -> str:
    kind = type_name(obj)
    n = len(obj)
    if isinstance(obj, dict):
        items = list(itertools.islice(obj.items(), SAMPLE_ITEMS if full else 3))
        parts = []
        for k, v in items:
            key = _scalar(k) or type_name(k)
            hidden = isinstance(k, str) and is_secret_name(k)
            value = MASK if hidden else (_scalar(v) or _brief(v))
            parts.append(f"{key}: {value}")
        return f"{name}: {kind} len={n} {{{', '.join(parts)}{', …' if n > len(items) else ''}}}"
    if isinstance(obj, (set, frozenset)):
        # Set order depends on hashing; the sample would differ between runs.
        return f"{name}: {kind} len={n}"
    sample = [(_scalar(v) or _brief(v)) for v in itertools.islice(obj, SAMPLE_ITEMS if full else 3)]
    return f"{name}: {kind} len={n} [{', '.join(sample)}{', …' if n > len(sample) else ''}]"


def _brief(obj: Any) -> str:
    """A nested value: its type and size, never its contents."""
    if isinstance(obj, (list, tuple, dict, set, frozenset)):
        return f"{type_name(obj)}(len={len(obj)})"
    shape = getattr(type(obj), "shape", None) is not None and getattr(obj, "shape", None)
    return f"{type_name(obj)}{tuple(shape)!r}" if isinstance(shape, tuple) else type_name(obj)


def _callable(name: str, obj: Any, full: bool) -> str:
    is_class = isinstance(obj, type)
    own = getattr(obj, "__module__", None) == "__main__"  # defined in the notebook
    if not own:
        return f"{name}: {'class' if is_class else 'function'} from {getattr(obj, '__module__', '?')}"
    try:
        signature = str(inspect.signature(obj))
    except (TypeError, ValueError):
        signature = "(…)"
    doc = (inspect.getdoc(obj) or "").strip().splitlines()
    head = f"{name}: {'class ' + name if is_class else 'def ' + name}{_short(signature, 120)}"
    if doc:
        head += f" — {_short(doc[0], 100)}"
    if is_class and full:
        methods = sorted(m for m, v in vars(obj).items() if callable(v) and not m.startswith("_"))[:10]
        head += f"\n  methods: {', '.join(methods)}" if methods else ""
    return head


def describe(name: str, obj: Any, full: bool = False) -> str:
    """One bounded line (a few, when ``full``) about a variable; never raises."""
    try:
        return _describe(name, obj, full)
    except Exception:  # a hostile object must not break the request
        try:
            return f"{name}: {type_name(obj)}"
        except Exception:
            return f"{name}: <object>"


def _describe(name: str, obj: Any, full: bool) -> str:
    if is_secret_name(name):
        return f"{name}: {type_name(obj)} (value hidden: the name looks like a secret)"
    scalar = _scalar(obj)
    if scalar is not None:
        if isinstance(obj, (str, bytes)):
            return f"{name}: {type_name(obj)} len={len(obj)} = {scalar}"
        return f"{name}: {type_name(obj)} = {scalar}"
    if _is_frame(obj):
        return _frame(name, obj, full)
    # Looked up on the type, not the instance: a __getattr__ that answers
    # anything (or slowly) is not asked.
    if getattr(type(obj), "shape", None) is not None and not isinstance(obj, type):
        return _array(name, obj, full)
    if isinstance(obj, (list, tuple, dict, set, frozenset, range)):
        return _container(name, obj, full)
    if isinstance(obj, (types.FunctionType, type)):
        return _callable(name, obj, full)
    return f"{name}: {type_name(obj)}"
