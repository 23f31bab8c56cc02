"""One headless run: a notebook, a kernel, the shared run, the notebook saved.

The command line uses this; it does the I/O the run does not (the notebook
file, the kernel's lifetime) and nothing the run decides.  Exit codes are
part of the interface (scripts and CI branch on them).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from jupyter_ai_ci.config import KEY_VARIABLES
from jupyter_ai_ci.context.failure import undefined_name
from jupyter_ai_ci.core.consensus import sureness
from jupyter_ai_ci.errors import AICIError, BudgetExceeded, KernelError, ModelError, UsageProblem
from jupyter_ai_ci.events import Notice, Outcome
from jupyter_ai_ci.executors.connection import KernelConnection
from jupyter_ai_ci.executors.kernel import KernelExecutor
from jupyter_ai_ci.executors.local_kernel import LocalKernel
from jupyter_ai_ci.executors.transact import WHY_NOT
from jupyter_ai_ci.notebook.document import (
    Node,
    cell_records,
    generated_for,
    Opened,
    load_or_create,
    set_outputs,
    stamp,
)
from jupyter_ai_ci.notebook.placing import Live, place_cells
from jupyter_ai_ci.notebook.reader import SESSION_ENV
from jupyter_ai_ci.run.drive import Approver, AsyncApprover
from jupyter_ai_ci.run.report import Reporter, Timings
from jupyter_ai_ci.run.flow import RemoteKernel, run_async
from jupyter_ai_ci.run.request import Options, Result, Run
from jupyter_ai_ci.run.session import Session
from jupyter_ai_ci.run.summary import summarize
from jupyter_ai_ci.safety.astutil import parse_cell, walk
from jupyter_ai_ci.safety.undostack import Limits

EXIT_OK = 0
EXIT_GAVE_UP = 1  # every attempt raised
EXIT_USAGE = 2
EXIT_MODEL = 3  # the model endpoint failed
EXIT_KERNEL = 4  # the kernel or gateway failed (start, death, refused token)
EXIT_EXISTING = 5  # --run-existing: a cell already in the notebook raised
EXIT_REFUSED = 6  # the policy refused the code (denied, rejected, or nobody to approve it)
EXIT_BUDGET = 7  # a token budget would have been exceeded
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # SIGTERM (a CI job's timeout, a container stopping, kill)

@dataclass
class KernelOptions:
    """Where and how the notebook's kernel runs."""

    kernel_name: str = "python3"
    gateway_url: str = ""
    gateway_token: str = ""
    run_existing: bool = False
    timeout: float = 600.0  # per cell, then interrupt
    receive_timeout: float = 5.0
    startup_timeout: float = 60.0
    # The model's key stays in this process (AICISettings.keep_key_from_kernels): generated code
    # in the kernel could print it into the notebook this command saves.
    hide_keys: bool = True


@dataclass
class RunResult:
    path: Path
    exit_code: int
    message: str
    outcome: Outcome | None = None
    timings: Timings = field(default_factory=Timings)
    executions: int = 0
    result: Result | None = None  # the run's own result (provenance, usage), when it ran
    cells: tuple[str, ...] = ()  # ids of the cells appended to the notebook
    live: str = ""  # the cells went to the notebook open in a frontend, not its file: what it says


def stop_on_sigterm() -> None:
    """SIGTERM cancels the running task as Ctrl-C does: the kernels are shut down and their
    socket folders removed, the notebooks not yet finished stay as they were.  Left to its
    default, SIGTERM ends the process at once and the kernels' folders stay in /tmp.  Call
    it from the task ``asyncio.run`` runs; it raises ``CancelledError`` out of that run."""
    task = asyncio.current_task()
    if task is None:
        return
    loop = asyncio.get_running_loop()

    def stop() -> None:
        # Once: a second SIGTERM (some tools send several) must not cut the shutdown short.
        loop.add_signal_handler(signal.SIGTERM, lambda: None)
        task.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # Windows; not the main thread
        loop.add_signal_handler(signal.SIGTERM, stop)


async def start_kernel(options: KernelOptions, cwd: Path, notebook: Path | None = None) -> KernelConnection:
    """``notebook``: told to a local kernel as Jupyter Server tells it (``JPY_SESSION_NAME``), so
    relative writes are judged from the notebook's folder wherever its cells move the kernel."""
    if options.gateway_url:
        from jupyter_ai_ci.executors.gateway import GatewayKernel

        return await GatewayKernel.start(options.gateway_url, options.gateway_token, options.kernel_name,
                                         request_timeout=max(options.receive_timeout, 5.0),
                                         startup_timeout=options.startup_timeout)
    env = {SESSION_ENV: str(notebook.resolve())} if notebook is not None else None
    return await LocalKernel.start(options.kernel_name, cwd=str(cwd), env=env, startup_timeout=options.startup_timeout,
                                   hide=KEY_VARIABLES if options.hide_keys else ())


