"""A Plotly figure's spec (``{"data": [...], "layout": {...}}``) in words (``figuretext``).

The spec is what Plotly puts in an output (``application/vnd.plotly.v1+json``) and what a
live figure's ``to_dict()`` returns, so one reader serves the kernel (from the object) and
every executor (from the output a ``fig.show()`` published).  Plotly 6 sends numeric
arrays packed (``{"dtype": "f8", "bdata": base64}``): they are unpacked with the standard
library's ``array``, so no plotting library (nor numpy) is needed to read them.
"""

from __future__ import annotations

import array
import base64
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from jupyter_ai_ci.notebook import figuretext as ft

PLOTLY_MIME = "application/vnd.plotly.v1+json"
# numpy's dtype codes -> the array module's (Plotly packs little-endian)
_CODES = {"f8": "d", "f4": "f", "i1": "b", "u1": "B", "i2": "h", "u2": "H", "i4": "i", "u4": "I",
          "i8": "q", "u8": "Q"}


def values(packed: Any) -> Any:
    """A spec's array: a numpy array where numpy is loaded already (a 100,000-point trace is read
    in a millisecond, not a tenth of a second), else a list.  A packed array is unpacked; dates
    become their text."""
    numpy = sys.modules.get("numpy")
    if packed is None:
        return []
    if isinstance(packed, Mapping):
        code = _CODES.get(str(packed.get("dtype", "")))
        data = packed.get("bdata")
        if code is None or not isinstance(data, str):
            return []
        raw = base64.b64decode(data)
        if numpy is not None:
            return numpy.frombuffer(raw, dtype="<" + str(packed["dtype"]))
        unpacked = array.array(code, raw)
        if sys.byteorder == "big":
            unpacked.byteswap()
        return unpacked.tolist()
    if getattr(getattr(packed, "dtype", None), "kind", "") in ("M", "m", "O", "U", "S"):
        return packed.astype(str).tolist()
    if numpy is not None and hasattr(packed, "dtype"):
        return packed
    if hasattr(packed, "tolist"):
        packed = packed.tolist()
    return list(packed) if isinstance(packed, (list, tuple)) else [packed]


def _list(column: Any) -> list[Any]:
    return column.tolist() if hasattr(column, "tolist") else list(column)  # type: ignore[no-any-return]


def _numeric(column: Any) -> bool:
    if hasattr(column, "dtype"):
        return bool(column.dtype.kind in "iuf")
    return bool(len(column)) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in column)


def _span(column: Any) -> tuple[str, str] | None:
    if hasattr(column, "dtype") and column.dtype.kind in "iuf" and len(column):
        numpy = sys.modules["numpy"]
        finite = column[numpy.isfinite(column)]
        return (ft.num(float(finite.min())), ft.num(float(finite.max()))) if finite.size else None
    return ft.span(list(column))


def _peak(xs: Any, ys: Any) -> str:
    """The x of the highest y, as text ("" when the ys are not numbers)."""
    if not len(ys) or not _numeric(ys):
        return ""
    if hasattr(ys, "dtype"):
        numpy = sys.modules["numpy"]
        finite = numpy.isfinite(ys)
        if not finite.any():
            return ""
        at = int(numpy.argmax(numpy.where(finite, ys, -numpy.inf)))
    else:
        at = max(range(len(ys)), key=lambda i: ys[i])
    x = xs[at] if at < len(xs) else at
    return ft.num(float(x)) if isinstance(x, (int, float)) or hasattr(x, "dtype") else ft.quoted(str(x), 25)


def _title(value: Any) -> str:
    if isinstance(value, Mapping):
        value = value.get("text", "")
    return str(value or "")


def _axis(layout: Mapping[str, Any], ref: str) -> Mapping[str, Any]:
    # A trace's "x2" lives in layout["xaxis2"].
    found = layout.get(f"{ref[0]}axis{ref[1:]}")
    return found if isinstance(found, Mapping) else {}


