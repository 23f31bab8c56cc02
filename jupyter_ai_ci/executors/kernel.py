"""Run code in a kernel over the Jupyter messaging protocol (command line, bench).

``KernelExecutor`` turns one ``execute_request`` and the iopub messages it
causes into an ``ExecutionResult``.  It talks to a ``KernelConnection``: a
local kernel started with jupyter_client (``local_kernel.LocalKernel``) or a kernel on
a Kernel/Enterprise Gateway (``executors.gateway.GatewayKernel``).  Every wait
has a receive timeout: when nothing arrives we ask whether the kernel still
lives, so a dead kernel is an error within seconds, never a hang; when the
code runs past its execution timeout we interrupt it and report a
``TimeoutError`` the model can fix, keeping the kernel and its state.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Sequence
from typing import Any

from jupyter_ai_ci.errors import KernelDied, KernelError
from jupyter_ai_ci.events import ErrorInfo, ExecutionResult, TransactionReport
from jupyter_ai_ci.executors import pip
from jupyter_ai_ci.executors.capture import OutputRecorder
from jupyter_ai_ci.executors.connection import KernelConnection
from jupyter_ai_ci.executors.transact import RemoteTransactions
from jupyter_ai_ci.safety.undostack import Limits
from jupyter_ai_ci.text import strip_ansi

# Notebook semantics: figures become outputs of the cell, whatever the caller's backend.
_CELL_LINE = re.compile(r"Cell In\[(\d+)\], line (\d+)")




def traceback_lineno(traceback: str) -> int | None:
    """The failing line of the executed cell, from IPython's formatted traceback.

    The first ``Cell In[n]`` frame is the cell we ran; its deepest frame is
    the line that failed (an error in a library points at the calling line),
    the same rule ``ShellExecutor`` applies to live frames.
    """
    found = _CELL_LINE.findall(traceback)
    if not found:
        return None
    cell = found[0][0]
    return int([line for c, line in found if c == cell][-1])


class KernelExecutor:
    """``AsyncExecutor`` over a ``KernelConnection``, with transactional attempts
    (``acheckpoint``/``arollback``/``acommit``, see ``transact.py``)."""

    def __init__(self, kernel: KernelConnection, timeout: float | None = 600.0,
                 receive_timeout: float = 5.0, max_output_chars: int = 4000,
                 interrupt_grace: float = 15.0, snapshot_max_bytes: int = 1 << 30,
                 undo_on_cancel: bool = True, undo: Limits | None = None) -> None:
        self.kernel = kernel
        self.timeout = timeout
        self.receive_timeout = receive_timeout
        self.max_output_chars = max_output_chars
        self.interrupt_grace = interrupt_grace
        self.executions = 0  # execute requests sent, for the benchmark
        self._counts: list[tuple[ExecutionResult, int]] = []
        self.transactions = RemoteTransactions(kernel, snapshot_max_bytes, receive_timeout, timeout, undo)
        # False when the kernel is shut down right after a cancelled run (the command line):
        # undoing there would only delay Ctrl-C.
        self.undo_on_cancel = undo_on_cancel

    async def acheckpoint(self, code: Sequence[str]) -> TransactionReport:
        return await self.transactions.checkpoint(code)

    async def arollback(self) -> TransactionReport:
        return await self.transactions.rollback()

    async def acommit(self) -> None:
        await self.transactions.commit()

    async def arollback_held(self) -> TransactionReport:
        """Undo a held attempt later (``run/held.py``): only the names its code may change, as the
        panel's executor does (the person's cells may have run in a session's kernel meanwhile)."""
        return await self.transactions.rollback(only_changed=True)

    async def ahold(self) -> TransactionReport:
        return await self.transactions.hold()

    async def ainstall(self, package: str) -> ExecutionResult:
        """``pip install`` into the kernel's own environment (``executors/pip.py``)."""
        return pip.result_from_reply(await self.transactions.evaluate(pip.expression(package), "pip install"))

    async def evaluate(self, expression: str) -> dict[str, Any]:
        """A silent user expression in the kernel (the run's snapshot, installs)."""
        return await self.transactions.evaluate(expression)

    def execution_count(self, result: ExecutionResult) -> int | None:
        """The kernel's ``In[n]`` for a result this executor returned."""
        return next((n for r, n in self._counts if r is result), None)

    async def aexecute(self, code: str) -> ExecutionResult:
        return await self.run(code, store_history=True)

    async def run(self, code: str, store_history: bool = True,
                  max_output_chars: int | None = None) -> ExecutionResult:
        try:
            return await self._run(code, store_history, max_output_chars)
        except asyncio.CancelledError:
            # The run is being stopped (Ctrl-C): stop the code too, or the rollback that
            # follows would wait behind it.
            self.transactions.stopping = True
            if not self.undo_on_cancel:
                self.transactions.abandon()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.kernel.interrupt(), self.receive_timeout)
            raise

    async def _run(self, code: str, store_history: bool, max_output_chars: int | None) -> ExecutionResult:
        recorder = OutputRecorder(max_output_chars or self.max_output_chars)
        started = time.perf_counter()
        self.executions += 1
        msg_id = await self.kernel.send_execute(code, store_history)
        error: ErrorInfo | None = None
        count: int | None = None
        deadline = started + self.timeout if self.timeout else None
        interrupted_at: float | None = None
        clear_pending = False  # clear_output(wait=True): clear when the next output comes
        while True:
            # Checked on every message, not only on silence: code printing in an
            # endless loop never leaves the kernel quiet.
            now = time.perf_counter()
            if deadline is not None and interrupted_at is None and now >= deadline:
                await self.kernel.interrupt()
                interrupted_at = now
            if interrupted_at is not None and now - interrupted_at > self.interrupt_grace:
                raise KernelError(f"the kernel ({self.kernel.description}) ignored an interrupt for "
                                  f"{self.interrupt_grace:g} s; it was shut down")
            wait = self.receive_timeout
            if deadline is not None and interrupted_at is None:
                wait = max(min(wait, deadline - now), 0.01)
            msg = await self.kernel.receive_iopub(wait)
            if msg is None:
                if not await self.kernel.is_alive():
                    raise KernelDied(f"the kernel ({self.kernel.description}) died while running code "
                                     "and its variables are gone; see the kernel's log")
                continue
            kind = msg.get("msg_type") or msg.get("header", {}).get("msg_type")
            content = msg.get("content", {})
            if kind == "status" and content.get("execution_state") in ("restarting", "dead"):
                raise KernelDied(f"the kernel ({self.kernel.description}) died while running code "
                                 "and its variables are gone; see the kernel's log")
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue  # late output of an earlier request, or another client's
            if kind == "status" and content.get("execution_state") == "idle":
                break
            if clear_pending and kind in ("stream", "display_data", "execute_result"):
                recorder.clear()
                clear_pending = False
            if kind == "clear_output":
                # Progress bars redraw by clearing; the saved cell keeps the last frame,
                # as Jupyter shows it.  The model's text keeps everything (it is capped).
                clear_pending = bool(content.get("wait"))
                if not clear_pending:
                    recorder.clear()
            elif kind == "stream":
                recorder.stream(content.get("name", "stdout"), content.get("text", ""))
            elif kind == "display_data":
                recorder.display(content.get("data", {}), content.get("metadata"))
            elif kind == "execute_result":
                recorder.execute_result(content.get("data", {}), content.get("metadata"))
                count = content.get("execution_count", count)
            elif kind == "execute_input":
                count = content.get("execution_count", count)
            elif kind == "error":
                text = strip_ansi("\n".join(content.get("traceback", [])))
                error = ErrorInfo(content.get("ename", "Error"), content.get("evalue", ""),
                                  text, traceback_lineno(text))
        if interrupted_at is not None:
            # The model sees why its code stopped, and can write a faster version.
            error = ErrorInfo("TimeoutError", f"the code ran longer than {self.timeout:g} s and was "
                              "interrupted", recorder.text.getvalue()[-2000:] + "\nKeyboardInterrupt")
        result = ExecutionResult(
            output=recorder.text.getvalue(),
            result=recorder.result,
            displays=tuple(recorder.displays),
            figures=tuple(recorder.figures),
            error=error,
            seconds=time.perf_counter() - started,
            notes=recorder.notes(),
            outputs=_with_count(recorder.outputs, count),
        )
        if count is not None:
            self._counts.append((result, count))
        return result


def _with_count(outputs: list[dict[str, Any]], count: int | None) -> tuple[dict[str, Any], ...]:
    for out in outputs:
        if out["output_type"] == "execute_result":
            out["execution_count"] = count
    return tuple(outputs)
