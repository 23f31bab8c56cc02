"""Over stdio, with a Jupyter server running: the kernel of the notebook's session there.

``jupyter ai-ci mcp --server-url URL`` (its token from ``--server-token`` or ``JUPYTER_TOKEN``), or
with neither a running server of this user's found in Jupyter's runtime files whose root holds the
MCP server's root.  The agent's code then runs where the person's cells run, through the server's
REST and websocket API (the one a Kernel Gateway speaks: ``executors/gateway.py``); a notebook no
session has open gets one, as opening it in JupyterLab would.  The server owns those kernels: the MCP
session ending closes our websocket only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jupyter_ai_ci.drivers.mcp.notebooks import pick_session_kernel, still_kept
from jupyter_ai_ci.errors import UsageProblem
from jupyter_ai_ci.executors.connection import KernelConnection
from jupyter_ai_ci.executors.gateway import GatewayKernel, Service, request

JUPYTER = Service("Jupyter server", "--server-url", "--server-token / JUPYTER_TOKEN")
TIMEOUT = 20.0


@dataclass(frozen=True)
class Found:
    url: str
    token: str
    root: Path


def find_server(root: Path) -> Found | None:
    """A running Jupyter server of this user's (its runtime file) whose root holds ``root``."""
    try:
        from jupyter_server.serverapp import list_running_servers
    except ImportError:
        return None
    for info in list_running_servers():
        server_root = Path(str(info.get("root_dir") or info.get("notebook_dir") or "")).expanduser()
        if server_root.is_dir() and root.resolve().is_relative_to(server_root.resolve()):
            return Found(str(info["url"]), str(info.get("token", "")), server_root.resolve())
    return None


@dataclass
class RemoteSessions:
    """``KernelSource`` over a running Jupyter server's REST API."""

    url: str
    token: str
    root: Path  # the server's root folder: session paths are relative to it

    def api_path(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            raise UsageProblem(f"refused: {path} is outside the Jupyter server's root {self.root}") from None

    async def _call(self, method: str, api: str, body: dict[str, Any] | None, what: str) -> Any:
        return await request(self.url, self.token, method, api, json.dumps(body) if body is not None else None,
                             TIMEOUT, what, JUPYTER)

    async def session_kernel(self, path: Path) -> str | None:
        api = self.api_path(path)
        sessions = await self._call("GET", "/api/sessions", None, "list its sessions") or []
        return pick_session_kernel(sessions, api)

    async def connect(self, path: Path, kept: KernelConnection | None) -> KernelConnection:
        kernel_id = await self.session_kernel(path)
        if kernel_id is None:
            model = await self._call("POST", "/api/sessions", {"path": self.api_path(path), "name": path.name,
                                                               "type": "notebook", "kernel": {}}, "open a session")
            kernel_id = str(model["kernel"]["id"])
        found = await still_kept(self, kept, kernel_id)
        if found is not None:
            return found
        return await GatewayKernel.attach(self.url, self.token, kernel_id, JUPYTER, TIMEOUT)

    async def open_elsewhere(self, path: Path) -> bool:
        kernel_id = await self.session_kernel(path)
        if kernel_id is None:
            return False
        model = await self._call("GET", f"/api/kernels/{quote(kernel_id)}", None, "describe the kernel") or {}
        return int(model.get("connections", 0)) > 1  # our own websocket is one of them

    async def release(self, connection: KernelConnection) -> None:
        if isinstance(connection, GatewayKernel):
            connection.detach()  # the session's kernel stays: it is the person's
