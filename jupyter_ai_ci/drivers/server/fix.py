"""The Fix / Explain action on a cell's error output, driven from the server.

The panel sends the failed cell as the notebook holds it (its source now, its error
output); the request, its checks and its verdict are the shared run's
(``run.fixcell``), the attempt's transaction is held open (``run.held``) and the
panel runs each attempt in the kernel without making it a cell (``scratch``).  What
comes back is offered as a diff with the attempt's outputs; the panel's Accept
commits the held attempt (the kernel keeps its state: nothing runs again) and puts
the fix in the cell, Reject rolls it back.  A run that ends any other way (Stop, an
error, the panel gone) rolls it back too.
"""

from __future__ import annotations

import ast
import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from jupyter_ai_ci.context.privacy import mask_secrets
from jupyter_ai_ci.drivers.server.kernelcall import KernelCalls
from jupyter_ai_ci.drivers.server.protocol import (
    PanelReporter,
    RequestRefused,
    check_open,
    offered_model,
    session_usage,
)
from jupyter_ai_ci.drivers.server.run import TRANSACTION_TIMEOUT, SidebarRun
from jupyter_ai_ci.events import TransactionReport
from jupyter_ai_ci.executors.frontend import FrontendExecutor
from jupyter_ai_ci.run import fixcell
from jupyter_ai_ci.run.flow import RemoteKernel, run_async
from jupyter_ai_ci.run.held import HeldAttempt
from jupyter_ai_ci.run.request import Options
from jupyter_ai_ci.safety.undostack import Limits

MAX_TRACEBACK_LINES = 200
# The fixed cell's record of what it held: not METADATA_KEY, which marks cells a request
# generated (notebook/once.py would take the user's own cell for one).
FIX_METADATA_KEY = "jupyter_ai_ci_fix"


@dataclass(frozen=True)
class FixMessage:
    """The panel's ``fix`` message, every field checked (it comes from the websocket)."""

    kind: fixcell.Kind
    path: str
    kernel_id: str
    cell_id: str
    cell: fixcell.FailedCell
    model: str

    @classmethod
    def parse(cls, msg: dict[str, Any], offered: list[str]) -> FixMessage:
        kind = msg.get("kind")
        if kind not in fixcell.KINDS:
            raise RequestRefused("the panel asked for neither a fix nor an explanation")
        if not msg.get("kernel_id") or not msg.get("path") or not isinstance(msg.get("cell_id"), str):
            raise RequestRefused("open a notebook with a running kernel first")
        raw_error = msg.get("error")
        error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
        tb = error.get("traceback")
        lines = [str(line) for line in tb[:MAX_TRACEBACK_LINES]] if isinstance(tb, list) else []
        count = msg.get("count")
        cell = fixcell.from_outputs(str(msg.get("source") or ""), str(error.get("ename") or "Error"),
                                    str(error.get("evalue") or ""), lines,
                                    count if isinstance(count, int) and not isinstance(count, bool) else None)
        return cls(kind, str(msg["path"]), str(msg["kernel_id"]), msg["cell_id"], cell,
                   offered_model(msg.get("model"), offered))


async def ran_source(evaluate: Callable[[str], Awaitable[dict[str, Any]]], count: int | None) -> str | None:
    """The source that ran as ``In [count]`` (the kernel's history), or None if it cannot say."""
    if count is None:
        return None
    try:
        reply = await evaluate(f"get_ipython().history_manager.input_hist_raw[{int(count)}]")
        value = ast.literal_eval(str(reply.get("data", {}).get("text/plain", "")))
    except Exception:  # noqa: BLE001 - an old kernel, a reset history: the fix goes on without it
        return None
    return value if isinstance(value, str) else None


def ran_note(attempts: int) -> str:
    retries = attempts - 1
    return "Ran without error" + (f" after {retries} {'retry' if retries == 1 else 'retries'}." if retries else ".")


