"""Silent requests from the server to a notebook's kernel: user expressions.

The sidebar's runs ask the kernel to describe its variables and to checkpoint,
roll back or commit an attempt (``remote.py``), over a client of their own
beside the browser's connection.  Each call is awaited before the browser is
asked to run the next cell, so the kernel sees them in order.
"""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_ai_ci.executors.server_kernel import own_client


class KernelCalls:
    """One kernel client for a run, started on the first call."""

    def __init__(self, kernel_manager: Any, kernel_id: str) -> None:
        self.kernel_manager = kernel_manager
        self.kernel_id = kernel_id
        self._client: Any = None
        self._lock = asyncio.Lock()

    async def expression(self, expr: str, timeout: float) -> dict[str, Any]:
        """Evaluate ``expr`` in the kernel; its ``user_expressions`` entry."""
        async with self._lock:  # one request at a time: replies are matched in order
            return await asyncio.wait_for(self._call(expr), timeout)

    async def _call(self, expr: str) -> dict[str, Any]:
        if self._client is None:
            self._client = own_client(self.kernel_manager.get_kernel(self.kernel_id))
        for _ in range(2):
            msg_id = self._client.execute("", silent=True, store_history=False, user_expressions={"x": expr})
            while True:
                reply = await self._client.get_shell_msg(timeout=None)
                if reply.get("parent_header", {}).get("msg_id") == msg_id:
                    break
            # ipykernel aborts the requests queued behind a cell that raised: Stop interrupts the
            # running cell, and the rollback sent meanwhile was dropped (found by hand: the stopped
            # attempt's variables stayed).  Asked again, it runs.
            if reply["content"].get("status") != "aborted":
                break
        value = reply["content"].get("user_expressions", {}).get("x", {})
        return value if isinstance(value, dict) else {}

    def close(self) -> None:
        if self._client is not None:
            self._client.stop_channels()
            self._client = None
