"""A run from start to end: ask the kernel, drive the loop, record the outcome.

Written twice on purpose, in a dozen lines each: blocking for the magic
(inside a kernel whose event loop is already running) and with asyncio for
the server and the command line.  Everything they share is in ``Run``.

How the kernel is asked differs: the magic runs in it (``InProcessKernel``);
the others evaluate a user expression in it (``RemoteKernel``), and when the
kernel cannot answer (busy, or jupyter_ai_ci missing from its environment)
the run goes on with the driver's own cells and says so.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from jupyter_ai_ci.context import failure, importsource, kernelsecrets, snapshot, stepnames
from jupyter_ai_ci.context.privacy import secret_values
from jupyter_ai_ci.context.snapshot import Query, Snapshot
from jupyter_ai_ci.events import FailureNotes, Inspect, Notice, Outcome
from jupyter_ai_ci.executors import AsyncExecutor, Executor
from jupyter_ai_ci.executors.shell import LAST_FAILURE
from jupyter_ai_ci.run.drive import Approver, AsyncApprover, adrive, drive
from jupyter_ai_ci.run.report import Reporter, SilentReporter, Timings
from jupyter_ai_ci.run.request import Result, Run
from jupyter_ai_ci.safety.kernelnames import risky_bindings

# Evaluates one user expression in the kernel; the ``user_expressions`` entry of the reply.
Evaluate = Callable[[str], Awaitable[dict[str, Any]]]
KERNEL_TIMEOUT = 10.0  # seconds the kernel may take to describe itself before we go on without it


class InProcessKernel:
    """The kernel the magic runs in: read directly, secrets re-read before each model call."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    def snapshot(self, query: Query) -> Snapshot:
        return snapshot.take(self.shell, query)

    def secrets(self) -> Sequence[str]:
        # Secrets the generated code creates mid-run count too.
        return secret_values(self.shell.user_ns, os.environ)

    def names(self) -> tuple[tuple[str, str], ...]:
        """What the kernel's names stand for now, after a step (context/stepnames.py)."""
        return risky_bindings(self.shell.user_ns, self.shell)

    def import_source(self, module: str) -> str:
        """"" when ``import module`` loads an installed module here (context/importsource.py)."""
        return importsource.shadowing(module)

    def inspect(self, action: Inspect) -> FailureNotes:
        error = getattr(self.shell, LAST_FAILURE, None)
        if error is not None:
            delattr(self.shell, LAST_FAILURE)  # its traceback holds the failed code's frames
        return failure.inspect_failure(self.shell.user_ns, action.code, action.error.ename, action.error.evalue,
                                       error=error if isinstance(error, BaseException) else None)


class RemoteKernel:
    """A kernel reached over the messaging protocol (the sidebar's, the command line's)."""

    def __init__(self, evaluate: Evaluate, timeout: float = KERNEL_TIMEOUT) -> None:
        self.evaluate = evaluate
        self.timeout = timeout

    async def asnapshot(self, query: Query) -> Snapshot:
        try:
            reply = await asyncio.wait_for(self.evaluate(snapshot.expression(query)), self.timeout)
            return snapshot.from_reply(reply)
        except asyncio.TimeoutError:
            note = "the kernel is busy, so the model was not told about its variables"
        except Exception as exc:  # noqa: BLE001 - any failure degrades to the driver's cells
            note = f"the kernel could not describe its variables ({str(exc)[:200]})"
        return snapshot.without_kernel(query, note)

    async def ainspect(self, action: Inspect) -> FailureNotes:
        """What the failed attempt had in hand, from the kernel; none if it cannot say in time."""
        try:
            expression = failure.expression(action.code, action.error.ename, action.error.evalue)
            return failure.from_reply(await asyncio.wait_for(self.evaluate(expression), self.timeout))
        except Exception:  # noqa: BLE001 - the fix request goes on without the notes
            return FailureNotes()

    async def anames(self) -> tuple[tuple[str, str], ...] | None:
        """What the kernel's names stand for now (context/stepnames.py); None if it cannot say."""
        try:
            return stepnames.from_reply(await asyncio.wait_for(self.evaluate(stepnames.expression()), self.timeout))
        except Exception:  # noqa: BLE001 - the step's code is read instead
            return None

    async def aimport_source(self, module: str) -> str:
        """"" when ``import module`` loads an installed module in the kernel; otherwise why not
        (a kernel that cannot say is a reason too: the model is asked instead)."""
        try:
            reply = await asyncio.wait_for(self.evaluate(importsource.expression(module)), self.timeout)
        except Exception:  # noqa: BLE001 - said, and the import is left to the model
            return importsource.cannot_say(module)
        return importsource.from_reply(reply, module)

    async def asecrets(self) -> Sequence[str]:
        """The secrets the kernel holds now (``context.kernelsecrets``); none if it cannot say."""
        try:
            return kernelsecrets.from_reply(await asyncio.wait_for(self.evaluate(kernelsecrets.expression()),
                                                                   self.timeout))
        except Exception:  # noqa: BLE001 - the values known already and the patterns still mask
            return ()


