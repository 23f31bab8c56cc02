"""Where the loop, a model client and an executor meet.

The loop is written once as a generator; these two thin functions drive it,
one blocking (the magic, inside a kernel whose event loop is already
running) and one with asyncio (the server extension, the command line).

Executors may also offer ``checkpoint(code)``/``rollback()``/``commit()`` and
``install(package)`` (or their ``a``-prefixed coroutines); an executor
without them gets "cannot undo" reports, which the loop tells the user.
Approval goes to an ``Approver``; with none, flagged code is refused at once.
A failed attempt is ``Inspect``-ed by the ``inspector`` the flow gives (it reads
the kernel: ``run.flow``); with none, the fix request goes without notes.
After each step the ``watch`` the flow gives is called before anything else
happens (a rollback undoes what the step made): it takes the secrets the kernel
holds now, so that its output is masked in whatever is sent later.  Between the
steps of a request the loop asks what the kernel's names stand for now
(``KernelNames``): the ``namer`` the flow gives reads them there; with none, the
loop reads the step's code alone.  Before a missing import is added with no model call, the
loop asks where it would come from (``ImportSource``): the ``importer`` the flow gives looks
in the kernel; with none (in-memory tests), nothing is said against it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from jupyter_ai_ci.events import (
    Approval,
    AskApproval,
    CallModel,
    Checkpoint,
    Commit,
    Hold,
    Execute,
    FailureNotes,
    ImportSource,
    Inspect,
    Install,
    KernelNames,
    LoopGen,
    Outcome,
    Rollback,
    TransactionReport,
)
from jupyter_ai_ci.errors import ModelError
from jupyter_ai_ci.executors import AsyncExecutor, Executor
from jupyter_ai_ci.model.client import AsyncModelClient, ModelClient
from jupyter_ai_ci.run.report import Bookkeeper, Reporter, Timings


class Approver(Protocol):
    """Asks a person; ``AsyncApprover`` is the same with ``aapprove``."""

    def approve(self, request: AskApproval) -> Approval: ...


class AsyncApprover(Protocol):
    async def aapprove(self, request: AskApproval) -> Approval: ...


NOBODY_TO_ASK = ("needs approval, but nobody can approve it here; allow it with "
                 "%config AICISettings.allow, --yes, or policy 'auto'")
NOBODY_FOR_PICTURES = "nobody can be asked here; AICISettings.figures_to_hosted = 'yes' sends them"
UNSUPPORTED = TransactionReport(supported=False)
# The message of a task's cancel() that stops a run but keeps what has run (``adrive``).
KEEP_WHAT_RAN = "jupyter-ai-ci: stop, keep what has run"
Inspector = Callable[[Inspect], FailureNotes]
AsyncInspector = Callable[[Inspect], Awaitable[FailureNotes]]
Watch = Callable[[], None]
AsyncWatch = Callable[[], Awaitable[None]]
Namer = Callable[[], "tuple[tuple[str, str], ...] | None"]
AsyncNamer = Callable[[], "Awaitable[tuple[tuple[str, str], ...] | None]"]
Importer = Callable[[str], str]  # "" or why the module would not be the installed one
AsyncImporter = Callable[[str], Awaitable[str]]
_UNDO_ACTIONS = (Checkpoint, Rollback, Commit, Hold)


def _undo_method(action: Any) -> str:
    return {Checkpoint: "checkpoint", Rollback: "rollback", Commit: "commit", Hold: "hold"}[type(action)]


def _sync_other(action: Any, executor: Any, approver: Any, report: Reporter) -> Any:
    """Actions other than calling the model and executing code."""
    if isinstance(action, _UNDO_ACTIONS):
        method = getattr(executor, _undo_method(action), None)
        if method is None:
            return None if isinstance(action, Commit) else UNSUPPORTED
        return method(action.code) if isinstance(action, Checkpoint) else method()
    if isinstance(action, AskApproval):
        if approver is not None:
            return approver.approve(action)
        return Approval(False, NOBODY_FOR_PICTURES if action.kind == "pictures" else NOBODY_TO_ASK)
    if isinstance(action, Install):
        install = getattr(executor, "install", None)
        return install(action.package) if install is not None else None
    report.notice(action)
    return None


async def _async_other(action: Any, executor: Any, approver: Any, report: Reporter) -> Any:
    if isinstance(action, AskApproval) and approver is not None and hasattr(approver, "aapprove"):
        return await approver.aapprove(action)
    name = {Install: "install"}.get(type(action)) or (
        _undo_method(action) if isinstance(action, _UNDO_ACTIONS) else "")
    coroutine = getattr(executor, f"a{name}", None) if name else None
    if coroutine is None:
        return _sync_other(action, executor, approver, report)
    args = (action.code,) if isinstance(action, Checkpoint) else (
        (action.package,) if isinstance(action, Install) else ())
    result = coroutine(*args)
    return await result if inspect.isawaitable(result) else result


def drive(loop: LoopGen, model: ModelClient, executor: Executor,
          reporter: Reporter | None = None, timings: Timings | None = None,
          approver: Approver | None = None, inspector: Inspector | None = None,
          watch: Watch | None = None, namer: Namer | None = None, importer: Importer | None = None) -> Outcome:
    """Run the loop to its end, blocking."""
    book = Bookkeeper(reporter, timings)
    try:
        action = next(loop)
        while True:
            result: Any = None
            if isinstance(action, CallModel):
                book.begin(action)
                failed, stopped, thrown = "", False, None
                try:
                    result = model.complete(action.messages, book.text, action.temperature, n=action.n)
                except BaseException as error:  # noqa: BLE001 - each goes back into the loop, or ends the answer
                    failed, stopped, thrown = _no_answer(action.purpose, error)
                finally:
                    book.model_done()
                if thrown is not None:  # the loop undoes what it holds; Ctrl-C ends a check (core/consensus.py)
                    action = loop.throw(thrown)
                    continue
                if failed:  # said once the call is over, as any other notice
                    result = book.no_answer(failed, action.purpose, stopped=stopped)
            elif isinstance(action, Execute):
                book.begin(action)
                try:
                    done = executor.execute(action.code)
                    if watch is not None:
                        watch()
                    result = book.executed(action, done)
                except KeyboardInterrupt:
                    # The loop answers with a Rollback, then re-raises once undone.
                    action = loop.throw(KeyboardInterrupt())
                    continue
            elif isinstance(action, Inspect):
                result = inspector(action) if inspector is not None else None
            elif isinstance(action, KernelNames):
                result = namer() if namer is not None else None
            elif isinstance(action, ImportSource):
                result = importer(action.module) if importer is not None else None
            else:
                result = _sync_other(action, executor, approver, book.report)
            action = loop.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        book.close()


def _no_answer(purpose: str, error: BaseException) -> tuple[str, bool, BaseException | None]:
    """What a model call that raised comes to: ("why", stopped, None) when the run goes on without
    its reply (an answer in words that failed or was stopped: the work stands; a failed call for
    another candidate: the vote goes on with those in), else ("", False, the exception to throw
    into the loop)."""
    if purpose == "answer" and isinstance(error, (ModelError, KeyboardInterrupt)):
        stopped = isinstance(error, KeyboardInterrupt)
        return ("stopped" if stopped else str(error)), stopped, None
    if purpose == "candidate" and isinstance(error, ModelError):
        return str(error), False, None
    return "", False, error


def _uncancel() -> None:
    """The task goes on after a Stop that keeps what ran: its cancellation is spent (Python 3.11+
    counts them, and would take a later timeout inside the run for this Stop)."""
    task = asyncio.current_task()
    if task is not None and hasattr(task, "uncancel"):
        task.uncancel()


async def adrive(loop: LoopGen, model: AsyncModelClient, executor: AsyncExecutor,
                 reporter: Reporter | None = None, timings: Timings | None = None,
                 approver: Approver | AsyncApprover | None = None,
                 inspector: AsyncInspector | None = None, watch: AsyncWatch | None = None,
                 namer: AsyncNamer | None = None, importer: AsyncImporter | None = None) -> Outcome:
    """Run the loop to its end with asyncio: the same steps, awaited.  A task cancelled with
    ``KEEP_WHAT_RAN`` (the panel's Stop) while the model writes keeps what has run where the loop can
    (a check ends with the result shown, an answer in words ends with its cells); anywhere else it
    is cancelled as any task is."""
    book = Bookkeeper(reporter, timings)
    stop: asyncio.CancelledError | None = None
    try:
        action = next(loop)
        while True:
            result: Any = None
            if isinstance(action, CallModel):
                book.begin(action)
                failed, stopped, thrown = "", False, None
                try:
                    result = await model.acomplete(action.messages, book.text, action.temperature, n=action.n)
                except BaseException as error:  # noqa: BLE001 - each goes back into the loop, or ends the answer
                    if isinstance(error, asyncio.CancelledError) and error.args[:1] == (KEEP_WHAT_RAN,):
                        stop = error  # raised again if the loop does not keep anything
                        _uncancel()
                        error = KeyboardInterrupt()
                    failed, stopped, thrown = _no_answer(action.purpose, error)
                finally:
                    book.model_done()
                if thrown is not None:  # the loop undoes what it holds; a Stop ends a check (core/consensus.py)
                    action = loop.throw(thrown)
                    continue
                if failed:  # said once the call is over, as any other notice
                    result = book.no_answer(failed, action.purpose, stopped=stopped)
            elif isinstance(action, Execute):
                book.begin(action)
                try:
                    done = await executor.aexecute(action.code)
                    if watch is not None:
                        await watch()
                    result = book.executed(action, done)
                except (KeyboardInterrupt, asyncio.CancelledError):
                    # Undo the attempt before the cancellation goes on.
                    rollback = loop.throw(KeyboardInterrupt())
                    undone = await _async_other(rollback, executor, approver, book.report)
                    with contextlib.suppress(KeyboardInterrupt):
                        loop.send(undone)
                    raise
            else:
                started = time.perf_counter()
                if isinstance(action, Inspect):
                    result = await inspector(action) if inspector is not None else None
                elif isinstance(action, KernelNames):
                    result = await namer() if namer is not None else None
                elif isinstance(action, ImportSource):
                    result = await importer(action.module) if importer is not None else None
                else:
                    result = await _async_other(action, executor, approver, book.report)
                if isinstance(action, (*_UNDO_ACTIONS, Inspect, KernelNames, ImportSource)):
                    # A round trip to the kernel (remote checkpoints): kernel time, not our overhead.
                    book.timings.execute += time.perf_counter() - started
            action = loop.send(result)
    except StopIteration as ended:
        return ended.value  # type: ignore[no-any-return]
    except KeyboardInterrupt:
        if stop is not None:  # the loop kept nothing: the Stop ends the run, as a cancellation
            raise stop from None
        raise
    finally:
        book.close()
