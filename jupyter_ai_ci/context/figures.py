"""A live figure described in the kernel (issue #40): what a model that cannot see it reads.

Matplotlib -- and so seaborn and pandas' ``.plot``, which draw with it -- is read from the
Figure's artists after it was drawn for display: per axes the title, labels, first and last
tick labels, legend, and the bars (values, order), lines and points (count, ranges) it holds.
A Plotly figure is read from its spec (``notebook/plotlyspec.py``).  The words are
``notebook/figuretext.py``'s, bounded to a few hundred tokens.

Imported by ``context/figurehook.py`` only when a figure is displayed: the library is in
``sys.modules`` then (its object is at hand), so nothing is imported that the user had not.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from jupyter_ai_ci.notebook import figuretext as ft
from jupyter_ai_ci.notebook.plotlyspec import describe_spec


def describe(obj: Any) -> str:
    """The description of a displayed object that is a figure; "" for anything else."""
    module = type(obj).__module__
    try:
        if module.startswith("matplotlib."):
            return _matplotlib(obj)
        if module.startswith("plotly.") and hasattr(obj, "to_dict"):
            return describe_spec(obj.to_dict())
    except Exception as exc:  # noqa: BLE001 -- a figure the describer cannot read is still shown
        return f"{type(obj).__name__}: {ft.NOT_DESCRIBED} ({type(exc).__name__}: {str(exc)[:80]})"
    return ""


def _matplotlib(obj: Any) -> str:
    animation = sys.modules.get("matplotlib.animation")
    if animation is not None and isinstance(obj, animation.Animation):
        return f"an animation: {ft.NOT_DESCRIBED}"
    figure = sys.modules.get("matplotlib.figure")
    if figure is None or not isinstance(obj, figure.FigureBase):
        return ""
    canvas = getattr(obj, "canvas", None)
    if type(canvas).__module__.startswith("ipympl"):
        return f"an interactive figure (ipympl): {ft.NOT_DESCRIBED}"
    axes = [ax for ax in obj.get_axes() if ax.get_visible()]
    title = _suptitle(obj)
    header = (f"Matplotlib figure{' ' + ft.quoted(title) if title else ''}: "
              f"{len(axes)} axes" + (f", legend {_legend(obj.legends[0])}" if getattr(obj, "legends", None) else ""))
    return ft.figure_text(header, (_axes(i, ax) for i, ax in enumerate(axes, 1)), len(axes))


def _suptitle(fig: Any) -> str:
    text = getattr(fig, "_suptitle", None)
    return str(text.get_text()) if text is not None else ""


def _legend(legend: Any) -> str:
    entries = [t.get_text() for t in legend.get_texts()]
    return ", ".join(ft.quoted(e, 30) for e in entries[:8]) + (" …" if len(entries) > 8 else "")


def _axes(index: int, ax: Any) -> list[str]:
    lines: list[str] = []
    kinds: list[str] = []
    bars = [c for c in ax.containers if type(c).__name__ == "BarContainer"]
    in_bars = {id(p) for c in bars for p in c.patches}
    if bars:
        kinds.append("bars")
        lines.extend(_bars(ax, c) for c in bars[: ft.MAX_SERIES])
        lines.append(ft.many("bar groups", min(len(bars), ft.MAX_SERIES), len(bars)))
    drawn = [line for line in ax.get_lines() if line.get_visible() and len(line.get_xydata())]
    if bars:  # seaborn's and errorbar()'s whiskers are two-point lines across a bar: counted, not described
        whiskers = [line for line in drawn if _whisker(line)]
        drawn = [line for line in drawn if not _whisker(line)]
        lines.append(f"{len(whiskers)} error bars" if whiskers else "")
    if drawn:
        kinds.append("lines")
        lines.extend(_line(line) for line in drawn[: ft.MAX_SERIES])
        lines.append(ft.many("lines", min(len(drawn), ft.MAX_SERIES), len(drawn)))
    points = [c for c in ax.collections if type(c).__name__ == "PathCollection"]
    if points:
        kinds.append("points")
        lines.extend(_points(c) for c in points[: ft.MAX_SERIES])
        lines.append(ft.many("point sets", min(len(points), ft.MAX_SERIES), len(points)))
    others = _others(ax, in_bars)
    if others:
        kinds.append("other")
        lines.append(others)
    head = [f"axes {index}: {', '.join(kinds) or 'empty'}"]
    words = [f"title {ft.quoted(t)}" for t in (ax.get_title("left"), ax.get_title(), ax.get_title("right")) if t]
    words += [f"{name} {ft.quoted(text)}" for name, text in (("x label", ax.get_xlabel()), ("y label", ax.get_ylabel()))
              if text]
    ticks = (ft.ticks("x", _labels(ax.get_xticklabels())), ft.ticks("y", _labels(ax.get_yticklabels())))
    words += [t for t in ticks if t]
    if words:
        head.append("; ".join(words))
    legend = ax.get_legend()
    if legend is not None:
        head.append(f"legend: {_legend(legend)}")
    return head + lines


def _labels(texts: Sequence[Any]) -> list[str]:
    return [str(t.get_text()) for t in texts]


def _bars(ax: Any, container: Any) -> str:
    import numpy as np  # matplotlib's own dependency: loaded with it

    patches = list(container.patches)
    horizontal = getattr(container, "orientation", None) == "horizontal"
    if not horizontal and getattr(container, "orientation", None) is None and patches:
        horizontal = _looks_horizontal(patches)
    if horizontal:
        where = [p.get_y() + p.get_height() / 2 for p in patches]
        sizes = [p.get_width() for p in patches]
        ticks = dict(zip(np.round(ax.get_yticks(), 6).tolist(), _labels(ax.get_yticklabels()), strict=False))
        down = not bool(ax.yaxis_inverted())  # read top to bottom: the highest y first unless inverted
        direction = "top to bottom"
    else:
        where = [p.get_x() + p.get_width() / 2 for p in patches]
        sizes = [p.get_height() for p in patches]
        ticks = dict(zip(np.round(ax.get_xticks(), 6).tolist(), _labels(ax.get_xticklabels()), strict=False))
        down = bool(ax.xaxis_inverted())
        direction = "left to right"
    drawn = sorted(zip(where, sizes, strict=True), key=lambda p: p[0], reverse=down)
    labels = [ticks.get(round(float(w), 6), "")[:25] for w, _ in drawn]
    if sum(1 for lab in labels if lab) < len(labels) // 2:  # no category ticks under the bars (a histogram)
        labels = [ft.num(w) for w, _ in drawn] if len(drawn) <= ft.MAX_LISTED else ["" for _ in drawn]
    return ft.bars([float(s) for _, s in drawn], labels, direction, _name(container.get_label()))


def _looks_horizontal(patches: Sequence[Any]) -> bool:
    # Containers of older matplotlib have no orientation: bars sharing a left edge lie down.
    return len(patches) > 1 and len({p.get_x() for p in patches}) == 1 and len({p.get_y() for p in patches}) > 1


def _whisker(line: Any) -> bool:
    xy = line.get_xydata()
    return len(xy) == 2 and bool(xy[0][0] == xy[1][0] or xy[0][1] == xy[1][1])


def _name(label: Any) -> str:
    label = str(label or "")
    return "" if label.startswith("_") else label


def _line(line: Any) -> str:
    import numpy as np

    xy = np.asarray(line.get_xydata(), dtype=float)
    xs, ys = xy[:, 0], xy[:, 1]
    finite = np.isfinite(ys) & np.isfinite(xs)
    peak = ""
    if finite.any():
        at = int(np.nanargmax(np.where(finite, ys, np.nan)))
        peak = _tick_at(line.axes, xs[at])
    return ft.series("line", len(xy), _range(xs), _range(ys), _name(line.get_label()), peak)


def _tick_at(ax: Any, x: float) -> str:
    """The x tick label at ``x`` when one is there (a category, a date), else the number."""
    import numpy as np

    positions = np.asarray(ax.get_xticks(), dtype=float)
    labels = _labels(ax.get_xticklabels())
    if len(positions) == len(labels):
        hit = np.flatnonzero(np.isclose(positions, x))
        if hit.size and labels[hit[0]].strip() and not _number(labels[hit[0]]):
            return ft.quoted(labels[hit[0]], 25)
    return ft.num(float(x))


def _number(label: str) -> bool:
    try:
        float(label.replace("\u2212", "-").replace(",", ""))
    except ValueError:
        return False
    return True


def _range(values: Any) -> tuple[str, str] | None:
    import numpy as np

    finite = values[np.isfinite(values)]
    if not finite.size:
        return None
    return ft.num(float(finite.min())), ft.num(float(finite.max()))


def _points(collection: Any) -> str:
    import numpy as np

    xy = np.asarray(collection.get_offsets(), dtype=float).reshape(-1, 2)
    return ft.series("points", len(xy), _range(xy[:, 0]), _range(xy[:, 1]), _name(collection.get_label()))


def _others(ax: Any, in_bars: set[int]) -> str:
    """What else is drawn, counted by kind: pie slices, filled areas, images, heatmaps."""
    counts: dict[str, int] = {}
    for patch in ax.patches:
        if id(patch) not in in_bars:
            kind = "pie slice" if type(patch).__name__ == "Wedge" else f"{type(patch).__name__} patch"
            counts[kind] = counts.get(kind, 0) + 1
    for collection in ax.collections:
        kind = type(collection).__name__
        if kind != "PathCollection":
            counts[kind] = counts.get(kind, 0) + 1
    shapes = [f"image {'×'.join(str(n) for n in im.get_array().shape[:2])}" for im in ax.images[:3]]
    said = [f"{n} {kind}{'' if n == 1 else 's'}" for kind, n in counts.items()] + shapes
    return ("also: " + ", ".join(said[:6])) if said else ""
