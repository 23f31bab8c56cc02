"""The candidates' results, and their groups: what each showed, normalised (``core/sameresult.py``),
and which agree.  Apart from the vote (``core/consensus.py``), which asks for the candidates and
runs them, so that what "the same result" means is read in one place.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_ai_ci.core import sameresult
from jupyter_ai_ci.events import Action, Attempt, ErrorInfo, FailureNotes, Group, Inspect

__all__ = ["Ran", "grouped", "groups", "result_of"]


@dataclass
class Ran:
    number: int  # the candidate's place (1-based)
    attempt: Attempt
    key: sameresult.Key
    shown: str


def result_of(attempt: Attempt) -> Generator[Action, Any, tuple[sameresult.Key, str]]:
    """The candidate's result, while it is still in the kernel: what it showed, else the value
    of the last variable it set (described in the kernel: an ``Inspect`` with no error)."""
    text = sameresult.shown(attempt.results)
    if sameresult.key(text) is None:
        notes = yield Inspect(attempt.code, ErrorInfo("", "", ""), attempt.number, attempt.step)
        text = sameresult.from_notes(notes if isinstance(notes, FailureNotes) else None) or text
    return sameresult.key(text), sameresult.brief(text)


def grouped(ran: Sequence[Ran]) -> list[list[Ran]]:
    """Candidates grouped by result, the largest first (a tie: the group of the earlier candidate,
    so the first, asked at the user's own temperature, wins one).  One joins a group only when it
    is the same as every one in it: a result that leaves a field out is the same as two that
    differ on it, and must not make them one group."""
    found: list[list[Ran]] = []
    for r in ran:
        home = next((g for g in found if all(sameresult.same(m.key, r.key) for m in g)), None)
        home.append(r) if home is not None else found.append([r])
    return sorted(found, key=lambda g: (-len(g), g[0].number))


def groups(ran: Sequence[Ran], applied: Ran) -> tuple[Group, ...]:
    """As ``grouped``, as data, with the applied candidate's code standing for its group."""
    found = grouped(ran)
    return tuple(Group(applied.shown if applied in g else g[0].shown, tuple(r.number for r in g),
                       applied.attempt.code if applied in g else g[0].attempt.code) for g in found)
