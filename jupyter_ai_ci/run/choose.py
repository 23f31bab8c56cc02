""""Use this one": apply a candidate the vote did not pick, chosen by a person.

When candidates disagree (core/consensus.py), the run applies the largest group's code and
keeps the vote in the session (``Session.keep_vote``).  A person who reads the results side
by side may know better: ``%%ask --use N``, the panel's and the notebook's "use this one"
button, apply candidate N's code once.  It runs as any attempt does -- checked by the
policy, rolled back if it fails (no fix is asked: the person chose this code, not another),
never asking the model -- and its cells take the place of the applied ones; its replay
record replaces theirs, so Run All replays the person's choice.  It runs on the kernel as the
applied candidate left it (that one was committed): when it fails there, the applied
candidate's cells, record and vote stand, and the line says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jupyter_ai_ci.errors import UsageProblem
from jupyter_ai_ci.events import (
    NO_ANSWER,
    AskApproval,
    CallModel,
    Consensus,
    Group,
    LoopGen,
    ModelReply,
    Notice,
    Outcome,
)
from jupyter_ai_ci.notebook.replay import NOTHING_SENT


def chosen(vote: Consensus | None, number: int) -> tuple[Consensus, Group]:
    """The vote and candidate ``number``'s group; a one-line ``UsageProblem`` when there is none."""
    if vote is None:
        raise UsageProblem("no candidates of this request to choose from: they are kept until the kernel "
                           "restarts; run the request again with --candidates K")
    for group in vote.groups:
        if number in group.candidates:
            return vote, group
    known = ", ".join(f"{n} ({g.shown})" for g in vote.groups for n in g.candidates)
    raise UsageProblem(f"candidate {number} is not one this request ran cleanly; choose one of {known}")


def applying(loop: LoopGen, vote: Consensus, group: Group, number: int) -> LoopGen:
    """``loop`` with its first model call answered by the chosen code; it asks for nothing else
    (the run gives it no retries and no answer in words)."""
    yield Notice("candidate", f"applying candidate {number} ({group.shown}), chosen by you")
    text = "\n\n".join(f"```python\n{code}\n```" for code in group.code)
    action = next(loop)
    while True:
        result: Any
        if isinstance(action, CallModel):
            result = ModelReply(text) if action.purpose == "first" else ModelReply("", finish_reason=NO_ANSWER)
        elif isinstance(action, AskApproval) and action.kind == "pictures":
            result = NOTHING_SENT  # no model call follows: nothing to ask
        else:
            try:
                result = yield action
            except KeyboardInterrupt:  # passed on, so the loop can undo a running attempt
                action = loop.throw(KeyboardInterrupt())
                continue
        try:
            action = loop.send(result)
        except StopIteration as stop:
            outcome: Outcome = stop.value
            if outcome.status != "success":  # not applied (failed, refused): the vote stands as it was
                error = outcome.last_error
                why = f": {error.one_line()}" if error is not None else ""
                return replace(outcome, requests=0, consensus=vote, reason=outcome.reason if outcome.status != "failed"
                               else (f"candidate {number} ({group.shown}) failed when applied{why} — it ran on "
                                     "what the applied candidate left; that one's cells stay"))
            others = tuple(g for g in vote.groups if g is not group)
            return replace(outcome, requests=0, consensus=replace(vote, groups=(group, *others), chosen=number))
