"""Plain data exchanged between the agent loop and its drivers.

The loop yields *actions* (call the model, execute code, tell the user
something) and is sent *results* (a model reply, an execution result).  Nothing
here does I/O, so the loop can be tested in memory and driven by any driver.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Literal, Union


@dataclass(frozen=True)
class Message:
    """One chat message in OpenAI's shape."""

    role: Literal["system", "user", "assistant"]
    content: str
    # Pictures of the figures this message speaks of (base64 PNGs, at most 1024 px a side), for a
    # model that takes images (model/vision.py); the client drops them for any other.
    images: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        if not self.images:
            return {"role": self.role, "content": self.content}
        # OpenAI's parts: the text, then each picture as a data URL.
        parts: list[dict[str, Any]] = [{"type": "text", "text": self.content}]
        parts += [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}} for png in self.images]
        return {"role": self.role, "content": parts}


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


# ``ModelReply.finish_reason`` of an answer in words the model could not give (an endpoint
# error, run/drive.py): the loop ends the run done without it.
NO_ANSWER = "no-answer"


@dataclass(frozen=True)
class ModelReply:
    text: str
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    seconds: float = 0.0
    # Why this text's code needs a person's approval whatever the policy says ("" when it
    # does not): set for code replayed from a record this user did not sign.
    review: str = ""
    # The texts of choices 2.. of a request that asked for several (``CallModel.n``), in index
    # order; fewer than asked when the endpoint gave fewer (one that ignores ``n`` gives none).
    alternatives: tuple[str, ...] = ()


@dataclass(frozen=True)
class ErrorInfo:
    """An exception raised by generated code, as data."""

    ename: str
    evalue: str
    traceback: str  # ANSI stripped, may be long; the prompt truncates it
    lineno: int | None = None

    @property
    def signature(self) -> tuple[str, str, int | None]:
        # What "the same error" means: a fix request after it says the last change did not help.
        return (self.ename, self.evalue, self.lineno)

    def one_line(self) -> str:
        where = f" (line {self.lineno})" if self.lineno else ""
        return f"{self.ename}: {self.evalue}{where}"


@dataclass(frozen=True)
class ExecutionResult:
    """What running one block of code produced."""

    output: str = ""  # stdout + stderr interleaved, possibly head+tail cut
    result: str | None = None  # text repr of the last expression's value
    displays: tuple[str, ...] = ()  # short text stand-ins for rich outputs
    error: ErrorInfo | None = None
    seconds: float = 0.0
    notes: tuple[str, ...] = ()  # things the executor wants said (e.g. output cut)
    # Full mime bundles for frontends that insert real cells; never sent to the model.
    outputs: tuple[dict[str, Any], ...] = ()
    # The figures it showed, in words (executors/capture.py's figure_words): what a model
    # that cannot see them is told.
    figures: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class CellRecord:
    """A notebook cell as the context describes it."""

    source: str
    output: str = ""
    kind: str = "code"  # "markdown" for a notebook file's text cells
    label: str = ""  # "In [12]" / "cell 7": how the user would point at it


# ---- actions the loop asks for -------------------------------------------


@dataclass(frozen=True)
class CallModel:
    messages: tuple[Message, ...]
    # "answer": in words, from the outputs; "candidate": the request again, for a candidate that
    # must agree with the first (core/consensus.py)
    purpose: Literal["first", "fix", "next-step", "answer", "candidate"]
    temperature: float | None = None  # None: the endpoint's (see core/loop.py for the exception)
    # Choices to ask for in one request (the prompt paid once): more than 1 only for candidates,
    # where the endpoint takes it (model/client.py); the reply's ``alternatives`` hold the others.
    n: int = 1


@dataclass(frozen=True)
class Execute:
    code: str
    attempt: int
    step: int
    block: int  # index of the block within the reply


@dataclass(frozen=True)
class Notice:
    """Something to tell the user; the driver sends back None."""

    # "replayed-text", "candidate-text": a reply's text that no model call streams (a replay
    # record's; another choice of a request that asked for several), shown where it would stream.
    kind: Literal["attempt", "retrying", "repeated", "step", "no-code", "other-languages", "replay", "replayed-text",
                  "undone", "not-undoable", "refused", "install", "budget", "context", "no-answer", "candidate",
                  "candidate-text"]
    text: str
    attempt: int = 0
    step: int = 0


@dataclass(frozen=True)
class TransactionReport:
    """What a checkpoint saved, or what a rollback put back.  ``supported`` is
    False when the executor cannot undo anything (then nothing else is set)."""

    saved: tuple[str, ...] = ()  # names whose objects were copied
    not_saved: tuple[str, ...] = ()  # "name (why)": a failure cannot undo these
    restored: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()  # names the failed attempt created, removed
    supported: bool = True


