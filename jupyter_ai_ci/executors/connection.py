"""The one interface every way of reaching a kernel offers (local, gateway).

Its own module: the executor and its transactions (``transact.py``) both
talk to a connection, and neither should import the other for it.
"""

from __future__ import annotations

from typing import Any, Protocol


class KernelConnection(Protocol):
    """One running kernel, however it is reached."""

    description: str

    async def send_execute(self, code: str, store_history: bool) -> str:
        """Send an execute_request; return its msg_id."""
        ...

    async def receive_iopub(self, timeout: float) -> dict[str, Any] | None:
        """The next iopub message, or None when ``timeout`` seconds pass first."""
        ...

    async def send_expressions(self, expressions: dict[str, str]) -> str:
        """Send a silent execute_request with no code and these user expressions; return its msg_id."""
        ...

    async def receive_reply(self, msg_id: str, timeout: float) -> dict[str, Any] | None:
        """The content of the execute_reply to ``msg_id``, or None when ``timeout`` seconds pass first."""
        ...

    async def interrupt(self) -> None: ...
    async def is_alive(self) -> bool: ...
    async def shutdown(self) -> None: ...
