"""An answer in words may state only values that the run showed.

The model writes its answer after seeing the output, and a small one still
writes numbers the output does not hold (``@fare_skewness[0.17]`` for 4.79, a
count from the question's own wording).  Every number in the answer is looked
for in what the run showed -- the outputs, the context the model was given and
the request itself -- as the same value or that value rounded as the answer
writes it (``4.8`` for ``4.7913``), or a share written as a percentage
(``51.1 %`` for ``0.511``).  One that is not there is flagged under the answer,
never shown as fact.  Digits 0-9 alone are left out: "3 regions", "the 2 columns"
are counts of what the answer itself names, and flagging them would teach users
to ignore the flag.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

# A number not glued to a word (``col2``, ``Q4``, ``x1.5``): a sign only after a space or start.
_NUMBER = re.compile(r"(?<![\w.])(?:(?<![^\s(\[=:])-)?\d(?:[\d,]*\d)?(?:\.\d+)?(?:[eE][+-]?\d+)?(%| ?percent)?")


def _value(text: str) -> tuple[float, int] | None:
    """The number and the decimals it was written with; None when it is not one."""
    body = text.replace(",", "")
    try:
        value = float(body)
    except ValueError:
        return None
    if "e" in body.lower():
        return value, 12
    decimals = len(body.split(".")[1]) if "." in body else 0
    return value, decimals


def _numbers(text: str) -> Iterable[tuple[str, float, int, bool]]:
    for found in _NUMBER.finditer(text):
        raw = found.group(0)
        percent = bool(found.group(1))
        body = raw.removesuffix("%").removesuffix("percent").strip()
        parsed = _value(body)
        if parsed is not None and math.isfinite(parsed[0]):
            yield raw.strip(), parsed[0], parsed[1], percent


def numbers_in(text: str) -> list[tuple[float, int]]:
    """Every number of ``text`` and the decimals it was written with (a percentage as its number)."""
    return [(value, decimals) for _, value, decimals, _ in _numbers(text)]


def without_numbers(text: str) -> str:
    """``text`` with each number ``numbers_in`` reads blanked (``col2`` is a word: it stays)."""
    return _NUMBER.sub(" ", text)


def _matches(value: float, decimals: int, percent: bool, shown: Iterable[float]) -> bool:
    for seen in shown:
        for candidate in ((seen, seen * 100) if percent else (seen,)):
            if math.isclose(candidate, value, rel_tol=1e-9, abs_tol=1e-12):
                return True
            if decimals < 12 and round(candidate, decimals) == value:  # written rounded
                return True
            # A count written with separators is exact; one written with fewer digits is rounded.
            if decimals == 0 and abs(value) >= 10 and round(candidate) == value:
                return True
    return False


def unsupported_numbers(answer: str, evidence: Iterable[str]) -> tuple[str, ...]:
    """The numbers of ``answer`` that none of ``evidence`` shows, as written, in order, once."""
    shown = {v for text in evidence for _, v, _, _ in _numbers(text)}
    shown |= {-v for v in shown}  # "fell by 12" for a change of -12
    missing: list[str] = []
    for raw, value, decimals, percent in _numbers(answer):
        if decimals == 0 and not percent and 0 <= value <= 9 and "," not in raw:
            continue
        if raw not in missing and not _matches(value, decimals, percent, shown):
            missing.append(raw)
    return tuple(missing)


def flagged(answer: str, missing: tuple[str, ...]) -> str:
    """The answer with its unsupported numbers named under it (the same text in every driver)."""
    if not missing:
        return answer
    listed = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
    which = "this number is" if len(missing) == 1 else "these numbers are"
    return f"{answer}\n\n⚠ Not checked: {which} not in the output the code printed: {listed}."
