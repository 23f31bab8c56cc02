"""The MCP tools over streamable HTTP at ``/ai-ci/mcp``, inside the Jupyter server.

The same ``MCPServer`` as stdio (``server.py``), whose kernels are the notebooks' sessions'
(``sessions.py``).  A request reaches it only through jupyter_server's own door: ``APIHandler``
checks the Host header (``allow_remote_access``, ``local_hostnames``), the Origin (``allow_origin``)
and, for a cookie without a token, XSRF; ``@authenticated`` wants the server's token or login
cookie (403 without); the authorizer must let the user execute code in kernels.  So the SDK's own
DNS-rebinding check is off here: the server's is the one the person configured, and two that
disagree (a server behind a proxy, ``allow_remote_access``) would refuse what the server allows.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import tornado.web
from jupyter_core.utils import ensure_async
from jupyter_server.base.handlers import APIHandler
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.drivers.headless import KernelOptions
from jupyter_ai_ci.drivers.mcp.asgi import Bridge
from jupyter_ai_ci.drivers.mcp.notebooks import Notebooks
from jupyter_ai_ci.drivers.mcp.progress import HOW_TO_ALLOW_IN_SERVER
from jupyter_ai_ci.drivers.mcp.server import build
from jupyter_ai_ci.drivers.mcp.sessions import SessionKernels

ENDPOINT_KEY = "jupyter_ai_ci_mcp"
PATH = ("ai-ci", "mcp")


class Endpoint:
    """The server's one MCP server and its session manager, running for the server's life.

    Started by the first request, because the extension loads before the server's event loop
    runs.  jupyter_server gives a module extension no stop hook (only an ExtensionApp gets
    ``stop_extension``): the kernels are the server's, which shuts them down as it exits, and
    ``stop`` is there for whoever can call it."""

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


class MCPHandler(APIHandler):
    """``/ai-ci/mcp``: POST carries the client's messages, GET its stream of the server's,
    DELETE ends its MCP session; each served by the SDK's transport through ``Bridge``."""

    bridge: Bridge | None = None

    async def _serve(self) -> None:
        allowed = await ensure_async(self.authorizer.is_authorized(self, self.current_user, "execute", "kernels"))
        if not allowed:  # the tools run code: whoever may not run code in kernels may not call them
            raise tornado.web.HTTPError(403)
        endpoint: Endpoint = self.settings[ENDPOINT_KEY]
        manager = await endpoint.started()
        self.bridge = Bridge(self)
        await self.bridge.serve(manager.handle_request)

    def on_connection_close(self) -> None:
        if self.bridge is not None:
            self.bridge.closed()  # the transport is told http.disconnect: a call in flight is cancelled

    @tornado.web.authenticated
    async def get(self) -> None:
        await self._serve()

    @tornado.web.authenticated
    async def post(self) -> None:
        await self._serve()

    @tornado.web.authenticated
    async def delete(self) -> None:
        await self._serve()


def setup(web_app: Any, settings: AICISettings, root: Path, kernel_manager: Any, session_manager: Any) -> str:
    """Serve the tools at ``{base_url}ai-ci/mcp``; the URL's path."""
    from jupyter_server.utils import url_path_join

    web_app.settings[ENDPOINT_KEY] = Endpoint(settings, root, kernel_manager, session_manager)
    url = url_path_join(web_app.settings["base_url"], *PATH)
    web_app.add_handlers(".*$", [(url, MCPHandler)])
    return str(url)
