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


def drive(loop: LoopGen, model: ModelClient, executor: Executor,
          reporter: Reporter | None = None, timings: Timings | None = None) -> Outcome:
    """Run the loop to its end, blocking."""
    report = reporter or SilentReporter()
    t = timings if timings is not None else Timings()
    started = time.perf_counter()
    try:
        action = next(loop)
        while True:
            result: Any = None
            if isinstance(action, CallModel):
                report.model_started(action)
                t0 = time.perf_counter()
                try:
                    result = model.complete(action.messages, report.model_text)
                finally:
                    t.model += time.perf_counter() - t0
                    report.model_finished()
            elif isinstance(action, Execute):
                report.executing(action)
                t0 = time.perf_counter()
                result = executor.execute(action.code)
                t.execute += time.perf_counter() - t0
                report.executed(action, result)
            else:
                report.notice(action)
            action = loop.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        t.total += time.perf_counter() - started


async def adrive(loop: LoopGen, model: AsyncModelClient, executor: AsyncExecutor,
                 reporter: Reporter | None = None, timings: Timings | None = None) -> Outcome:
    """Run the loop to its end with asyncio."""
    report = reporter or SilentReporter()
    t = timings if timings is not None else Timings()
    started = time.perf_counter()
    try:
        action = next(loop)
        while True:
            result: Any = None
            if isinstance(action, CallModel):
                report.model_started(action)
                t0 = time.perf_counter()
                try:
                    result = await model.acomplete(action.messages, report.model_text)
                finally:
                    t.model += time.perf_counter() - t0
                    report.model_finished()
            elif isinstance(action, Execute):
                report.executing(action)
                t0 = time.perf_counter()
                result = await executor.aexecute(action.code)
                t.execute += time.perf_counter() - t0
                report.executed(action, result)
            else:
                report.notice(action)
            action = loop.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        t.total += time.perf_counter() - started
