"""A figure in words: the one text format of a chart's description (issue #40).

A model that cannot see a chart reads it here: per axes the title, the labels, the ticks,
the legend, and what is drawn -- bars with their values and order, lines and points with
their count and range.  Matplotlib figures (``context/figures.py``, in the kernel, from the
live object) and Plotly specs (``notebook/plotlyspec.py``, from the object or from the
output's JSON) are both said in these words, so a model learns one format.

Pure text from plain numbers: no plotting library is imported here.  A description is
at most ``MAX_TOKENS`` prompt tokens whatever the figure holds: counts and ranges, never
the data (a 100,000-point line is four numbers), the first axes and then a count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

# The output metadata key the kernel puts a figure's description under (context/figures.py),
# read by every executor when it records the output (executors/capture.py).
FIGURE_KEY = "jupyter_ai_ci/figure"
MAX_TOKENS = 300  # of one figure's description
MAX_AXES = 4  # described in full; the others are counted
MAX_LISTED = 12  # bars listed with their values; more are summarised
MAX_SERIES = 5  # lines or point sets of one axes described; more are counted
NOT_DESCRIBED = "not described"
# A picture that is no figure (``IPython.display.Image``): said by its size only, so a model that
# cannot see it knows it is there, and that it cannot answer from it (core/answer.py).
NOT_A_CHART = "not a chart"


def picture(size: tuple[int, int] | None) -> str:
    """The words for a displayed picture that no figure drew: "an image 640×480 px, not a chart"."""
    return f"an image {size[0]}×{size[1]} px, {NOT_A_CHART}" if size else f"an image, {NOT_A_CHART}"


def num(value: float) -> str:
    """A number as a chart shows it: four significant digits, no float noise."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    text = f"{value:.4g}"
    return text[:-2] if text.endswith(".0") else text


def order(values: Sequence[float]) -> str:
    """How a sequence of bar values runs, in the order they are drawn."""
    if len(values) < 2:
        return ""
    pairs = list(zip(values, values[1:], strict=False))
    if all(a == b for a, b in pairs):
        return "all equal"
    if all(a <= b for a, b in pairs):
        return "ascending"
    if all(a >= b for a, b in pairs):
        return "descending"
    return "not sorted"


def quoted(text: str, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def ticks(axis: str, labels: Sequence[str]) -> str:
    shown = [t for t in labels if t.strip()]
    if not shown:
        return ""
    if len(shown) == 1:
        return f"{axis} ticks {quoted(shown[0], 30)}"
    return f"{axis} ticks {quoted(shown[0], 30)} … {quoted(shown[-1], 30)} ({len(shown)})"


def bars(values: Sequence[float], labels: Sequence[str], direction: str, name: str = "", unit: str = "bar") -> str:
    """Bars drawn in ``direction`` ("left to right", "top to bottom"): values, order, extremes."""
    n = len(values)
    head = f"{n} {unit}{'' if n == 1 else 's'}" + (f" {quoted(name, 40)}" if name else "")
    if not n:
        return head
    shown = [f"{lab}={num(v)}" if lab else num(v) for lab, v in zip(labels, values, strict=True)]
    if n <= MAX_LISTED:
        listed = ", ".join(shown)
    else:
        listed = f"{', '.join(shown[:3])}, …, {', '.join(shown[-3:])}"
    high = max(range(n), key=lambda i: values[i])
    low = min(range(n), key=lambda i: values[i])
    ran = order(values)
    text = f"{head} {direction}: {listed}"
    if ran:
        text += f"; {ran}"
    if n > 2:
        text += f"; largest {shown[high]}, smallest {shown[low]}"
    return text


def span(values: Sequence[object]) -> tuple[str, str] | None:
    """The range of a series' data as text: lowest and highest number, or for text (categories,
    dates as strings) the first and the last; None when empty."""
    if not values:
        return None
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) == len(values):
        finite = [v for v in numbers if math.isfinite(v)] or numbers
        return num(min(finite)), num(max(finite))
    return quoted(str(values[0]), 25), quoted(str(values[-1]), 25)


def series(kind: str, count: int, xs: tuple[str, str] | None, ys: tuple[str, str] | None,
           name: str = "", peak: str = "") -> str:
    """A line or a set of points: how many, the ranges of its data, where it peaks (the x of
    the highest y, already as text)."""
    text = f"{kind}" + (f" {quoted(name, 40)}" if name else "") + f": {count} point{'' if count == 1 else 's'}"
    if xs is not None:
        text += f", x {xs[0]}…{xs[1]}"
    if ys is not None:
        text += f", y {ys[0]}…{ys[1]}"
    if peak:
        text += f", highest at x={peak}"
    return text


def many(kind: str, described: int, total: int) -> str:
    return f"… and {total - described} more {kind}" if total > described else ""


def figure_text(header: str, blocks: Iterable[Sequence[str]], total_axes: int, notes: Sequence[str] = ()) -> str:
    """The description: ``header``, one block of lines per axes (the first ``MAX_AXES``), the
    axes not described counted, ``notes`` last; cut at ``MAX_TOKENS`` with a marker."""
    lines = [header]
    described = 0
    for block in blocks:
        if described == MAX_AXES:
            break
        described += 1
        lines.extend(line for line in block if line)
    if total_axes > described:
        lines.append(f"… and {total_axes - described} more axes, not described")
    lines.extend(notes)
    return fit(lines)


def fit(lines: Sequence[str], budget: int = MAX_TOKENS) -> str:
    """As many whole lines as ``budget`` tokens hold, then how many were left out; a line longer
    than the whole budget is cut."""
    from jupyter_ai_ci.tokens import count_tokens  # not at import: the kernel tracker imports FIGURE_KEY

    kept: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        cost = count_tokens(line) + 1
        if used + cost <= budget - 10:  # room for the marker
            kept.append(line)
            used += cost
            continue
        if not kept:  # one huge line (a title of 10,000 characters): its start
            kept.append(line[: budget * 2])
            index += 1
        left = len(lines) - index
        if left:
            kept.append(f"… {left} more line{'' if left == 1 else 's'} left out")
        break
    return "\n".join(kept)
