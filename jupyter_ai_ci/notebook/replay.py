"""Replay: re-running an unchanged ``%%ask`` reuses the code that worked.

A record is keyed by a digest of what decides the code: the request, the
options that change the run, the model, the earlier requests of the
conversation, the descriptions of the variables the request names
(their type, shape, columns and dtypes), and for the command line and the
panel the notebook's name (one prompt over several notebooks of a folder asks
for each).  Anything else -- other variables,
outputs, time -- does not invalidate it, so a notebook replays in a fresh
kernel (Run All, nbclient, papermill) and when a cell is re-run in the same
kernel.

``replaying`` wraps the agent loop (it stays I/O-free): it answers the
loop's first and next-step model calls from the record, and hands every call
after a failed replayed attempt to the live model, so stale code goes through
the normal retry loop.  The answer in words is replayed like any reply; a
record without one gets none (never a model call), unless the model failed to
give it the first time (``unanswered``): that one is asked for.  ``ReplayStore`` keeps
records beside the notebook (the kernel's working directory), one file each (``store.py``).

Replayed code is model output like any other: it goes through the same syntax check,
risk scan, policy and approval (``core/attempt.py``).  And a file beside a notebook is
outside input: each record is signed with this user's key (``notebook/signing.py``), and
a record the key did not sign is served with a ``review`` note, so its code needs
approval in every policy mode and its banner claims nothing about where it came from.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from jupyter_ai_ci.events import (
    Approval,
    AskApproval,
    CallModel,
    Cell,
    ExecutionResult,
    LoopGen,
    Message,
    ModelReply,
    Notice,
    Outcome,
)
from jupyter_ai_ci.notebook import signing
from jupyter_ai_ci.notebook.store import RecordFiles
from jupyter_ai_ci.text import python_blocks

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Record:
    key: str
    request: str
    model: str
    endpoint_host: str
    replies: tuple[str, ...]  # model texts to serve, in order
    attempts: int
    prompt_tokens: int
    completion_tokens: int
    requests: int
    generated_at: str
    # An answer in words was wanted and the model could not give it: replayed, it is asked for.
    unanswered: bool = False
    # Why this user's key did not sign it ("" when it did); never stored.
    unverified: str = field(default="", compare=False)

    @property
    def review(self) -> str:
        """Why a person must see this record's code before it runs ("" when not needed)."""
        if not self.unverified:
            return ""
        return (f"replay record made elsewhere, not verified ({self.unverified}): its code runs only "
                "if you approve it when asked (--yes does not approve it; --regenerate asks your model instead)")

    def as_outcome(self) -> Outcome:
        """What the run that made this record ended with: its code, step by step (the replies
        with code), and its answer in words (a last reply without code), nothing run here."""
        # ``replies_from_outcome`` writes a step as its ```python blocks, and an answer is prose
        # (``core.answer.prose`` strips its fences): an output block in an answer is no step.
        steps = [python_blocks(r) for r in self.replies if r.startswith(_STEP)]
        cells = tuple(Cell(code, n, ExecutionResult()) for n, blocks in enumerate(steps, start=1) for code in blocks)
        answer = self.replies[-1] if self.replies and not self.replies[-1].startswith(_STEP) else ""
        return Outcome("success" if cells else "answered", cells=cells, answer=answer, unanswered=self.unanswered)

    def summary(self) -> str:
        if self.unverified:  # whatever it says about its model and date is the author's claim
            return self.review
        day = self.generated_at[:10]
        plural = "attempt" if self.attempts == 1 else "attempts"
        return f"replayed — generated {day} by {self.model}, {self.attempts} {plural}"


def replay_key(request: str, options: dict[str, Any], model: str,
               named_variables: Iterable[str], earlier_requests: Iterable[str], notebook: str = "") -> str:
    """``notebook``: the file's name where the driver knows it for sure (the command line, the
    panel); the magic's records are shared by the notebooks of a folder, copies included."""
    fields: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "request": request.strip(),
        "options": options,
        "model": model,
        "variables": sorted(named_variables),
        "conversation": list(earlier_requests),
    }
    if notebook:  # left out when unknown, so the magic's keys stay what they were
        fields["notebook"] = notebook
    payload = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def earlier_requests(request: str, conversation: Sequence[Message], keep: int | None = None) -> list[str]:
    """The conversation a request was first asked in: its last ``keep`` requests (all: None).

    Re-running a cell in the same kernel finds its own earlier exchanges in the
    conversation; cutting at the first occurrence of the same request gives the
    conversation it had the first time, so every rerun replays (cut at the last,
    the third run saw the second in its conversation, and asked the model again).
    ``keep``: one less than the turns a conversation holds.  Asked again at once, a
    request's own first turn has pushed the oldest out (found by hand in the panel:
    from the fourth request of a chat on, nothing replayed); the ones it kept match.
    """
    asked = [m.content for m in conversation if m.role == "user"]
    wanted = request.strip()
    first = next((i for i, a in enumerate(asked) if a.strip() == wanted), None)
    before = asked if first is None else asked[:first]
    return before if keep is None else before[max(0, len(before) - keep):]


