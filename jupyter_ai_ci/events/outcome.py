"""What the loop records of its attempts and returns: the attempts, the candidates' vote, the outcome."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Literal

from jupyter_ai_ci.events.actions import Action, FailureNotes, TransactionReport
from jupyter_ai_ci.events.exchange import ErrorInfo, ExecutionResult, Message, Usage


@dataclass(frozen=True)
class Attempt:
    number: int  # 1-based across the whole run
    step: int
    code: tuple[str, ...]
    results: tuple[ExecutionResult, ...]
    saved: TransactionReport | None = None  # what the checkpoint kept
    undone: TransactionReport | None = None  # what the rollback put back
    notes: FailureNotes | None = None  # what the failed code had in hand, taken before the rollback
    lasting: tuple[str, ...] = ()  # held: what it did that a rollback cannot undo, seen as it ran

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results) and len(self.results) == len(self.code)

    @property
    def error(self) -> ErrorInfo | None:
        for r in self.results:
            if r.error is not None:
                return r.error
        return None


@dataclass(frozen=True)
class Cell:
    """A block of code that succeeded and belongs in the notebook."""

    code: str
    step: int
    result: ExecutionResult


@dataclass(frozen=True)
class Group:
    """Candidates whose results are equal once normalised (core/consensus.py)."""

    shown: str  # the result in one short line: "76", "{'a': 1.5, 'b': 2}"
    candidates: tuple[int, ...]  # which candidates (1-based, in the order they ran)
    code: tuple[str, ...]  # the first one's code: what "use this one" applies

    @property
    def count(self) -> int:
        return len(self.candidates)


@dataclass(frozen=True)
class Consensus:
    """How sure the run is of its result: the candidates that ran cleanly, grouped by result,
    the applied one first.  ``note``: why only one candidate ran ("has side effects", …)."""

    asked: int  # candidates the setting asks for (K)
    groups: tuple[Group, ...] = ()
    failed: int = 0  # candidates that gave no code, raised or were refused: not counted
    note: str = ""
    chosen: int = 0  # a person chose this candidate over the vote ("use this one"; 0: nobody did)
    stopped: bool = False  # a Stop ended the check: with one candidate in, it is kept, not checked

    @property
    def counted(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def agreed(self) -> bool:
        """Two or more candidates, every one with the same result."""
        return len(self.groups) == 1 and self.groups[0].count >= 2

    @property
    def sure(self) -> bool:
        """Shown with a plain ✓: agreed, one candidate by design (side effects, nothing to compare),
        or the one a person chose."""
        return self.agreed or bool(self.chosen) or (self.counted <= 1 and not self.failed and bool(self.note))


@dataclass(frozen=True)
class Outcome:
    status: Literal["success", "answered", "failed", "not-run", "refused", "over-budget"]
    cells: tuple[Cell, ...] = ()
    answer: str = ""  # prose the model ended with (or the whole reply if no code)
    attempts: tuple[Attempt, ...] = ()
    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    early_stop: bool = False  # it ended on the failed code sent back again, its retries spent asking
    messages: tuple[Message, ...] = ()  # the whole conversation, for follow-ups
    reason: str = ""  # for "refused" and "over-budget": one line that says why
    unanswered: bool = False  # an answer in words was wanted, and the model could not give it
    unchecked: tuple[str, ...] = ()  # numbers of the answer in words that no output showed
    consensus: Consensus | None = None  # with candidates (--candidates K > 1): how sure
    # The retries the run did not spend: a failed run ends with some left only when the model said
    # it cannot (``declined``, the reason quotes it).
    retries_left: int = 0
    declined: bool = False

    @property
    def last_error(self) -> ErrorInfo | None:
        for a in reversed(self.attempts):
            if a.error is not None:
                return a.error
        return None


# The agent loop: yields actions, is sent their results, returns the outcome.
LoopGen = Generator[Action, Any, Outcome]


def sureness(c: Consensus) -> str:
    """How sure, in the words every driver shows: ``3 of 3 candidates agree``, ``candidates
    disagree: 76 (2 of 3) vs 36``, ``1 candidate (has side effects)``."""
    n, groups = c.counted, c.groups
    if c.chosen:
        return f"candidate {c.chosen} applied, chosen by you"
    if c.note:
        return f"1 candidate ({c.note})"
    if c.stopped and c.counted <= 1:
        return "not checked: you stopped the check"
    if c.agreed:
        text = f"{n} of {n} candidates agree"
        return text + (f" ({c.failed} more did not run cleanly)" if c.failed else "")
    if len(groups) > 1:
        others = " vs ".join(f"{g.shown}" + (f" ({g.count})" if g.count > 1 else "") for g in groups[1:3])
        more = f" and {len(groups) - 3} more" if len(groups) > 3 else ""
        return f"candidates disagree: {groups[0].shown} ({groups[0].count} of {n}) vs {others}{more}"
    return (f"not confirmed: {c.failed} other candidate{'' if c.failed == 1 else 's'} "
            f"did not run cleanly" if c.failed else "not confirmed")
