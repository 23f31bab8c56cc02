"""A kernel a Jupyter server holds, reached from inside that server.

The MCP tools served by the server extension run in the kernel of the notebook's open session,
the one the person's browser talks to.  ``ServerKernel`` is the ``KernelConnection`` to it: a
client of its own on the kernel the server's manager started, which never shuts that kernel
down (it is the person's; the server and its sessions decide when it ends).
"""

from __future__ import annotations

from typing import Any

from jupyter_ai_ci.errors import KernelError
from jupyter_ai_ci.executors.local_kernel import LocalKernel


def own_client(kernel: Any) -> Any:
    """A started client of ``kernel`` (a jupyter_client manager) with a session of its own.

    Clients sharing the manager's session share its socket identity, and the kernel would send
    our replies to whichever of them connected last (the browser's websocket bridge among them)."""
    from jupyter_client.session import Session

    own = Session(key=kernel.session.key, signature_scheme=kernel.session.signature_scheme)
    client = kernel.client(session=own)
    client.start_channels()
    return client


class ServerKernel(LocalKernel):
    """``KernelConnection`` to kernel ``kernel_id`` of a server's (multi) kernel manager."""

    def __init__(self, manager: Any, client: Any, kernel_id: str) -> None:
        super().__init__(manager, client, "server kernel")
        self.kernel_id = kernel_id
        self.description = f"the server's kernel {kernel_id[:8]}"

    @classmethod
    async def attach(cls, kernel_manager: Any, kernel_id: str, ready_timeout: float = 60.0) -> ServerKernel:
        if kernel_id not in kernel_manager:
            raise KernelError(f"the kernel {kernel_id[:8]} is not running in this server")
        kernel = kernel_manager.get_kernel(kernel_id)
        client = own_client(kernel)
        try:
            await client.wait_for_ready(timeout=ready_timeout)
        except Exception as exc:  # a kernel still starting, or one that died meanwhile
            client.stop_channels()
            raise KernelError(f"the server's kernel {kernel_id[:8]} did not answer: {exc}") from None
        return cls(kernel, client, kernel_id)

    async def shutdown(self) -> None:
        # Only our client goes: the kernel stays with its session (and the person's browser).
        self.client.stop_channels()