@dataclass(frozen=True)
class Checkpoint:
    """Before an attempt: remember what ``code`` may change.  The driver sends
    back a ``TransactionReport``.  An action (not hidden in the executor)
    because only the loop knows where an attempt of several blocks begins
    and ends, and every driver -- magic, sidebar, CLI -- must honour it."""

    code: tuple[str, ...]
    attempt: int
    step: int


@dataclass(frozen=True)
class Rollback:
    """The attempt failed: undo it.  The driver sends back a ``TransactionReport``."""

    attempt: int
    step: int


@dataclass(frozen=True)
class Inspect:
    """An attempt failed: before its rollback, describe what the failed code used and set, and
    hint at the names it got wrong.  The driver sends back ``FailureNotes`` (anything else
    counts as none).  Taken in the kernel, so every driver's fix request carries it."""

    code: tuple[str, ...]
    error: ErrorInfo
    attempt: int
    step: int


@dataclass(frozen=True)
class KernelNames:
    """A step's code ran and stays: what the kernel's names stand for now, for the next step's
    risk scan (safety/kernelnames.py; the snapshot named them before step 1).  The driver sends
    back ``(name, target)`` pairs read in the kernel, or None when it cannot say."""

    step: int


@dataclass(frozen=True)
class ImportSource:
    """A missing import is about to be added with no model call (core/imports.py): would
    ``import module`` load an installed package, where the code runs?  The driver sends back ""
    when it would, one line saying why not when a file beside the notebook would be imported
    instead (context/importsource.py), or None when nothing was asked (an in-memory driver)."""

    module: str
    attempt: int
    step: int


@dataclass(frozen=True)
class FailureNotes:
    variables: tuple[str, ...] = ()  # descriptions of the variables the failed code used or set
    hints: tuple[str, ...] = ()  # "'department' is not a column of e. Did you mean 'dept'? …"

    def __bool__(self) -> bool:
        return bool(self.variables or self.hints)


@dataclass(frozen=True)
class Commit:
    """The attempt succeeded: drop the checkpoint.  The driver sends back None."""

    attempt: int
    step: int


@dataclass(frozen=True)
class Hold:
    """The attempt worked and waits to be compared (a candidate): stop recording what changes,
    keep what undoes it.  The driver sends back a ``TransactionReport`` whose ``not_saved`` says
    what could not be undone (a file over the cap, a write outside the folder)."""

    attempt: int
    step: int


@dataclass(frozen=True)
class AskApproval:
    """Ask a person before running (or installing).  The driver sends back an
    ``Approval``; a driver with nobody to ask sends ``Approval(False, why)``
    at once -- never a wait nobody can answer."""

    code: tuple[str, ...]
    reasons: tuple[str, ...]
    attempt: int
    # "pictures": may a figure's picture go to ``reasons[0]``'s hosted endpoint (no code).
    kind: Literal["run", "install", "pictures"] = "run"
    # Why only a person may approve this code, whatever was approved up front ("" for none):
    # it came from a replay record this user's key did not sign, so ``--yes`` -- which a
    # notebook someone sent can carry in its own ``%%ask`` line -- does not approve it.
    review: str = ""

    @property
    def person_only(self) -> bool:
        """Only a person may answer: ``--yes`` does not (unsigned replayed code, pictures)."""
        return bool(self.review) or self.kind == "pictures"

    @property
    def package(self) -> str:
        """The package an install asks for (its code is ``%pip install NAME``); "" for code."""
        return self.code[0].rsplit(" ", 1)[-1] if self.kind == "install" and self.code else ""


@dataclass(frozen=True)
class Approval:
    granted: bool
    why: str = ""  # for a refusal: who said no, or why nobody could be asked
    asked: bool = False  # a person answered (not --yes, an allow list, or nobody there to ask)


@dataclass(frozen=True)
class Install:
    """Install ``package`` into the kernel's own environment (``%pip``).
    The driver sends back the ``ExecutionResult`` of the install."""

    package: str
    module: str
    attempt: int


Action = Union[CallModel, Execute, Notice, Checkpoint, Inspect, KernelNames, ImportSource, Rollback, Commit,  # noqa: UP007
               Hold, AskApproval, Install]


# ---- what the loop records and returns -----------------------------------


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
    early_stop: bool = False
    messages: tuple[Message, ...] = ()  # the whole conversation, for follow-ups
    reason: str = ""  # for "refused" and "over-budget": one line that says why
    unanswered: bool = False  # an answer in words was wanted, and the model could not give it
    unchecked: tuple[str, ...] = ()  # numbers of the answer in words that no output showed
    consensus: Consensus | None = None  # with candidates (--candidates K > 1): how sure
    # The retries the run did not spend: a failed run ends with some left only when the model said
    # it cannot (``declined``, the reason quotes it) or sent back failed code twice (``early_stop``).
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