async def run_notebook(path: Path, session: Session, request: str, options: Options, kernel: KernelOptions,
                       reporter: Reporter | None = None,
                       approver: Approver | AsyncApprover | None = None) -> RunResult:
    """Run the request against one notebook in a kernel of its own; save it only when code ran
    (or prose answered).  ``approver`` answers what the policy asks about; with none, flagged
    code is refused."""
    opened = open_notebook(path, kernel.kernel_name)
    run = make_run(opened, session, request, options, reporter, "cli")
    if run.held_by:
        return held_result(path, run)
    run.check()
    connection = await start_kernel(kernel, path.parent, path)
    s = session.settings
    executor = KernelExecutor(connection, timeout=kernel.timeout, receive_timeout=kernel.receive_timeout,
                              max_output_chars=s.max_output_chars, snapshot_max_bytes=s.snapshot_max_bytes,
                              undo_on_cancel=False, undo=Limits.of(s))  # the kernel is shut down below
    try:
        if not await executor.transactions.probe() and reporter is not None:
            # Said up front: a failure later would otherwise be the first the user hears of it.
            reporter.notice(Notice("not-undoable", WHY_NOT))
        if kernel.run_existing:
            failed = await _run_existing(opened.nb, executor)
            if failed:
                return RunResult(path, EXIT_EXISTING, failed, executions=executor.executions)
        return await run_in(opened, run, executor, reporter, approver, hint_unrun=not kernel.run_existing)
    finally:
        try:
            await asyncio.shield(connection.shutdown())
        except (KernelError, OSError):
            pass  # the run's own error (or result) is what the user needs to see


def open_notebook(path: Path, kernel_name: str = "python3") -> Opened:
    """The notebook as it is now (or a new one), with the stamp a later save is checked against."""
    # Checked per notebook: one mistyped path fails alone, as an unreadable notebook does.
    if path.suffix != ".ipynb":
        raise UsageProblem(f"expected NAME.ipynb, not {path.name}; nothing was run for it")
    if not path.parent.resolve().is_dir():
        raise UsageProblem(f"the folder {path.parent} does not exist; nothing was run for {path.name}")
    try:
        return Opened(path, load_or_create(path, kernel_name), stamp(path), kernel_name)
    except Exception as exc:  # nbformat raises many kinds: bad JSON, bad schema, unknown version
        raise UsageProblem(f"cannot read {path} as a notebook ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0][:200]}); it was not changed") from None


def make_run(opened: Opened, session: Session, request: str, options: Options, reporter: Reporter | None,
             source: str) -> Run:
    """The run of ``request`` against the notebook: its thread is the notebook's path, its replay
    store beside it; the notebook's generated cells for the request hold it (nothing runs)."""
    path = opened.path
    return Run(session, request, options, thread=str(path), replay_dir=path.parent, source=source,
               say=lambda text: reporter.notice(Notice("context", text.strip(" ·\n"))) if reporter else None,
               held_by=generated_for(opened.nb, request))


def held_result(path: Path, run: Run) -> RunResult:
    n = len(run.held_by)
    held = "1 cell in the notebook holds" if n == 1 else f"{n} cells in the notebook hold"
    return RunResult(path, EXIT_OK, f"already done: {held} this request's code; the notebook was not "
                     "changed (--regenerate asks the model again)")


