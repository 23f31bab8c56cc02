"""What a driver is told as a run goes (``Reporter``), and where the run's time went (``Timings``).

``Bookkeeper`` does what both of run/drive.py's drivers do around each action: tell the reporter,
keep time -- the model's, the kernel's, and ours (prompting, parsing, showing the text).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from jupyter_ai_ci.events import NO_ANSWER, STOPPED, CallModel, Execute, ExecutionResult, ModelReply, Notice

__all__ = ["Bookkeeper", "Reporter", "SilentReporter", "Timings"]


class Reporter(Protocol):
    """What a driver tells the user about, as it happens."""

    def model_started(self, call: CallModel) -> None: ...
    def model_text(self, text: str) -> None: ...
    def model_finished(self) -> None: ...
    def notice(self, notice: Notice) -> None: ...
    def executing(self, action: Execute) -> None: ...
    def executed(self, action: Execute, result: ExecutionResult) -> None: ...


class SilentReporter:
    def model_started(self, call: CallModel) -> None: pass
    def model_text(self, text: str) -> None: pass
    def model_finished(self) -> None: pass
    def notice(self, notice: Notice) -> None: pass
    def executing(self, action: Execute) -> None: pass
    def executed(self, action: Execute, result: ExecutionResult) -> None: pass


@dataclass
class Timings:
    """Where a run's time went; ``own`` is ours (prompting, parsing, reporting)."""

    total: float = 0.0
    model: float = 0.0
    execute: float = 0.0
    # CPU time of this thread during the model calls (part of ``model``): the SDK building the
    # request and reading the reply.  With a fast model that is most of ``model``; it is ours.
    client_cpu: float = 0.0

    @property
    def own(self) -> float:
        return self.total - self.model - self.execute


class Bookkeeper:
    """What both drivers do around each action: tell the reporter, keep time."""

    def __init__(self, reporter: Reporter | None, timings: Timings | None) -> None:
        self.report = reporter or SilentReporter()
        self.timings = timings if timings is not None else Timings()
        self.started = time.perf_counter()
        self.t0 = self.cpu0 = 0.0
        self.shown = 0.0  # of the current model call, spent showing its text as it streams

    def text(self, piece: str) -> None:
        """The model's text as it streams in: showing it is our time, not the model's."""
        started = time.perf_counter()
        self.report.model_text(piece)
        self.shown += time.perf_counter() - started

    def begin(self, action: CallModel | Execute) -> None:
        if isinstance(action, CallModel):
            self.report.model_started(action)
        else:
            self.report.executing(action)
        self.shown = 0.0
        self.cpu0 = time.thread_time()
        self.t0 = time.perf_counter()

    def model_done(self) -> None:
        self.timings.model += time.perf_counter() - self.t0 - self.shown
        self.timings.client_cpu += time.thread_time() - self.cpu0 - self.shown
        self.report.model_finished()

    def no_answer(self, why: str, purpose: str = "answer", stopped: bool = False) -> ModelReply:
        """The answer in words could not be had: the code ran and worked, so its cells stand
        without one (the loop ends the run done, ``Outcome.unanswered``).  Found by hand: a 500
        on that last call discarded the working code while its variables stayed in the kernel.
        So for another candidate: the vote goes on with the ones it has (core/consensus.py).
        ``stopped``: the person stopped it (``STOPPED``): a check it came before is not asked for."""
        if purpose == "candidate":
            self.report.notice(Notice("candidate", f"no more candidates: {why}; the vote goes on with those it has"))
        else:
            self.report.notice(Notice("no-answer", f"no answer in words: {why}; the code ran, and its cells are kept"))
        return ModelReply("", finish_reason=STOPPED if stopped else NO_ANSWER)

    def executed(self, action: Execute, result: ExecutionResult) -> ExecutionResult:
        self.timings.execute += time.perf_counter() - self.t0
        self.report.executed(action, result)
        return result

    def close(self) -> None:
        flush = getattr(self.report, "flush", None)  # a reporter that holds lines back shows them now
        if flush is not None:
            flush()
        self.timings.total += time.perf_counter() - self.started
