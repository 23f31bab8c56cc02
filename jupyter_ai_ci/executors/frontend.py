"""Run code through the browser: the sidebar's executor.

The server asks the panel (over the run's websocket) to insert a cell and run
it in the notebook's kernel, and waits for the cell's outputs.  Running in the
frontend, not from the server, is what makes the code an ordinary notebook
cell: the user sees it appear, run and print, like a cell they typed.

A fix *replaces* the cells of the attempt that failed: the first block of the
next attempt names them in ``replace`` and the frontend puts the new cell in
their place.  The notebook ends up holding only code that ran; the panel keeps
every attempt, with its traceback.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from jupyter_ai_ci.errors import ExecutionAborted
from jupyter_ai_ci.events import ErrorInfo, Execute, ExecutionResult, TransactionReport
from jupyter_ai_ci.executors import pip
from jupyter_ai_ci.executors.capture import standin
from jupyter_ai_ci.notebook.reader import figure_words
from jupyter_ai_ci.safety import remote
from jupyter_ai_ci.safety.undostack import Limits, new_request_id
from jupyter_ai_ci.text import head_tail, strip_ansi

Send = Callable[[dict[str, Any]], None]
# Evaluates a user expression in the notebook's kernel (the server's own client).
KernelExpression = Callable[[str], Awaitable[dict[str, Any]]]
UNSUPPORTED = TransactionReport(supported=False)

# IPython names the frame of the cell "Cell In[7], line 3"; the deepest such
# frame is the line of the generated code that failed.
_CELL_LINE = re.compile(r"Cell In\[\d*\], line (\d+)")


def result_from_reply(reply: dict[str, Any], max_output_chars: int) -> ExecutionResult:
    """An ``ExecutionResult`` from the outputs (nbformat dicts) the frontend sends back."""
    outputs = [o for o in reply.get("outputs") or [] if isinstance(o, dict)]
    text: list[str] = []
    displays: list[str] = []
    figures: list[str] = []
    result: str | None = None
    error: ErrorInfo | None = None
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            value = out.get("text", "")
            text.append("".join(value) if isinstance(value, list) else str(value))
        elif kind == "display_data":
            displays.append(standin(out.get("data") or {}))
        if kind in ("display_data", "execute_result"):
            words = figure_words(out.get("data") or {}, out.get("metadata"))
            figures.extend([words] if words else [])
        if kind == "execute_result":
            plain = (out.get("data") or {}).get("text/plain", "")
            result = "".join(plain) if isinstance(plain, list) else str(plain)
        elif kind == "error":
            error = _error(out)
    if error is None and reply.get("status") == "error":
        # An error reply without an error output (e.g. a cell cleared while it ran).
        error = _error(reply)
    return ExecutionResult(
        output=head_tail("".join(text), max_output_chars),
        result=result,
        displays=tuple(displays),
        figures=tuple(figures),
        error=error,
        seconds=float(reply.get("seconds") or 0.0),
        outputs=tuple(outputs),
    )


def _error(data: dict[str, Any]) -> ErrorInfo:
    tb = data.get("traceback") or []
    text = strip_ansi("\n".join(tb) if isinstance(tb, list) else str(tb))
    ename = str(data.get("ename") or "Error")
    evalue = str(data.get("evalue") or "")
    lines = _CELL_LINE.findall(text)
    return ErrorInfo(ename, evalue, text or f"{ename}: {evalue}", int(lines[-1]) if lines else None)


class FrontendExecutor:
    """``AsyncExecutor`` that has the browser insert and run each block.

    ``send`` delivers a message to the panel; the websocket handler calls
    ``resolve`` with the panel's answer and ``abort`` when the panel goes away.
    With ``kernel_expression`` an attempt is a transaction (``remote.py``): the
    kernel snapshots what the code may change and a failed attempt is undone.
    """

    def __init__(self, send: Send, anchor_cell_id: str | None,
                 metadata: dict[str, Any] | None = None, max_output_chars: int = 4000,
                 kernel_expression: KernelExpression | None = None,
                 snapshot_max_bytes: int = 1 << 30, kernel_install: KernelExpression | None = None,
                 scratch: bool = False, undo: Limits | None = None) -> None:
        self.send = send
        self.undo = undo or Limits()
        self.request = new_request_id()  # groups this run's attempts for an undo in the kernel
        # True: the panel runs each block in the kernel without making it a cell (a fix tried
        # before it is offered: the cell it would replace changes only when it is accepted).
        self.scratch = scratch
        self.kernel_expression = kernel_expression
        self.kernel_install = kernel_install  # like kernel_expression, with an install's longer timeout
        self.snapshot_max_bytes = snapshot_max_bytes
        self.metadata = metadata or {}
        self.max_output_chars = max_output_chars
        self._after = anchor_cell_id  # new cells go below this one
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._action: Execute | None = None
        self._attempt_cells: list[str] = []  # cells of the current attempt
        self._attempt: int | None = None
        self._failed = False  # the current attempt has raised
        self.cells: list[str] = []  # every cell left in the notebook by this run
        self.undo_notes: list[str] = []  # "undo not kept: ..." from the kernel's commits

    def begin(self, action: Execute) -> None:
        """Told before each block which attempt and block it is (via the reporter)."""
        self._action = action

    async def aexecute(self, code: str) -> ExecutionResult:
        action = self._action
        replace: list[str] = []
        if action is not None and action.attempt != self._attempt:
            if self._attempt is not None and action.block == 0 and self._failed:
                replace = list(self._attempt_cells)
            self._attempt = action.attempt
            self._attempt_cells = []
            self._failed = False
        request_id = f"x{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self.send({
            "type": "execute",
            "id": request_id,
            "code": code,
            "after": self._after,
            "replace": replace,
            "metadata": self.metadata,
            "attempt": action.attempt if action is not None else 0,  # a stopped attempt's cells go
            **({"scratch": True} if self.scratch else {}),
        })
        try:
            reply = await future
        finally:
            self._pending.pop(request_id, None)
        if reply.get("status") == "aborted":
            raise ExecutionAborted(str(reply.get("reason") or "the notebook could not run the cell"))
        cell_id = reply.get("cell_id")
        if isinstance(cell_id, str):
            for old in replace:
                if old in self.cells:
                    self.cells.remove(old)
            self.cells.append(cell_id)
            self._attempt_cells.append(cell_id)
            self._after = cell_id
        result = result_from_reply(reply, self.max_output_chars)
        if result.error is not None and result.error.ename == "KeyboardInterrupt":
            # The user interrupted the kernel: stop the request, not ask for a fix.
            raise ExecutionAborted("the cell was interrupted, so the request stopped")
        self._failed = not result.ok
        return result

    async def _transaction(self, op: str, code: Sequence[str] = (), only_changed: bool = False) -> TransactionReport:
        if self.kernel_expression is None:
            return UNSUPPORTED
        try:
            value = await self.kernel_expression(remote.expression(op, code, self.snapshot_max_bytes, only_changed,
                                                                   request=self.request, limits=self.undo))
        except Exception:  # noqa: BLE001 - a kernel that cannot answer means "cannot undo"
            return UNSUPPORTED
        return remote.parse(value)

    async def ainstall(self, package: str) -> ExecutionResult:
        """``pip install`` into the notebook kernel's environment, through the server's own client."""
        if self.kernel_install is None:
            return ExecutionResult(error=ErrorInfo("InstallError", "this panel cannot install packages", ""))
        try:
            return pip.result_from_reply(await self.kernel_install(pip.expression(package)))
        except Exception as exc:  # noqa: BLE001 - a busy or gone kernel: the install failed, the run goes on
            return ExecutionResult(error=ErrorInfo("InstallError", f"the kernel did not answer ({exc})", ""))

    async def acheckpoint(self, code: Sequence[str]) -> TransactionReport:
        return await self._transaction("checkpoint", code)

    async def arollback(self) -> TransactionReport:
        # The attempt's cells go when the next one is inserted, as a failed one's do: a candidate
        # that ran cleanly is rolled back too (core/consensus.py), and the next takes its place.
        self._failed = True
        return await self._transaction("rollback")

    async def acommit(self) -> None:
        report = await self._transaction("commit")
        # Why the kernel kept no way back for the undo (it says so once, at the commit).
        self.undo_notes += [n for n in report.not_saved if n not in self.undo_notes]

    async def ahold(self) -> TransactionReport:
        return await self._transaction("hold")

    async def arollback_held(self) -> TransactionReport:
        """Undo a held attempt later (``run/held.py``): only the names its code may change."""
        return await self._transaction("rollback", only_changed=True)

    def resolve(self, message: dict[str, Any]) -> bool:
        future = self._pending.get(str(message.get("id")))
        if future is None or future.done():
            return False
        future.set_result(message)
        return True

    def abort(self, reason: str) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ExecutionAborted(reason))