async def run_in(opened: Opened, run: Run, executor: KernelExecutor, reporter: Reporter | None,
                 approver: Approver | AsyncApprover | None, hint_unrun: bool = True,
                 live: Live | None = None) -> RunResult:
    """The run in a kernel the caller keeps, then the cells into the notebook file: appended to
    the notebook as it is on disk then (a save made meanwhile is kept, never written over) --
    or, with ``live``, into the page where the notebook is open, when it takes them."""
    path, timings = opened.path, Timings()
    result = await run_async(run, RemoteKernel(executor.evaluate), executor, reporter, approver, timings,
                             notebook=cell_records(opened.nb))
    outcome = result.outcome
    facts = summarize(outcome, timings.total, result.replayed)  # the words every driver uses
    done = RunResult(path, EXIT_OK, "", outcome, timings, executor.executions, result)
    if outcome.status == "refused":
        return replace(done, exit_code=EXIT_REFUSED, message=f"{outcome.reason}; the notebook was not changed")
    if outcome.status == "over-budget":
        return replace(done, exit_code=EXIT_BUDGET, message=f"stopped: {outcome.reason} (--max-tokens-per-request, "
                       "--max-tokens-per-session); the notebook was not changed")
    if outcome.status == "failed":
        hint = _unrun_name(opened.nb, outcome) if hint_unrun else ""
        advice = "" if hint else f". {facts.advice('--retries')}"  # the hint says what to do instead
        return replace(done, exit_code=EXIT_GAVE_UP,
                       message=f"{facts.what()}; the notebook was not changed{hint}{advice}")
    placed = await place_cells(opened, outcome.cells, result.provenance, executor.execution_count, live,
                               outcome.answer, replacing=run.request if run.options.regenerate else "")
    where = placed.where
    n = len(outcome.attempts)
    # Replayed or not, the figures say it ("replayed, no model call").
    what = facts.what() if outcome.status == "answered" else \
        f"{where} after {n} attempt{'' if n == 1 else 's'}{facts.missing()}" + (
            f"; {facts.sureness}" if facts.sureness else "")  # how sure, as every driver says it
    spent = f"model {timings.model:.1f} s, kernel {timings.execute:.1f} s"
    return replace(done, message=f"{what} ({facts.figures()[0]}; {spent})", cells=placed.ids,
                   live=placed.where if placed.live else "")


def _unrun_name(nb: Node, outcome: Outcome) -> str:
    """Why a NameError on a name the notebook's own cells set: they were not run (the kernel
    is new, and only --run-existing runs them first); "" for any other failure."""
    error = outcome.last_error
    name = undefined_name(error.evalue) if error is not None and error.ename == "NameError" else None
    if name is None or not any(c.cell_type == "code" and _binds(c.source, name) for c in nb.cells):
        return ""
    return f" ({name!r} is set by the notebook's own cells, which were not run: --run-existing runs them first)"


def _binds(source: str, name: str) -> bool:
    """The cell sets ``name``: assigns it, imports it, defines it (not a mere mention)."""
    try:
        tree = parse_cell(source)
    except Exception:  # noqa: BLE001 -- a cell that does not parse sets nothing we can tell
        return False
    for node in walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id == name:
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
            return True
    return False


async def _run_existing(nb: Node, executor: KernelExecutor) -> str:
    """Run the notebook's code cells in order, refreshing their outputs; the first error stops.

    An error in the *last* code cell is left to the request ("fix the cell above"): the
    kernel keeps it, and the run's context carries its traceback.  An error earlier
    would leave later cells unrun and the context wrong, so that one ends the run."""
    cells = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    for index, cell in enumerate(cells, start=1):
        result = await executor.aexecute(cell.source)
        set_outputs(cell, result, executor.execution_count(result))
        if result.error is not None and index < len(cells):
            return (f"existing code cell {index} raised {result.error.one_line()}; "
                    "fix the notebook or run without --run-existing")
    return ""


def error_exit(path: Path, exc: AICIError) -> RunResult:
    """The one-line result for an error that ended a run early."""
    code = EXIT_MODEL if isinstance(exc, ModelError) else EXIT_USAGE if isinstance(exc, UsageProblem) \
        else EXIT_BUDGET if isinstance(exc, BudgetExceeded) else EXIT_KERNEL
    return RunResult(path, code, f"{type(exc).__name__}: {exc}")


def summary(results: Sequence[RunResult]) -> str:
    """Machine-readable record of a batch, for ``--json``."""
    return json.dumps([{
        "notebook": str(r.path), "exit_code": r.exit_code, "message": r.message,
        "status": r.outcome.status if r.outcome else "error",
        "attempts": len(r.outcome.attempts) if r.outcome else 0,
        "requests": r.outcome.requests if r.outcome else 0,  # model requests (0 when replayed)
        "prompt_tokens": r.outcome.usage.prompt_tokens if r.outcome else 0,
        "completion_tokens": r.outcome.usage.completion_tokens if r.outcome else 0,
        # Candidates that must agree: how sure, in words and as a flag (null without a vote).
        "agreement": sureness(r.outcome.consensus) if r.outcome and r.outcome.consensus else None,
        "sure": r.outcome.consensus.sure if r.outcome and r.outcome.consensus else None,
        "model_seconds": round(r.timings.model, 3), "execute_seconds": round(r.timings.execute, 3),
        "total_seconds": round(r.timings.total, 3), "executions": r.executions,
    } for r in results], indent=2)
