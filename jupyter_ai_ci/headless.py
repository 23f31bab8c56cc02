"""One headless run: a notebook, a kernel, the agent loop, the notebook saved.

The command line and ``bench/`` use this; it does the I/O the loop does not.
Exit codes are part of the interface (scripts and CI branch on them).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .context import CellRecord, build_context
from .drivers import Approver, AsyncApprover, Reporter, Timings, adrive
from .errors import AICIError, KernelError, ModelError, UsageProblem
from .events import Notice, Outcome
from .executors.kernel import KernelConnection, KernelExecutor, LocalKernel
from .executors.transact import WHY_NOT
from .llm import AsyncModelClient
from .loop import LoopSettings, agent_loop
from .notebook import Node, NotebookSink, cell_records, load_or_create, save, set_outputs
from .sinks import provenance

EXIT_OK = 0
EXIT_GAVE_UP = 1  # every attempt raised
EXIT_USAGE = 2
EXIT_MODEL = 3  # the model endpoint failed
EXIT_KERNEL = 4  # the kernel or gateway failed (start, death, refused token)
EXIT_EXISTING = 5  # --run-existing: a cell already in the notebook raised
EXIT_REFUSED = 6  # the policy refused the code (denied, rejected, or nobody to approve it)
EXIT_BUDGET = 7  # a token budget would have been exceeded
EXIT_INTERRUPTED = 130

# Runs in the kernel: the same context the magic builds, from the kernel's own
# variables.  A remote kernel may lack jupyter_ai_ci; then we say so and fall
# back to the notebook's cells.
_CONTEXT_SNIPPET = """\
def _aici_context(request, cells, budget):
    from jupyter_ai_ci.context import CellRecord, build_context, user_variables
    ip = get_ipython()
    variables = user_variables(ip.user_ns, ip.user_ns_hidden)
    return build_context(request, variables, [CellRecord(s, o) for s, o in cells], budget)
try:
    print({marker!r} + _aici_context({request!r}, {cells!r}, {budget!r}))
except ImportError:
    pass
finally:
    del _aici_context
