"""Inside a Jupyter server, a notebook's kernel is the kernel of its open session.

The MCP tools served at ``/ai-ci/mcp`` (``http.py``) run an agent's code where the person's own
cells run: the session whose path is the notebook (JupyterLab and Notebook 7 make one when they
open it), reached through the server's kernel manager.  When no session has the notebook, one is
created through the server's session manager, as opening it in JupyterLab would: the kernel starts
in the notebook's folder, is listed under Running Kernels, and a person who opens the notebook
later joins it and finds what the agent made.  The server owns those kernels: the MCP session
ending lets go of our client only; the server shuts them down (a person, a culler, its own exit).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_ai_ci.drivers.mcp.notebooks import pick_session_kernel, still_kept
from jupyter_ai_ci.errors import KernelError
from jupyter_ai_ci.executors.connection import KernelConnection
from jupyter_ai_ci.executors.server_kernel import ServerKernel
from jupyter_ai_ci.notebook.document import load_or_create


@dataclass
class SessionKernels:
    """``KernelSource`` over a Jupyter server's session and kernel managers."""

    root: Path  # the contents manager's root_dir: API paths are relative to it
    kernel_manager: Any
    session_manager: Any

    def api_path(self, path: Path) -> str:
        return path.resolve().relative_to(self.root.resolve()).as_posix()

    async def session_kernel(self, path: Path) -> str | None:
        """The kernel id of the notebook's session (a notebook's own before a console's), or None."""
        api = self.api_path(path)
        return pick_session_kernel(await self.session_manager.list_sessions(), api,
                                   lambda kernel_id: kernel_id in self.kernel_manager)

    async def connect(self, path: Path, kept: KernelConnection | None) -> KernelConnection:
        kernel_id = await self.session_kernel(path)
        if kernel_id is None:
            model = await self.session_manager.create_session(
                path=self.api_path(path), name=path.name, type="notebook", kernel_name=self._kernel_name(path))
            kernel_id = str(model["kernel"]["id"])
        found = await still_kept(self, kept, kernel_id)
        if found is not None:
            return found
        return await ServerKernel.attach(self.kernel_manager, kernel_id)

    def _kernel_name(self, path: Path) -> str | None:
        """The notebook's own kernel where the server knows it, else None (the server's default)."""
        try:
            name = load_or_create(path, "").metadata.get("kernelspec", {}).get("name")
            specs = self.kernel_manager.kernel_spec_manager.find_kernel_specs()
        except Exception:  # noqa: BLE001 - an unreadable notebook is refused later, by the tool, in one line
            return None
        return name if isinstance(name, str) and name in specs else None

    async def open_elsewhere(self, path: Path) -> bool:
        kernel_id = await self.session_kernel(path)
        if kernel_id is None:
            return False
        # Browsers reach a kernel through the server's websocket; our own client is not counted.
        return int(self.kernel_manager.kernel_model(kernel_id).get("connections", 0)) > 0

    async def release(self, connection: KernelConnection) -> None:
        try:
            await connection.shutdown()  # a ServerKernel: our client only, never the session's kernel
        except (KernelError, OSError):
            pass
