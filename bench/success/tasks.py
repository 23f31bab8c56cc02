"""What a task is, and how an answer is checked against its reference solution.

A task is a request (as a user would write it, naming the file and the shape
of ``answer``), a reference solution, and a checker.  The expected value is
computed here by running the reference on the generated CSVs, so a checker
never hard-codes numbers that would silently go stale when the data changes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .answer import to_jsonable

Checker = Callable[[Any, Any], bool]

ANSWER_NOTE = " Store the result in a variable named `answer`."


def close(got: Any, want: Any, rel: float = 1e-3, abs_: float = 1e-3) -> bool:
    """Numbers within tolerance, recursively through dicts and lists; others equal."""
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if math.isnan(want):
            return math.isnan(got)
        return math.isclose(got, want, rel_tol=rel, abs_tol=abs_)
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(
            close(got[k], want[k], rel, abs_) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            close(g, w, rel, abs_) for g, w in zip(got, want, strict=True))
    return bool(got == want)


def same_set(got: Any, want: Any) -> bool:
    return isinstance(got, list) and sorted(map(repr, got)) == sorted(map(repr, want))


def _axes(answer: Any) -> list[dict[str, Any]]:
    if isinstance(answer, dict) and isinstance(answer.get("figure"), list):
        return list(answer["figure"])
    return []


def bars_match(got: Any, want: Any) -> bool:
    """A bar chart drawing the expected heights, in any order."""
    got_axes, want_axes = _axes(got), _axes(want)
    if not got_axes or not want_axes:
        return False
    heights = sorted(h for ax in got_axes for h in ax["bars"])
    return close(heights, sorted(want_axes[0]["bars"]), rel=1e-2, abs_=0.5)


def line_matches(got: Any, want: Any) -> bool:
    """Some line draws the expected values (a title mentioning the topic is not checked)."""
    target = want_axes[0]["lines"][0] if (want_axes := _axes(want)) else None
    return target is not None and any(close(line, target, rel=1e-2, abs_=0.5)
                                      for ax in _axes(got) for line in ax["lines"])


def bar_count(n: int) -> Checker:
    return lambda got, want: any(len(ax["bars"]) == n for ax in _axes(got))


@dataclass(frozen=True)
class Task:
    id: str
    category: str
    prompt: str  # without the ANSWER_NOTE, which request() adds
    reference: str  # Python run in the data directory; sets `answer`
    check: Checker = field(default=close)
    # Earlier requests in the same notebook, asked first and not graded (followups.py): each a
    # request and the code the scripted model answers it with.
    before: tuple[tuple[str, str], ...] = ()

    def request(self) -> str:
        return self.prompt.strip() + ANSWER_NOTE

    def expected(self, data_dir: Path) -> Any:
        """The reference answer, as JSON-able data (cached per data directory)."""
        key = (self.id, str(data_dir))
        if key not in _EXPECTED:
            _EXPECTED[key] = to_jsonable(run_reference(self.reference, data_dir))
        return _EXPECTED[key]

    def passes(self, got: Any, data_dir: Path) -> bool:
        try:
            return bool(self.check(got, self.expected(data_dir)))
        except Exception:  # a malformed answer is a wrong answer, not a harness crash
            return False


_EXPECTED: dict[tuple[str, str], Any] = {}


def run_reference(code: str, data_dir: Path) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    before = os.getcwd()
    os.chdir(data_dir)
    try:
        namespace: dict[str, Any] = {}
        exec(compile(code, "<reference>", "exec"), namespace)
        return namespace["answer"]
    finally:
        os.chdir(before)
        plt.close("all")
