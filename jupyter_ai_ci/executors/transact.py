"""Transactional attempts in a kernel driven from outside (the command line, bench).

The loop asks for ``Checkpoint`` / ``Rollback`` / ``Commit`` around each
attempt; ``KernelExecutor`` answers them through this class, which sends
``jupyter_ai_ci.safety.remote``'s user expression in a silent ``execute_request`` and
waits for the reply on the shell channel.  The snapshot itself lives in the
kernel.  A kernel whose environment lacks jupyter_ai_ci answers with an
error; that is "cannot undo", remembered so later attempts skip the round trip.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from jupyter_ai_ci.errors import KernelDied, KernelError
from jupyter_ai_ci.events import TransactionReport
from jupyter_ai_ci.executors.connection import KernelConnection
from jupyter_ai_ci.safety import remote
from jupyter_ai_ci.safety.undostack import Limits, new_request_id

CANNOT_UNDO = TransactionReport(supported=False)
WHY_NOT = ("this kernel cannot undo a failed attempt (jupyter_ai_ci is not installed in its environment); "
           "what a failed attempt changes stays")


class RemoteTransactions:
    """Checkpoint, roll back and commit one attempt at a time in one kernel."""

    def __init__(self, kernel: KernelConnection, max_bytes: int = 1 << 30, receive_timeout: float = 5.0,
                 timeout: float | None = 600.0, undo: Limits | None = None) -> None:
        self.kernel = kernel
        self.undo = undo or Limits()
        self.request = new_request_id()  # groups this run's attempts for an undo in the kernel
        self.max_bytes = max_bytes
        self.receive_timeout = receive_timeout
        self.timeout = timeout  # a snapshot is bounded by max_bytes; this only guards a wedged kernel
        self.supported: bool | None = None  # None until the kernel has answered once
        self.stopping = False  # the run was cancelled mid-attempt and the code interrupted
        self.grace = 15.0  # then, seconds a rollback may take before we give up on it
        self._open = False  # a checkpoint is held in the kernel

    async def probe(self) -> bool:
        """Whether this kernel can undo; costs one round trip, the first time only."""
        if self.supported is None:
            await self._call("commit")  # a no-op with nothing checkpointed
        return bool(self.supported)

    def abandon(self) -> None:
        """Forget the checkpoint without a round trip: the kernel is about to go."""
        self._open = False

    async def checkpoint(self, code: Sequence[str]) -> TransactionReport:
        report = await self._call("checkpoint", code)
        self._open = report.supported
        return report

    async def rollback(self, only_changed: bool = False) -> TransactionReport:
        """``only_changed``: a held attempt rejected later: only the names its code may change go back
        (cells the person ran meanwhile keep what they did)."""
        # Without a checkpoint the kernel would see every name as new and drop it.
        if not self._open:
            return CANNOT_UNDO
        self._open = False
        if self.stopping:
            # Ctrl-C must end the command soon, even if the kernel ignores the interrupt.
            try:
                return await asyncio.wait_for(self._call("rollback", only_changed=only_changed), self.grace)
            except (asyncio.TimeoutError, KernelError):
                return CANNOT_UNDO
        return await self._call("rollback", only_changed=only_changed)

    async def hold(self) -> TransactionReport:
        """The attempt's code ended; its fate waits (a candidate, a tried fix): stop recording."""
        return await self._call("hold") if self._open else CANNOT_UNDO

    async def commit(self) -> None:
        if self._open:
            self._open = False
            await self._call("commit")

    async def _call(self, op: str, code: Sequence[str] = (), only_changed: bool = False) -> TransactionReport:
        if self.supported is False:
            return CANNOT_UNDO
        report = remote.parse(await self.evaluate(remote.expression(op, code, self.max_bytes, only_changed,
                                                                    request=self.request, limits=self.undo), op))
        self.supported = report.supported
        return report

    async def evaluate(self, expression: str, what: str = "request") -> dict[str, Any]:
        """Evaluate one silent user expression in the kernel; its ``user_expressions`` entry."""
        for _ in range(2):
            content = await self._reply(await self.kernel.send_expressions({"x": expression}), what)
            # ipykernel aborts requests queued just behind one that raised; ask again.
            if content.get("status") != "aborted":
                break
        value = content.get("user_expressions", {}).get("x", {})
        return value if isinstance(value, dict) else {}

    async def _reply(self, msg_id: str, op: str) -> dict[str, Any]:
        waited = 0.0
        while True:
            content = await self.kernel.receive_reply(msg_id, self.receive_timeout)
            if content is not None:
                return content
            if not await self.kernel.is_alive():
                raise KernelDied(f"the kernel ({self.kernel.description}) died during a {op} "
                                 "and its variables are gone; see the kernel's log")
            waited += self.receive_timeout
            if self.timeout and waited >= self.timeout:
                raise KernelError(f"the kernel ({self.kernel.description}) did not answer a {op} "
                                  f"within {self.timeout:g} s")
