"""Whether a chart contradicts the request that asked for it (issue #40): one sentence, or "".

An attempt whose code ran but whose chart shows the opposite of what was asked -- "largest
first" and the bars ascend -- is a failed attempt, with this sentence as its error, so the
loop's ordinary fix path runs, bounded by the retries.  The chart is read from its
description (``notebook/figuretext.py``), never from the picture.

The rule is kept small so that a person can predict it (docs/guide.md says it):

- **Order of bars.**  A request that asks for the largest first ("largest first", "highest
  to lowest", "descending", "in decreasing order" ...) is contradicted by bars that ascend or
  are not sorted, in the order they are read (left to right, or top to bottom for horizontal
  bars); one that asks for the smallest first, the other way round; one that asks only
  "sorted", by bars that are not sorted.  An axes with more than one series of bars (grouped
  bars) is not checked, nor a histogram (its order is its bins), nor an order by name, date or
  time ("alphabetically", "sorted by date" ...): a description holds the bars' values,
  not what their labels mean.  A request that does not ask for an order is never flagged.
- **Axes swapped.**  A request that puts one name on the x axis and another on the y axis
  ("region on the x axis", "y = revenue") is contradicted by an x axis labelled with the y's
  name, or a y axis labelled with the x's.  Only a swap is flagged: a label that is some other
  text ("Revenue (USD)", "count") may well be right.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jupyter_ai_ci.events import ErrorInfo, ExecutionResult

# The error of an attempt whose chart contradicts the request: said like an exception's name,
# so the notices, the summary and the fix read it as they read any failure.
CHART_ENAME = "ChartMismatch"

_W = r"[a-z_][\w.]*"  # one name as a request writes it: revenue, total_sales, df.col
_BIGGEST = r"(?:largest|biggest|highest|greatest|tallest|most)"
_SMALLEST = r"(?:smallest|lowest|least|fewest|shortest)"
_DOWN = re.compile(
    rf"\b{_BIGGEST}(?:\s+{_W})?\s+first\b|\b{_BIGGEST}\s+to\s+(?:the\s+)?{_SMALLEST}\b|\bdescending\b"
    r"|\bdecreasing\s+order\b|\b(?:sort|sorted|order|ordered)\s+(?:[\w,]+\s+){0,3}?(?:in\s+)?decreasing\b"
    r"|\breverse\s+sorted\b|\bsorted\s+in\s+reverse\b")
_UP = re.compile(
    rf"\b{_SMALLEST}(?:\s+{_W})?\s+first\b|\b{_SMALLEST}\s+to\s+(?:the\s+)?{_BIGGEST}\b|\bascending\b"
    r"|\bincreasing\s+order\b|\b(?:sort|sorted|order|ordered)\s+(?:[\w,]+\s+){0,3}?(?:in\s+)?increasing\b")
_SORTED = re.compile(r"\bsorted\b|\bsort\s+(?:the\s+)?(?:bars|values|chart|plot)\b|\bin\s+sorted\s+order\b")
# An order the description cannot check (the labels' meaning), or no order at all.
_NOT_BY_VALUE = re.compile(
    r"\balphabetic|\bchronologic|\bin\s+(?:date|time|calendar|name)\s+order\b"
    r"|\b(?:sort|sorted|sorting|order|ordered|arrange|arranged)\s+(?:\w+\s+){0,3}?by\s+(?:the\s+)?(?:its\s+)?"
    r"(?:date|dates|time|year|years|month|months|week|weeks|day|days|weekday|hour|name|names|label|labels|index|id|key"
    r"|letter)\b|\bhist|\bunsorted\b"
    r"|\b(?:not|don't|do\s+not|never|no\s+need\s+to|without)\s+(?:\w+\s+)?(?:sort|sorting|sorted|order|ordering)\b")

_BAR_LINE = re.compile(r"^(\d+) bars?\b.*? (left to right|top to bottom): .*; (ascending|descending|not sorted)"
                       r"(?:;|$)")
_AXES_HEAD = re.compile(r"^axes \d+:")
_LABEL = re.compile(r"\b([xy]) label (['\"])(.*?)\2(?=;|$)", re.M)

_NAME = r"(?:['\"`](?P<q>[^'\"`]{1,60})['\"`]|(?P<w>" + _W + "))"
_AXIS_ASKED = (
    re.compile(_NAME + r"\s+(?:on|along|as)\s+(?:the\s+)?(?P<axis>[xy])[- ]?axis\b"),
    re.compile(r"\b(?P<axis>[xy])[- ]?axis\s*(?:=|:|is|shows|showing|should\s+be|should\s+show|as|for)\s*"
               + _NAME),
    re.compile(r"(?<![\w.])(?P<axis>[xy])\s*=\s*" + _NAME),
)
_FILLER = frozenset({"the", "a", "an", "it", "its", "them", "and", "with", "values", "value"})


def contradiction(request: str, figures: Sequence[str]) -> str:
    """The sentence that says how the figures (their descriptions) contradict ``request``; ""
    when they do not, or the rule cannot tell."""
    return _order(request.lower(), figures) or _swapped(request, figures)


def chart_error(request: str, results: Sequence[ExecutionResult]) -> ErrorInfo | None:
    """The error of an attempt that ran cleanly but whose figures contradict ``request``."""
    why = contradiction(request, [f for r in results for f in r.figures])
    return ErrorInfo(CHART_ENAME, why, "") if why else None


def asked_order(request: str) -> str:
    """Which order of bars ``request`` asks for: "down" (largest first), "up", "sorted" or ""."""
    text = " ".join(request.lower().split())
    if _NOT_BY_VALUE.search(text):
        return ""
    down, up = bool(_DOWN.search(text)), bool(_UP.search(text))
    if down != up:
        return "down" if down else "up"
    if down and up:  # "largest to smallest ... ascending": it cannot be told which is meant
        return ""
    return "sorted" if _SORTED.search(text) else ""


_WORDS = {"down": "largest first", "up": "smallest first", "sorted": "them sorted"}
_WRONG = {"down": ("ascending", "not sorted"), "up": ("descending", "not sorted"), "sorted": ("not sorted",)}
_SAID = {"ascending": "the bars ascend", "descending": "the bars descend", "not sorted": "the bars are not sorted"}


def _order(request: str, figures: Sequence[str]) -> str:
    asked = asked_order(request)
    if not asked:
        return ""
    for figure in figures:
        for bars in _single_bar_series(figure):
            match = _BAR_LINE.match(bars)
            if match and match.group(3) in _WRONG[asked]:
                return (f"{_SAID[match.group(3)]} from {match.group(2)}, "
                        f"but the request asked for {_WORDS[asked]}")
    return ""


def _single_bar_series(figure: str) -> list[str]:
    """The bar lines of each axes that holds one series of bars (grouped bars are not checked)."""
    found: list[str] = []
    block: list[str] = []
    for line in [*figure.splitlines(), "axes 0:"]:
        if _AXES_HEAD.match(line):
            bars = [b for b in block if _BAR_LINE.match(b)]
            if len(bars) == 1 and not any(b.startswith("… and") and "bar groups" in b for b in block):
                found.extend(bars)
            block = []
        else:
            block.append(line)
    return found


def _norm(name: str) -> str:
    return " ".join(re.sub(r"[_\-]", " ", name.lower()).split())


def asked_axes(request: str) -> dict[str, str]:
    """The names ``request`` puts on the x and y axes ("region on the x axis", "y=revenue")."""
    asked: dict[str, str] = {}
    for pattern in _AXIS_ASKED:
        for match in pattern.finditer(request.lower()):
            name = _norm(match.group("q") or match.group("w") or "")
            if name and name not in _FILLER:
                asked.setdefault(match.group("axis"), name)
    return asked


def _swapped(request: str, figures: Sequence[str]) -> str:
    asked = asked_axes(request)
    if len(asked) < 2 or asked["x"] == asked["y"]:
        return ""
    other = {"x": "y", "y": "x"}
    for figure in figures:
        for axis, _, label in _LABEL.findall(figure):
            shown = _norm(label)
            if shown and shown != asked[axis] and shown == asked[other[axis]]:
                return (f"the {axis} axis is labelled {label!r}, but the request asked for "
                        f"{asked[axis]!r} on the {axis} axis and {asked[other[axis]]!r} on the {other[axis]} axis")
    return ""