class SidebarFix(SidebarRun):
    """One Fix or Explain click, from the cell's error to Accept or Reject."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.held: HeldAttempt | None = None
        self._decision: asyncio.Future[bool] | None = None
        self._offer = ""

    def fix_decided(self, message: dict[str, Any]) -> None:
        if self._decision is not None and not self._decision.done() and message.get("id") == self._offer:
            self._decision.set_result(message.get("accept") is True)

    async def run(self, raw: dict[str, Any]) -> None:
        try:
            await super().run(raw)
        finally:  # never left half-decided: a fix nobody accepted is rolled back
            if self.held is not None and self.held.held and not self.held.decided:
                await asyncio.shield(self.held.areject())

    async def _run(self, raw: dict[str, Any]) -> None:
        msg = FixMessage.parse(raw, self.chats.settings.offered_models())
        await check_open(msg, self.kernel_manager, self.session_manager)  # type: ignore[arg-type]
        chat = self.chats.get(msg.path)
        self.session = chat.session
        verb = "Fix" if msg.kind == "fix" else "Explain"
        self.transcript = chat.begin(f"{verb} {msg.cell.label}: {msg.cell.error}")
        calls = KernelCalls(self.kernel_manager, msg.kernel_id)

        async def in_kernel(expr: str) -> dict[str, Any]:
            return await calls.expression(expr, TRANSACTION_TIMEOUT)

        try:
            await self._fix(msg, in_kernel)
        finally:
            calls.close()

    async def _fix(self, msg: FixMessage, in_kernel: Callable[[str], Awaitable[dict[str, Any]]]) -> None:
        session = self.chats.get(msg.path).session
        cell = fixcell.compared(msg.cell, await ran_source(in_kernel, msg.cell.count))
        run = fixcell.make_run(session, cell, msg.kind, Options(model=msg.model), thread=msg.path,
                               source="fix-action", say=self.sayer())
        run.check()
        self.send({"type": "started", "model": run.endpoint.model, "host": run.endpoint.host, "kind": msg.kind})
        if cell.changed:
            self.send({"type": "notice", "kind": "other", "text": fixcell.changed_note(cell), "attempt": 0,
                       "step": 0})
        s = session.settings
        self.executor = FrontendExecutor(self.send, None, {}, s.max_output_chars, in_kernel,
                                         s.snapshot_max_bytes, scratch=True, undo=Limits.of(s))
        self.held = HeldAttempt(self.executor)
        result = await run_async(run, RemoteKernel(in_kernel), self.held, PanelReporter(self.send, self.executor),
                                 self, notebook=())
        outcome = result.outcome
        usage = {"session": session_usage(session)}
        if msg.kind == "explain":
            self.send({"type": "done", "status": "answered", "answer": fixcell.explanation(outcome),
                       "message": f"Explained why {cell.label} failed; nothing was run.", **usage})
            return
        code = fixcell.fixed_code(cell, outcome)
        self._offer = f"f{secrets.token_hex(6)}"
        self._decision = asyncio.get_running_loop().create_future()
        meta = {**result.provenance, "fixes": {"cell": cell.label,
                                               "source": mask_secrets(cell.source, run.secrets)}}
        self.send({"type": "fix", "id": self._offer, "cell_id": msg.cell_id, "before": cell.source,
                   "after": code, "diff": fixcell.diff(cell.source, code, cell.label),
                   "outputs": [o for c in outcome.cells for o in c.result.outputs],
                   "ran": ran_note(len(outcome.attempts)), "metadata": {FIX_METADATA_KEY: meta}})
        if await self._decision:
            await self.held.aaccept()
            self.send({"type": "done", "status": "success", **usage,
                       "message": f"Accepted: {cell.label} holds the fix; the kernel kept what it did "
                                  "(it ran once)."})
        else:
            report = await self.held.areject()
            self.send({"type": "done", "status": "rejected", **usage, "message": rejected_note(report, cell.label)})


def rejected_note(report: TransactionReport, label: str) -> str:
    """What Reject did, "as it was" only when it is true."""
    if not report.supported:
        return "Rejected, but the kernel could not undo it: did it restart? What the fix did in the kernel stays."
    if report.not_saved:
        return (f"Rejected: the fix was rolled back, except: {'; '.join(report.not_saved)}. "
                f"{label} itself is unchanged.")
    return f"Rejected: the fix was rolled back; {label} is as it was."