_STEP = "```python\n"  # how a step's reply starts (replies_from_outcome)


def replies_from_outcome(outcome: Outcome) -> tuple[str, ...]:
    """What the model would have to say, step by step, to produce this outcome."""
    steps: dict[int, list[str]] = {}
    for cell in outcome.cells:
        steps.setdefault(cell.step, []).append(f"{_STEP}{cell.code}\n```")
    replies = ["\n\n".join(blocks) for _, blocks in sorted(steps.items())]
    if outcome.answer and (outcome.status == "answered" or len(replies) > 0 and outcome.status == "success"):
        replies.append(outcome.answer)
    return tuple(replies)


def record_from_outcome(key: str, request: str, outcome: Outcome, model: str, host: str) -> Record:
    return Record(
        key=key,
        request=request,
        model=model,
        endpoint_host=host,
        replies=replies_from_outcome(outcome),
        attempts=len(outcome.attempts),
        prompt_tokens=outcome.usage.prompt_tokens,
        completion_tokens=outcome.usage.completion_tokens,
        requests=outcome.requests,
        generated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        unanswered=outcome.unanswered,
    )


def replaying(loop: LoopGen, record: Record) -> LoopGen:
    """Serve the record's replies to ``loop``; go live after any fix request.

    The returned outcome counts only the requests that reached the model.
    """
    queue = list(record.replies)
    live = 0
    yield Notice("replay", record.summary())
    try:
        action = next(loop)
    except StopIteration as stop:  # the loop ended before asking anything (e.g. a spent budget)
        first: Outcome = stop.value
        return first
    while True:
        result: Any
        if isinstance(action, CallModel) and not live and queue and action.purpose not in ("fix", "again"):
            text = queue.pop(0)
            yield Notice("replayed-text", text)  # shown where the model's text would stream
            # From an unverified record the loop asks before running it (core/attempt.py).
            result = ModelReply(text, model="" if record.unverified else record.model, review=record.review)
        elif isinstance(action, CallModel) and not live and action.purpose == "answer" and not record.unanswered:
            # A record made before answers in words, or with --no-answer: replaying must not call
            # the model for one; the replayed cells and their outputs stand alone.  One whose
            # answer failed goes live for it (below): it is the only call made.
            result = ModelReply("", model=record.model)
        elif isinstance(action, AskApproval) and action.kind == "pictures" and not live and queue:
            result = NOTHING_SENT  # the next reply comes from the record: no picture to ask about
        else:
            if isinstance(action, CallModel):
                live += 1
            try:
                result = yield action
            except KeyboardInterrupt:
                # Pass an interrupt on, so the loop can undo a running attempt.
                action = loop.throw(KeyboardInterrupt())
                continue
        try:
            action = loop.send(result)
        except StopIteration as stop:
            outcome: Outcome = stop.value
            return replace(outcome, requests=live)


# The answer to "may a picture go?" where no request is sent: no, said by nobody (no line, nothing kept).
NOTHING_SENT = Approval(False, "")


class ReplayStore(RecordFiles):
    """``Record``s in the replay store (``notebook/store.py``: one signed file per record)."""

    def get(self, key: str) -> Record | None:
        raw = self.read(key)
        if raw is None:
            return None
        fields = {k: v for k, v in raw.items() if k != "sig"}
        replies = fields.get("replies")
        try:
            if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
                raise TypeError
            record = Record(**{**fields, "replies": tuple(replies)})
        except TypeError:  # not a record: kept aside, never overwritten
            self.set_aside(key)
            return None
        return replace(record, unverified=signing.verify(fields, raw.get("sig")))

    def put(self, record: Record) -> bool:
        """Store ``record`` signed with this user's key (an approved foreign record too:
        the user has now vouched for it).  False when it was not kept (one line said why)."""
        fields = asdict(record)
        del fields["unverified"]
        return self.write(record.key, fields)

    def all(self) -> Sequence[Record]:
        return [r for k in self.keys() if (r := self.get(k)) is not None]
