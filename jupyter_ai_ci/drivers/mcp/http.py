"""The MCP server inside the Jupyter server: the same ``MCPServer`` as stdio (``server.py``),
whose kernels are the notebooks' sessions' (``sessions.py``), and the SDK's streamable HTTP
session manager that ``extension.py``'s handler hands each request to.

Built on the first request (importing the SDK costs the server's start about 0.9 s otherwise).
A request reaches it only through jupyter_server's own door (``extension.py``), whose Host and
Origin checks are the ones the person configured; so the SDK's DNS-rebinding check is off here:
two checks that disagree (a server behind a proxy, ``allow_remote_access``) would refuse what the
server allows.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.drivers.headless import KernelOptions
from jupyter_ai_ci.drivers.mcp.notebooks import Notebooks
from jupyter_ai_ci.drivers.mcp.progress import HOW_TO_ALLOW_IN_SERVER
from jupyter_ai_ci.drivers.mcp.server import build
from jupyter_ai_ci.drivers.mcp.sessions import SessionKernels


class Endpoint:
    """The server's one MCP server and its session manager, running for the server's life.

    Its session manager starts with the first request: the extension loads before the server's
    event loop runs.  jupyter_server gives a module extension no stop hook (only an ExtensionApp gets
    ``stop_extension``): the kernels are the server's, which shuts them down as it exits, and
    ``stop`` (the tests call it) ends the sessions and lets the kernels' clients go."""

    def __init__(self, settings: AICISettings, root: Path, kernel_manager: Any, session_manager: Any) -> None:
        kernels = SessionKernels(root, kernel_manager, session_manager)
        self.notebooks = Notebooks(root, settings, KernelOptions(timeout=settings.execution_timeout), kernels)
        # No --yes here: flagged code is asked about through the client, or allowed in the settings.
        server = build(self.notebooks, how_to_allow=HOW_TO_ALLOW_IN_SERVER)
        server.streamable_http_app(transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        self.manager: StreamableHTTPSessionManager = server.session_manager
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()

    async def started(self) -> StreamableHTTPSessionManager:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())
        await asyncio.wait([asyncio.ensure_future(self._ready.wait()), self._task],
                           return_when=asyncio.FIRST_COMPLETED)
        if self._task.done():  # it could not start: the request fails (500, logged) with its error
            self._task.result()
            raise RuntimeError("the MCP session manager stopped")
        return self.manager

    async def _run(self) -> None:
        async with self.manager.run():  # its lifespan, once: the tools' kernels are let go when it ends
            self._ready.set()
            await self._stop.wait()

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task


def owner(username: str) -> dict[str, Any]:
    """The scope entry that ties an MCP session to the Jupyter user who opened it: the SDK answers
    another user's request with that session's id as if the session did not exist (404)."""
    return {"user": AuthenticatedUser(AccessToken(token="", client_id="jupyter-server", subject=username,
                                                  scopes=[]))}
