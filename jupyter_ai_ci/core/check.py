"""The first step's result checked by candidates, with the answer in words asked before the check.

With candidates (``--candidates K``, and ``auto`` on the local model) the first result is held
while the others are asked and run (core/consensus.py).  A question's answer in words is asked
before them, from the first candidate's output, for two reasons: it is shown when the result is,
not after the check (on a CPU the long part), and the model reads it from its cache, which still
holds that candidate's reply (asked after the check, the other candidates' replies had pushed it
out, and it was read again: 7 s of a DABench question on 2 cores).

What becomes of that answer:

- the vote keeps candidate 1's group (always, with two: a tie keeps the first): it is the answer;
- the vote keeps another group (three or more): it leaves the conversation and the run asks again
  of the result kept -- unless a Stop ended the check, which asks nothing more: no answer then;
- the person stopped it while it was written: the check is stopped too, the result kept unchecked.

Under a token budget it is asked after the check, as before: asked first, it would spend the
budget the check needs.  Anything else raised while it is written (a cancellation, a client
error) rolls the held candidate back before it goes on, as the vote does.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_ai_ci.core.answer import to_say
from jupyter_ai_ci.core.consensus import Vote, vote
from jupyter_ai_ci.core.mends import Mends
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.events import NO_ANSWER, STOPPED, Action, Attempt, ExecutionResult, Message, ModelReply, Rollback

AnswerFrom = Callable[[Sequence[ExecutionResult]], Generator[Action, Any, "ModelReply | None"]]


@dataclass
class Checked:
    vote: Vote
    answer: ModelReply | None = None  # the answer in words asked before the check, when it stands
    said_of: tuple[ExecutionResult, ...] = ()  # the output it was said from (candidate 1's)


def check(first: Attempt, request: str, anew: Sequence[Message], settings: LoopSettings,
          approved: set[tuple[str, ...]], mends: Mends, over_budget: Callable[[], str],
          answer_from: AnswerFrom, forget: Callable[[], None]) -> Generator[Action, Any, Checked]:
    """``first``: the held attempt that worked; ``anew``: what each other candidate is asked;
    ``answer_from``: asks the answer in words of an output (the loop's conversation); ``forget``:
    takes that exchange out of the conversation again."""
    early: ModelReply | None = None
    if settings.steps == 1 and not settings.token_budget and to_say(settings.answer, request, first.results,
                                                                      settings.sees):
        try:
            early = yield from answer_from(first.results)
        except GeneratorExit:
            raise
        except BaseException:  # the request ends: the held candidate may not stay in the kernel
            yield Rollback(first.number, first.step)
            raise
    stopped = early is not None and early.finish_reason == STOPPED
    chosen = yield from vote(first, anew, settings, approved, mends, over_budget, stopped)
    said = early is not None and early.came
    if early is None or (chosen.winner is not None and 1 in chosen.consensus.groups[0].candidates):
        return Checked(chosen, early, first.results)
    if said:
        forget()  # said of a result the vote did not keep
    # A Stop asks nothing more: no answer, and the line says so.  Else asked again of the winner's.
    return Checked(chosen, ModelReply("", finish_reason=NO_ANSWER) if chosen.consensus.stopped else None)