def _said(reporter: Reporter | None, found: Snapshot) -> None:
    if found.note and reporter is not None:
        reporter.notice(Notice("context", found.note))


def run_sync(run: Run, kernel: InProcessKernel, executor: Executor, reporter: Reporter | None = None,
             approver: Approver | None = None, timings: Timings | None = None) -> Result:
    run.check()
    timings = timings if timings is not None else Timings()
    started = time.perf_counter()
    found = kernel.snapshot(run.query())
    _said(reporter, found)
    loop, model = run.start(found, kernel.secrets)
    asker = run.approver(approver)
    # Building the context and the loop, and recording the outcome, are our own time too;
    # drive() times the loop itself.
    timings.total += time.perf_counter() - started
    try:
        outcome = drive(loop, model, executor, reporter or SilentReporter(), timings, approver=asker,  # type: ignore[arg-type]
                        inspector=kernel.inspect, watch=lambda: run.keep(kernel.secrets()), namer=kernel.names,
                        importer=kernel.import_source)
    except BaseException:
        run.abandoned(model)
        raise
    timings.model -= model.masking  # drive() timed it with the model call; it is ours
    timings.client_cpu = max(0.0, timings.client_cpu - model.masking)
    return _finish(run, outcome, timings)


async def run_async(run: Run, kernel: RemoteKernel, executor: AsyncExecutor, reporter: Reporter | None = None,
                    approver: Approver | AsyncApprover | None = None, timings: Timings | None = None,
                    notebook: Sequence[Any] | None = None) -> Result:
    run.check()
    timings = timings if timings is not None else Timings()
    started = time.perf_counter()
    found = await kernel.asnapshot(replace(run.query(), notebook=tuple(notebook) if notebook is not None else None))
    spent = time.perf_counter() - started  # a round trip to the kernel: kernel time, not our overhead
    timings.execute += spent
    _said(reporter, found)
    loop, model = run.start(found)
    timings.total += time.perf_counter() - started

    async def watch() -> None:  # after each step, before a rollback can take its variables
        run.keep(await kernel.asecrets())

    try:
        outcome = await adrive(loop, model, executor, reporter, timings, approver=run.approver(approver),
                               inspector=kernel.ainspect, watch=watch, namer=kernel.anames,
                               importer=kernel.aimport_source)
    except BaseException:  # Stop (cancelled), Ctrl-C, an endpoint that failed mid-run
        run.abandoned(model)
        raise
    timings.model -= model.masking
    timings.client_cpu = max(0.0, timings.client_cpu - model.masking)
    return _finish(run, outcome, timings)


def _finish(run: Run, outcome: Outcome, timings: Timings) -> Result:
    started = time.perf_counter()
    result = run.finish(outcome, timings)  # the Result holds ``timings`` itself: this still counts
    timings.total += time.perf_counter() - started
    return result
