"""The actions the loop asks its driver for: call the model, execute code, tell the person, ask
them, and the transaction's steps around an attempt."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

from jupyter_ai_ci.events.exchange import ErrorInfo, Message


Purpose = Literal["first", "fix", "again", "next-step", "answer", "candidate"]
# What each call is said as, in every driver: the magic's and the terminal's "── model: fixing ──",
# the cell's progress line, the MCP server's progress (the panel's headings are in widget.tsx).
PURPOSE_LABELS: dict[Purpose, str] = {
    "first": "writing code", "fix": "fixing", "again": "asked again for code", "next-step": "next step",
    "answer": "answering from the output", "candidate": "writing another candidate"}


@dataclass(frozen=True)
class CallModel:
    messages: tuple[Message, ...]
    # "answer": in words, from the outputs; "candidate": the request again, for a candidate that
    # must agree with the first (core/consensus.py); "again": a reply in words asked again for code
    purpose: Purpose
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
    # "no-code": a reply in words ends the run (the result line says why); "again": it is asked
    # again for code, with the tries left, which every driver shows.
    kind: Literal["attempt", "retrying", "repeated", "step", "no-code", "again", "other-languages", "replay",
                  "replayed-text",
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
