"""Where the loop, a model client and an executor meet.

The loop is written once as a generator; these two thin functions drive it,
one blocking (the magic, inside a kernel whose event loop is already
running) and one with asyncio (the server extension, the command line).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from .events import CallModel, Execute, ExecutionResult, Notice, Outcome
from .executors import AsyncExecutor, Executor
from .llm import AsyncModelClient, ModelClient
from .loop import LoopGen


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

    @property
    def own(self) -> float:
        return self.total - self.model - self.execute


class _Bookkeeper:
    """What both drivers do around each action: tell the reporter, keep time."""

    def __init__(self, reporter: Reporter | None, timings: Timings | None) -> None:
        self.report = reporter or SilentReporter()
        self.timings = timings if timings is not None else Timings()
        self.started = time.perf_counter()
        self.t0 = 0.0

    def begin(self, action: CallModel | Execute) -> None:
        if isinstance(action, CallModel):
            self.report.model_started(action)
        else:
            self.report.executing(action)
        self.t0 = time.perf_counter()

    def model_done(self) -> None:
        self.timings.model += time.perf_counter() - self.t0
        self.report.model_finished()

    def executed(self, action: Execute, result: ExecutionResult) -> ExecutionResult:
        self.timings.execute += time.perf_counter() - self.t0
        self.report.executed(action, result)
        return result

    def close(self) -> None:
        self.timings.total += time.perf_counter() - self.started


def drive(loop: LoopGen, model: ModelClient, executor: Executor,
          reporter: Reporter | None = None, timings: Timings | None = None) -> Outcome:
    """Run the loop to its end, blocking."""
    book = _Bookkeeper(reporter, timings)
    try:
        action = next(loop)
        while True:
            result: Any = None
            if isinstance(action, CallModel):
                book.begin(action)
                try:
                    result = model.complete(action.messages, book.report.model_text)
                finally:
                    book.model_done()
            elif isinstance(action, Execute):
                book.begin(action)
                result = book.executed(action, executor.execute(action.code))
            else:
                book.report.notice(action)
            action = loop.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        book.close()


async def adrive(loop: LoopGen, model: AsyncModelClient, executor: AsyncExecutor,
                 reporter: Reporter | None = None, timings: Timings | None = None) -> Outcome:
    """Run the loop to its end with asyncio: the same steps, awaited."""
    book = _Bookkeeper(reporter, timings)
    try:
        action = next(loop)
        while True:
            result: Any = None
            if isinstance(action, CallModel):
                book.begin(action)
                try:
                    result = await model.acomplete(action.messages, book.report.model_text)
                finally:
                    book.model_done()
            elif isinstance(action, Execute):
                book.begin(action)
                result = book.executed(action, await executor.aexecute(action.code))
            else:
                book.report.notice(action)
            action = loop.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        book.close()
