"""A kernel on this machine for the command line and the benchmarks: started, reached, shut down.

``LocalKernel`` is the ``KernelConnection`` that ``KernelExecutor`` runs code
through when no Jupyter server holds the kernel (``jupyter-ai-ci run``, ``bench/``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from typing import Any

from jupyter_ai_ci.errors import KernelError

INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def private_sockets() -> tuple[dict[str, str], str | None]:
    """The manager's transport settings, and the folder to remove after the kernel.

    Where the platform has them, the kernel listens on Unix sockets in a folder only this
    user can open, not on TCP ports any local process can reach (the messages are signed,
    not encrypted: ipykernel warns about it on every start).  The folder is short-named so
    the socket paths stay within the ~104-character limit of Unix socket addresses."""
    if sys.platform == "win32":
        return {}, None
    folder = tempfile.mkdtemp(prefix="aici-")  # mode 0700
    ip = os.path.join(folder, "k")
    if len(ip) > 80:  # an unusually long TMPDIR: the ports, as before
        os.rmdir(folder)
        return {}, None
    return {"transport": "ipc", "ip": ip}, folder


class LocalKernel:
    """A kernel on this machine, started with jupyter_client's async manager."""

    def __init__(self, manager: Any, client: Any, name: str, folder: str | None = None) -> None:
        self.manager = manager
        self.client = client
        self.description = f"local {name}"
        self.folder = folder  # of its sockets, removed at shutdown

    @classmethod
    async def start(cls, kernel_name: str = "python3", cwd: str | None = None,
                    env: dict[str, str] | None = None, startup_timeout: float = 60.0,
                    hide: tuple[str, ...] = ()) -> LocalKernel:
        """``hide``: variables of this process's environment the kernel must not get (the model's
        key: this process calls the model, the kernel only runs code that could print it)."""
        from jupyter_client.kernelspec import NoSuchKernel
        from jupyter_client.manager import AsyncKernelManager

        full = {k: v for k, v in os.environ.items() if k not in hide}
        full["MPLBACKEND"] = INLINE_BACKEND
        full.update(env or {})
        transport, folder = private_sockets()
        manager = AsyncKernelManager(kernel_name=kernel_name, **transport)
        client = None
        try:
            try:
                # Looked up first, quietly: a missing one, found by start_kernel, was logged with
                # a 20-line traceback above our one line (found by a newcomer), and
                # get_kernel_spec logs a warning of its own in older jupyter_client.
                if kernel_name.lower() not in {k.lower() for k in manager.kernel_spec_manager.find_kernel_specs()}:
                    raise NoSuchKernel(kernel_name)
                await manager.start_kernel(cwd=cwd, env=full)
            except NoSuchKernel:
                raise KernelError(f"no kernel named {kernel_name!r}: see `jupyter kernelspec list`") from None
            except Exception as exc:
                raise KernelError(f"could not start the {kernel_name!r} kernel: {exc}") from None
            client = manager.client()
            client.start_channels()
            try:
                await client.wait_for_ready(timeout=startup_timeout)
            except Exception as exc:
                raise KernelError(f"the {kernel_name!r} kernel did not become ready: {exc}") from None
        except BaseException:  # an error, or a cancellation (SIGTERM, Ctrl-C): no kernel or folder stays
            await _abandon(manager, client)
            remove_sockets(folder)
            raise
        return cls(manager, client, kernel_name, folder)

    async def send_execute(self, code: str, store_history: bool) -> str:
        return str(self.client.execute(code, store_history=store_history, allow_stdin=False))

    async def receive_iopub(self, timeout: float) -> dict[str, Any] | None:
        from queue import Empty

        try:
            msg: dict[str, Any] = await self.client.get_iopub_msg(timeout=timeout)
        except Empty:
            return None
        return msg

    async def send_expressions(self, expressions: dict[str, str]) -> str:
        return str(self.client.execute("", silent=True, store_history=False, user_expressions=expressions,
                                       allow_stdin=False))

    async def receive_reply(self, msg_id: str, timeout: float) -> dict[str, Any] | None:
        from queue import Empty

        # Replies to the code we ran were never read (iopub says all we need): skip them.
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg: dict[str, Any] = await self.client.get_shell_msg(timeout=left)
            except Empty:
                return None
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return dict(msg["content"])
        return None

    async def interrupt(self) -> None:
        await self.manager.interrupt_kernel()

    async def is_alive(self) -> bool:
        return bool(await self.manager.is_alive())

    async def shutdown(self) -> None:
        self.client.stop_channels()
        if await self.manager.is_alive():
            await self.manager.shutdown_kernel(now=True)
        else:
            await self.manager.cleanup_resources()
        remove_sockets(self.folder)


async def _abandon(manager: Any, client: Any) -> None:
    """Stop a kernel whose start did not finish; shielded, as a cancelled start gets here."""
    with contextlib.suppress(Exception):
        if client is not None:
            client.stop_channels()
        if manager.has_kernel:
            await asyncio.shield(manager.shutdown_kernel(now=True))


def remove_sockets(folder: str | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
