"""The jupyter_server extension point that serves the MCP tools at ``/ai-ci/mcp``.

A point of its own beside the sidebar's (``drivers/server``), listed after it so the settings it
made (the key kept out of kernels) are the ones used.  A request reaches the tools only through
jupyter_server's own door: ``APIHandler`` checks the Host header (``allow_remote_access``,
``local_hostnames``), the Origin (``allow_origin``) and, for a cookie without a token, XSRF;
``@authenticated`` wants the server's token or login cookie (403 without); the authorizer must let
the user execute code in kernels.  Light: the SDK is imported by the first request (``http.py``),
and a server without the ``mcp`` package says so in one line instead of a failed extension.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tornado.web
from jupyter_core.utils import ensure_async
from jupyter_server.base.handlers import APIHandler

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.drivers.mcp.asgi import Bridge

if TYPE_CHECKING:
    from jupyter_ai_ci.drivers.mcp.http import Endpoint

ENDPOINT_KEY = "jupyter_ai_ci_mcp"
PATH = ("ai-ci", "mcp")


@dataclass
class Served:
    """What the endpoint is built from, and the endpoint once a request built it."""

    settings: AICISettings
    root: Path
    kernel_manager: Any
    session_manager: Any
    endpoint: Endpoint | None = None

    def get(self) -> Endpoint:
        if self.endpoint is None:
            from jupyter_ai_ci.drivers.mcp.http import Endpoint

            self.endpoint = Endpoint(self.settings, self.root, self.kernel_manager, self.session_manager)
        return self.endpoint


class MCPHandler(APIHandler):
    """``/ai-ci/mcp``: POST carries the client's messages, GET its stream of the server's,
    DELETE ends its MCP session; each served by the SDK's transport through ``Bridge``."""

    bridge: Bridge | None = None

    async def _serve(self) -> None:
        allowed = await ensure_async(self.authorizer.is_authorized(self, self.current_user, "execute", "kernels"))
        if not allowed:  # the tools run code: whoever may not run code in kernels may not call them
            raise tornado.web.HTTPError(403)
        from jupyter_ai_ci.drivers.mcp.http import owner

        served: Served = self.settings[ENDPOINT_KEY]
        manager = await served.get().started()
        self.bridge = Bridge(self)
        await self.bridge.serve(manager.handle_request, owner(self.current_user.username))

    def on_connection_close(self) -> None:
        if self.bridge is not None:
            self.bridge.closed()  # the transport is told http.disconnect

    @tornado.web.authenticated
    async def get(self) -> None:
        await self._serve()

    @tornado.web.authenticated
    async def post(self) -> None:
        await self._serve()

    @tornado.web.authenticated
    async def delete(self) -> None:
        await self._serve()


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.utils import url_path_join

    from jupyter_ai_ci.drivers.server.handlers import SETTINGS_KEY

    log = serverapp.log
    if importlib.util.find_spec("mcp") is None:
        log.info("jupyter_ai_ci: MCP tools not served at /ai-ci/mcp: pip install 'jupyter-ai-ci[mcp]'")
        return
    state = serverapp.web_app.settings.get(SETTINGS_KEY)
    root = getattr(serverapp.contents_manager, "root_dir", None)
    if state is None or not isinstance(root, str) or not Path(root).is_dir():
        log.warning("jupyter_ai_ci: MCP tools not served: %s", "the sidebar's extension did not load"
                    if state is None else "the contents manager keeps no folder on disk")
        return
    web_app = serverapp.web_app
    web_app.settings[ENDPOINT_KEY] = Served(state["settings"], Path(root), serverapp.kernel_manager,
                                            serverapp.session_manager)
    url = url_path_join(web_app.settings["base_url"], *PATH)
    web_app.add_handlers(".*$", [(url, MCPHandler)])
    log.info("jupyter_ai_ci: MCP tools (streamable HTTP) at %s", url)