"""
_MARKER = "\x02aici-context\x03"


@dataclass
class RunOptions:
    request: str
    kernel_name: str = "python3"
    gateway_url: str = ""
    gateway_token: str = ""
    run_existing: bool = False
    timeout: float = 600.0  # per cell, then interrupt
    receive_timeout: float = 5.0
    startup_timeout: float = 60.0
    loop: LoopSettings = field(default_factory=LoopSettings)  # policy and token budget included
    context_tokens: int = 3000
    snapshot_max_bytes: int = 1 << 30  # largest object copied so a failed attempt can be undone


@dataclass
class TokenBudget:
    """The command's token budgets: ``per_request`` for each notebook's run, ``per_session`` for
    the whole command.  Runs going at once (``--jobs``) see only what finished runs spent, so
    together they may pass ``per_session`` by what was in flight."""

    per_request: int = 0
    per_session: int = 0
    spent: int = 0

    def next_limit(self) -> int | None:
        """The next run's ``LoopSettings.token_budget`` (0: none); None once the command's is spent."""
        limits = [self.per_request] if self.per_request else []
        if self.per_session:
            if self.spent >= self.per_session:
                return None
            limits.append(self.per_session - self.spent)
        return min(limits) if limits else 0


@dataclass
class RunResult:
    path: Path
    exit_code: int
    message: str
    outcome: Outcome | None = None
    timings: Timings = field(default_factory=Timings)
    executions: int = 0


async def start_kernel(options: RunOptions, cwd: Path) -> KernelConnection:
    if options.gateway_url:
        from .executors.gateway import GatewayKernel

        return await GatewayKernel.start(options.gateway_url, options.gateway_token, options.kernel_name,
                                         request_timeout=max(options.receive_timeout, 5.0),
                                         startup_timeout=options.startup_timeout)
    return await LocalKernel.start(options.kernel_name, cwd=str(cwd), startup_timeout=options.startup_timeout)


async def kernel_context(executor: KernelExecutor, request: str, cells: Sequence[CellRecord],
                         budget: int) -> str:
    pairs = [(c.source, c.output) for c in cells]
    code = _CONTEXT_SNIPPET.format(marker=_MARKER, request=request, cells=pairs, budget=budget)
    result = await executor.run(code, store_history=False, max_output_chars=budget * 8 + 1000)
    if result.ok and _MARKER in result.output:
        return result.output.split(_MARKER, 1)[1].rstrip("\n")
    return build_context(request, [], cells, budget)


async def run_notebook(path: Path, options: RunOptions, model: AsyncModelClient, model_name: str,
                       host: str, reporter: Reporter | None = None,
                       approver: Approver | AsyncApprover | None = None) -> RunResult:
    """Run the request against one notebook; save it only when code ran (or prose answered).

    ``approver`` answers what the policy asks about; with none, flagged code is refused."""
    try:
        nb = load_or_create(path, options.kernel_name)
    except Exception as exc:  # nbformat raises many kinds: bad JSON, bad schema, unknown version
        raise UsageProblem(f"cannot read {path} as a notebook ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0][:200]}); it was not changed") from None
    timings = Timings()
    kernel = await start_kernel(options, path.parent)
    executor = KernelExecutor(kernel, timeout=options.timeout, receive_timeout=options.receive_timeout,
                              max_output_chars=options.loop.max_output_chars,
                              snapshot_max_bytes=options.snapshot_max_bytes,
                              undo_on_cancel=False)  # the kernel is shut down below
    try:
        if not await executor.transactions.probe() and reporter is not None:
            # Said up front: a failure later would otherwise be the first the user hears of it.
            reporter.notice(Notice("not-undoable", WHY_NOT))
        if options.run_existing:
            failed = await _run_existing(nb, executor)
            if failed:
                return RunResult(path, EXIT_EXISTING, failed, executions=executor.executions)
        context = await kernel_context(executor, options.request, cell_records(nb), options.context_tokens)
        loop = agent_loop(options.request, context, options.loop)
        outcome = await adrive(loop, model, executor, reporter, timings, approver)
    finally:
        try:
            await asyncio.shield(kernel.shutdown())
        except (KernelError, OSError):
            pass  # the run's own error (or result) is what the user needs to see
    n = len(outcome.attempts)
    tries = f"{n} attempt{'' if n == 1 else 's'}"
    tokens = f"{outcome.usage.prompt_tokens} in / {outcome.usage.completion_tokens} out tokens"
    if outcome.status == "refused":
        return RunResult(path, EXIT_REFUSED, f"{outcome.reason}; the notebook was not changed",
                         outcome, timings, executor.executions)
    if outcome.status == "over-budget":
        return RunResult(path, EXIT_BUDGET, f"stopped: {outcome.reason} (--max-tokens-per-request, "
                         "--max-tokens-per-session); the notebook was not changed", outcome, timings,
                         executor.executions)
    if outcome.status == "failed":
        last = outcome.last_error
        why = last.one_line() if last else "the model answered the traceback without code"
        early = " (the same error twice)" if outcome.early_stop else ""
        return RunResult(path, EXIT_GAVE_UP, f"gave up after {tries}{early}; last error: {why}; "
                         "the notebook was not changed", outcome, timings, executor.executions)
    sink = NotebookSink(nb, executor.execution_count)
    where = sink.insert(outcome.cells, provenance(options.request, outcome, model_name, host), outcome.answer)
    save(nb, path)
    what = "answered without code" if outcome.status == "answered" else f"{where} after {tries}"
    spent = f"model {timings.model:.1f} s, kernel {timings.execute:.1f} s"
    return RunResult(path, EXIT_OK, f"{what} ({tokens}; {spent})", outcome, timings, executor.executions)


async def _run_existing(nb: Node, executor: KernelExecutor) -> str:
    """Run the notebook's code cells in order, refreshing their outputs; the first error stops."""
    cells = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    for index, cell in enumerate(cells, start=1):
        result = await executor.aexecute(cell.source)
        set_outputs(cell, result, executor.execution_count(result))
        if result.error is not None:
            return (f"existing code cell {index} raised {result.error.one_line()}; "
                    "fix the notebook or run without --run-existing")
    return ""


def error_exit(path: Path, exc: AICIError) -> RunResult:
    """The one-line result for an error that ended a run early."""
    code = EXIT_MODEL if isinstance(exc, ModelError) else EXIT_USAGE if isinstance(exc, UsageProblem) \
        else EXIT_KERNEL
    return RunResult(path, code, f"{type(exc).__name__}: {exc}")


def summary(results: Sequence[RunResult]) -> str:
    """Machine-readable record of a batch, for ``--json``."""
    return json.dumps([{
        "notebook": str(r.path), "exit_code": r.exit_code, "message": r.message,
        "status": r.outcome.status if r.outcome else "error",
        "attempts": len(r.outcome.attempts) if r.outcome else 0,
        "prompt_tokens": r.outcome.usage.prompt_tokens if r.outcome else 0,
        "completion_tokens": r.outcome.usage.completion_tokens if r.outcome else 0,
        "model_seconds": round(r.timings.model, 3), "execute_seconds": round(r.timings.execute, 3),
        "total_seconds": round(r.timings.total, 3), "executions": r.executions,
    } for r in results], indent=2)