def _bars(trace: Mapping[str, Any], axes: tuple[Mapping[str, Any], Mapping[str, Any]]) -> str:
    horizontal = trace.get("orientation") == "h"
    heights = _list(values(trace.get("x" if horizontal else "y")))
    labels = [str(v) for v in values(trace.get("y" if horizontal else "x"))] or [str(i) for i in range(len(heights))]
    pairs = [(lab, float(v)) for lab, v in zip(labels, heights, strict=False) if isinstance(v, (int, float))]
    category = axes[1 if horizontal else 0]
    how = str(category.get("categoryorder", ""))
    if how in ("total ascending", "total descending"):
        pairs.sort(key=lambda p: p[1], reverse=how.endswith("descending"))
    elif how in ("category ascending", "category descending"):
        pairs.sort(key=lambda p: p[0], reverse=how.endswith("descending"))
    direction = "left to right"
    if horizontal:  # a category axis runs upwards unless reversed; said top to bottom, as it reads
        direction = "top to bottom"
        if category.get("autorange") != "reversed":
            pairs.reverse()
    return ft.bars([v for _, v in pairs], [lab for lab, _ in pairs], direction, str(trace.get("name") or ""))


def _trace(trace: Mapping[str, Any], axes: tuple[Mapping[str, Any], Mapping[str, Any]]) -> tuple[str, str]:
    """(kind, its line) for one trace."""
    kind = str(trace.get("type") or "scatter")
    name = str(trace.get("name") or "")
    if kind == "bar":
        return "bars", _bars(trace, axes)
    if kind in ("scatter", "scattergl"):
        xs, ys = values(trace.get("x")), values(trace.get("y"))
        if not len(xs) and len(ys):
            xs = list(range(len(ys)))
        mode = str(trace.get("mode") or ("lines+markers" if len(ys) <= 20 else "lines"))
        label = "line" if "lines" in mode else "points"
        peak = _peak(xs, ys) if label == "line" else ""
        return ("lines" if label == "line" else "points"), ft.series(label, len(ys), _span(xs), _span(ys), name, peak)
    if kind == "pie":
        shares = [float(v) for v in _list(values(trace.get("values"))) if isinstance(v, (int, float))]
        labels = [str(v) for v in values(trace.get("labels"))]
        return "pie", "pie: " + ft.bars(shares, labels[: len(shares)], "in order", name, unit="slice")
    if kind == "histogram":
        data = values(trace.get("x") if trace.get("x") is not None else trace.get("y"))
        return "histogram", ft.series("histogram of", len(data), _span(data), None, name)
    data = next((values(trace[k]) for k in ("z", "y", "x") if trace.get(k) is not None), [])
    return kind, f"{kind}" + (f" {ft.quoted(name, 40)}" if name else "") + f": {len(data)} values"


def describe_spec(spec: Mapping[str, Any]) -> str:
    """The description of a Plotly figure spec; "" when it is not one."""
    traces = spec.get("data")
    layout = spec.get("layout") or {}
    if not isinstance(traces, Sequence) or not isinstance(layout, Mapping):
        return ""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for trace in traces:
        if isinstance(trace, Mapping):
            groups.setdefault((str(trace.get("xaxis") or "x"), str(trace.get("yaxis") or "y")), []).append(trace)
    title = _title(layout.get("title"))
    count = f"{len(traces)} trace{'' if len(traces) == 1 else 's'}"
    header = f"Plotly figure{' ' + ft.quoted(title) if title else ''}: {count}"
    return ft.figure_text(header, (_block(i, refs, group, layout) for i, (refs, group) in enumerate(groups.items(), 1)),
                          len(groups))


def _block(index: int, refs: tuple[str, str], traces: Sequence[Mapping[str, Any]],
           layout: Mapping[str, Any]) -> list[str]:
    axes = (_axis(layout, refs[0]), _axis(layout, refs[1]))
    described = [_trace(t, axes) for t in traces[: ft.MAX_SERIES]]
    kinds = ", ".join(dict.fromkeys(kind for kind, _ in described))
    lines = [f"axes {index}: {kinds}"]
    labels = [f"{name} {ft.quoted(_title(axis.get('title')))}" for name, axis in zip(("x label", "y label"), axes,
                                                                                     strict=True)
              if _title(axis.get("title"))]
    if labels:
        lines.append("; ".join(labels))
    names = [str(t["name"]) for t in traces if t.get("name") and t.get("showlegend") is not False]
    if len(names) > 1 or (names and layout.get("showlegend")):
        lines.append("legend: " + ", ".join(ft.quoted(n, 30) for n in names[:8]) + (" …" if len(names) > 8 else ""))
    lines.extend(line for _, line in described)
    lines.append(ft.many("traces", len(described), len(traces)))
    return lines
