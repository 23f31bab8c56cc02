"""Candidates that must agree: consensus by execution.

A small model's code that runs is not therefore right; wrong answers are many and varied, right
ones agree.  So after the first attempt that works (held: neither committed nor undone,
``run_attempt(hold=True)``) the request is asked again, sampled, for up to ``candidates - 1`` more
solutions, each run on the state the request found and its result compared
(``core/sameresult.py``).  Two that agree stop the vote early.  The largest group wins (a tie: the
first candidate's, asked at the user's temperature); its code is applied once -- the candidate in
the kernel committed when it is of that group, else the winner run again -- and the others travel
with the outcome, for "use this one".

A candidate that gives no code, raises or is refused is not counted (the first had the retries);
nor is one whose code would need the person's approval.  Each starts from the request's state: the
one before is rolled back (names; the environment, ``sys.path``, patched modules; files in the
working folder), so a file a candidate writes is written once, by the winner.  Code with effects a rollback cannot undo
(network, processes, files outside the folder or over the cap: by the scan, or as the transaction
saw them) runs once: one candidate, said so.  So does a result with nothing to compare (a figure).

The candidate in the kernel stays held while the model writes the next one (on a CPU the long part
of the check) and is rolled back when the reply is in, so a Stop then (``KeyboardInterrupt`` at the
call) ends the check, not the request: the result shown is kept, not run again, not checked.  A
Stop while a candidate's code runs, or any other exception at the call, rolls back what is held
and stops the request.

The others are asked in one request (``n``) where the endpoint takes it, else one by one (cached
prefix); the answer in words is asked before them (core/loop.py).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from jupyter_ai_ci.core import sameresult
from jupyter_ai_ci.core.attempt import run_attempt
from jupyter_ai_ci.core.fixes import restart_note
from jupyter_ai_ci.core.grouping import Ran, grouped, groups, result_of
from jupyter_ai_ci.core.mends import Mends
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.events import (
    NO_ANSWER,
    Action,
    Attempt,
    CallModel,
    Commit,
    Consensus,
    Group,
    Message,
    ModelReply,
    Notice,
    Rollback,
    Usage,
)
from jupyter_ai_ci.events.outcome import sureness as sureness  # the drivers read it here
from jupyter_ai_ci.safety import policy
from jupyter_ai_ci.safety.risktable import UNDONE_BY_ROLLBACK
from jupyter_ai_ci.text import python_blocks

# Risk kinds whose effects outlive a rollback: such code runs once, as one candidate.
LASTING = frozenset({"process", "delete", "write", "network", "shell", "ctypes", "exit"})


class _StopCheck(Exception):
    """A Stop came while the model wrote a candidate (not while one's code ran)."""


@dataclass
class Vote:
    """What the vote came to: the applied attempt (None: applying the winner failed), every
    attempt it ran after the first, and what its model calls cost."""

    winner: Attempt | None
    consensus: Consensus
    attempts: list[Attempt] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    stopped: bool = False  # a Stop ended the check: the result shown is kept, not checked


def lasting_effects(code: Sequence[str], settings: LoopSettings) -> list[str]:
    """What in ``code`` a rollback cannot undo (the policy's own scan)."""
    trees, bad = policy.parse_blocks(tuple(code))
    if bad is not None:
        return []
    found = policy.scan_trees(trees, settings.policy.moved, settings.policy.bindings, settings.policy.folders)
    return sorted({r.name for r in found.risks if r.kind in LASTING and r.name not in UNDONE_BY_ROLLBACK})


def vote(first: Attempt, request: Sequence[Message], settings: LoopSettings, approved: set[tuple[str, ...]],
         mends: Mends, over_budget: Callable[[], str], stopped: bool = False) -> Generator[Action, Any, Vote]:
    """``first``: the held attempt that worked; ``request``: what each candidate is asked anew;
    ``stopped``: a Stop came before (core/loop.py), no other is asked.  Returns with the winner committed."""
    k, step = settings.candidates, first.step
    out = Vote(first, Consensus(k))
    # What the scan says cannot be undone, else what the transaction saw it could not undo as the
    # candidate ran (a file over the cap, a write outside the folder): the next would not start clean.
    effects = lasting_effects(first.code, settings) or list(first.lasting)
    key, shown = yield from result_of(first)
    ran = [Ran(1, first, key, shown)]
    asks_always = settings.policy.mode == "ask"  # every other candidate would be asked about: none runs
    took = sum(r.seconds for r in first.results)
    slow = bool(settings.check_within) and took > settings.check_within
    if effects or key is None or asks_always or slow:
        yield Commit(first.number, step)
        note = ("has side effects" if not first.lasting or lasting_effects(first.code, settings)
                else f"cannot be undone: {first.lasting[0]}") if effects else "nothing to compare" if key is None else \
            "policy 'ask': every run needs your approval" if asks_always else f"its code took {took:.1f} s"
        out.consensus = Consensus(k, (Group(shown, (1,), first.code),), note=note)
        return out
    if stopped:
        out.stopped = True
        yield Notice("candidate", _stopped_line(ran, ran), step=step)
        return (yield from _apply(out, ran, ran[0], 0, settings, approved))
    yield Notice("candidate", f"candidate 1 of {k}: {shown} — checking…", attempt=first.number, step=step)
    held = [ran[0]]  # the candidate in the kernel, until the next one is about to run (the docstring)
    failed = 0
    waiting: list[str] = []  # candidates that came as other choices of a reply, not yet run
    for place in range(2, k + 1):
        if len(ran) >= 2 and len(grouped(ran)) == 1:
            break  # two agree, and none differs: enough (the choices still waiting are dropped)
        try:
            attempt = yield from _candidate(place, out, first, request, settings, approved, mends.copy(),
                                            over_budget, waiting, held)
        except _StopCheck:
            out.stopped = True
            yield Notice("candidate", _stopped_line(ran, held), step=step)
            break
        except GeneratorExit:
            raise
        except BaseException:  # the request ends: nothing it held may stay in the kernel
            yield from _release(held, step)
            raise
        if attempt is None:  # no more can be asked (the budget, the endpoint): vote with those in
            break
        if isinstance(attempt, str):
            failed += 1
            yield Notice("candidate", f"candidate {place} of {k} {attempt}: not counted", step=step)
            continue
        if attempt.lasting:  # it did what a rollback cannot undo: no later candidate would start clean
            yield Rollback(attempt.number, step)
            failed += 1
            yield Notice("candidate", f"candidate {place} of {k} did what cannot be undone "
                         f"({attempt.lasting[0]}): not counted; no more candidates", step=step)
            break
        key, shown = yield from result_of(attempt)
        held.append(Ran(place, attempt, key, shown))
        ran.append(held[0])
        agrees = [str(r.number) for r in ran[:-1] if sameresult.same(r.key, key)]
        yield Notice("candidate", f"candidate {place} of {k}: {shown} — "
                     + (f"agrees with {', '.join(agrees)}" if agrees else "differs"), attempt=attempt.number, step=step)
    return (yield from _apply(out, ran, held[0] if held else None, failed, settings, approved))


def _stopped_line(ran: list[Ran], held: list[Ran]) -> str:
    """What a Stop during the check comes to (more than one in: they are voted on, as any end)."""
    if len(ran) > 1:
        return f"check stopped: the {len(ran)} candidates in are compared"
    if held:
        return f"check stopped: candidate {held[0].number}'s result is kept, not checked"
    return "check stopped: the result shown is applied again, not checked"


def _release(held: list[Ran], step: int) -> Generator[Action, Any, None]:
    """Roll back the candidate still held, if one is: the next is about to run from the request's state."""
    if held:
        yield Rollback(held.pop().attempt.number, step)


def _candidate(place: int, out: Vote, first: Attempt, request: Sequence[Message], settings: LoopSettings,
               approved: set[tuple[str, ...]], mends: Mends, over_budget: Callable[[], str],
               waiting: list[str], held: list[Ran]) -> Generator[Action, Any, Attempt | str | None]:
    """One more candidate, held when it works; why it does not count (a str); None when no more
    can be asked.  ``waiting``: other choices of an earlier reply, not yet run (paid for: no call,
    no budget to check); when there are none, every candidate still wanted is asked for in one
    request (``n``: the prompt paid once where the endpoint takes it), and the reply's other
    choices wait here.  ``held``: the candidate in the kernel, rolled back once this one's reply
    is in (it stays while the model is asked).  One that raises is fixed as the first step's are: a
    mend made with no call (core/mends.py), else asked anew with the error in words (a small model shown its failed
    code sends it back), within the retries.  Each try is an attempt of its own."""
    k, step, note, fixes = settings.candidates, first.step, "", 0
    while True:
        if waiting and not note:
            yield from _release(held, step)  # no model call to wait for
            text = waiting.pop(0)
            yield Notice("candidate-text", text, step=step)  # shown where a reply's text streams
        else:
            if over_budget():
                yield Notice("candidate", f"candidate {place} of {k} not asked: the token budget", step=step)
                return None
            asked = tuple(request) if not note else (*request[:-1],
                                                     Message("user", f"{request[-1].content}\n\n{note}"))
            try:
                reply: ModelReply = yield CallModel(asked, "candidate", settings.candidate_temperature or None,
                                                    n=1 if note else k - place + 1)
            except KeyboardInterrupt:  # a Stop while the model writes: the check ends, not the request
                raise _StopCheck from None
            if reply.finish_reason == NO_ANSWER:  # the endpoint failed; the driver said why
                return None
            out.requests += 1
            out.usage += reply.usage
            text = reply.text
            if not note:
                waiting[:] = reply.alternatives
            yield from _release(held, step)
        code = python_blocks(text)
        if not code:
            return "gave no code"
        while True:
            number = first.number + len(out.attempts) + 1
            # One request, one approval: the person approved (or the policy let through) the first
            # candidate; another that would need asking is not run, so nobody is asked K times.
            ran = yield from run_attempt(mends.code(code), number, step, settings, approved, hold=True,
                                         may_ask=False)
            if isinstance(ran, str):
                return ran  # refused
            out.attempts.append(ran)
            if ran.ok:
                return ran
            if ran.error is None:
                return "did not finish"
            error = ran.error
            mended = yield from mends.find(ran, step)
            if not mended:
                break
            yield Notice("install", f"candidate {place}: {mended} and running it again (no model call)",
                         attempt=number, step=step)
        if fixes >= settings.retries:
            return f"raised {error.one_line()}"
        fixes += 1
        note = restart_note(ran)
        yield Notice("candidate", f"candidate {place} of {k} raised {error.one_line()} — asking it anew "
                     f"({settings.retries - fixes + 1} {'try' if fixes == settings.retries else 'tries'} left)",
                     attempt=ran.number, step=step)


def _apply(out: Vote, ran: list[Ran], held: Ran | None, failed: int, settings: LoopSettings,
           approved: set[tuple[str, ...]]) -> Generator[Action, Any, Vote]:
    """Commit the winner when it is the candidate in the kernel now; otherwise run it again."""
    k, step = settings.candidates, ran[0].attempt.step
    members = grouped(ran)[0]
    if held is not None and held in members:
        yield Commit(held.attempt.number, step)
        winner: Ran = held
    else:
        if held is not None:
            yield Rollback(held.attempt.number, step)
        winner = members[0]
        number = ran[0].attempt.number + len(out.attempts) + 1
        yield Notice("candidate", f"applying candidate {winner.number} ({len(members)} of {len(ran)})",
                     attempt=number, step=step)
        again = yield from run_attempt(winner.attempt.code, number, step, settings, approved)
        if isinstance(again, str) or not again.ok:
            out.winner = None
        else:
            out.attempts.append(again)
            out.winner = again
    if out.winner is not None and held is winner:
        out.winner = winner.attempt
    out.consensus = Consensus(k, groups(ran, winner), failed=failed, stopped=out.stopped)
    return out

