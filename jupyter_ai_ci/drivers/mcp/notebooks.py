"""The notebooks an MCP session works on, each with a kernel kept for the session.

A notebook is named by its path under the server's root; anything else (a path outside the root,
a link out of it, not ``.ipynb``, not there) is refused with one line.  Where its kernel comes from
is a ``KernelSource``: over stdio (``OwnKernels``) it starts in the notebook's folder the first time
a tool needs it, as ``jupyter ai-ci run`` starts one, and is shut down when the session ends;
inside a Jupyter server (``sessions.py``) it is the kernel of the notebook's open session.  One
call at a time per notebook: a second agent's call waits for the first (and is told so), never
interleaves with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.drivers.headless import KernelOptions, start_kernel
from jupyter_ai_ci.errors import KernelError, UsageProblem
from jupyter_ai_ci.executors.connection import KernelConnection
from jupyter_ai_ci.executors.kernel import KernelExecutor
from jupyter_ai_ci.run.flow import RemoteKernel
from jupyter_ai_ci.run.session import Session
from jupyter_ai_ci.safety.undostack import Limits, new_request_id


@dataclass
class Kept:
    """One notebook's kernel, kept between calls."""

    connection: KernelConnection
    executor: KernelExecutor

    @property
    def kernel(self) -> RemoteKernel:
        return RemoteKernel(self.executor.evaluate)

    def next_request(self) -> str:
        """A fresh id for the request about to run: ``undo`` takes back one request at a time."""
        self.executor.transactions.request = new_request_id()
        return self.executor.transactions.request


class KernelSource(Protocol):
    """Where a notebook's kernel comes from: the one thing the two transports do differently."""

    async def connect(self, path: Path, kept: KernelConnection | None) -> KernelConnection:
        """The kernel calls about ``path`` run in: ``kept`` while it is still the notebook's and
        alive, else a new connection (``kept`` released)."""
        ...

    async def open_elsewhere(self, path: Path) -> bool:
        """Whether a frontend has the notebook open (its cells there are not the file's)."""
        ...

    async def release(self, connection: KernelConnection) -> None:
        """The session ended: let the connection go (and the kernel, if it was ours alone)."""
        ...


def pick_session_kernel(sessions: Iterable[dict[str, Any]], api_path: str,
                        known: Callable[[str], bool] = bool) -> str | None:
    """The kernel id of the session of ``api_path`` among a Jupyter server's session models (a
    notebook's own before a console's), or None; ``known``: a kernel id still there."""
    found = [s for s in sessions if s.get("path") == api_path and known((s.get("kernel") or {}).get("id") or "")]
    found.sort(key=lambda s: s.get("type") != "notebook")
    return str(found[0]["kernel"]["id"]) if found else None


async def still_kept(source: KernelSource, kept: KernelConnection | None, kernel_id: str
                     ) -> KernelConnection | None:
    """``kept`` while it still talks to the session's ``kernel_id`` and that kernel lives; else it
    is let go (the person restarted, changed or closed the notebook's kernel) and None."""
    if kept is None:
        return None
    if getattr(kept, "kernel_id", None) == kernel_id:
        try:
            if await kept.is_alive():
                return kept
        except KernelError:
            pass
    await source.release(kept)
    return None


@dataclass
class OwnKernels:
    """A kernel per notebook, started here in its folder and shut down with the session (stdio)."""

    options: KernelOptions

    async def connect(self, path: Path, kept: KernelConnection | None) -> KernelConnection:
        if kept is not None:
            try:
                if await kept.is_alive():
                    return kept
            except KernelError:
                pass
            await self.release(kept)
        return await start_kernel(self.options, path.parent, path)

    async def open_elsewhere(self, path: Path) -> bool:
        return False  # no server here to ask (finding one through --server-url is not built yet)

    async def release(self, connection: KernelConnection) -> None:
        with contextlib.suppress(KernelError, OSError):
            await connection.shutdown()


@dataclass
class Notebooks:
    root: Path
    settings: AICISettings
    kernel: KernelOptions  # the executor's timeouts; with the default source, the kernel to start
    source: KernelSource | None = None  # None: OwnKernels(kernel)
    session: Session = field(init=False)
    _kept: dict[Path, Kept] = field(default_factory=dict)
    _locks: dict[Path, asyncio.Lock] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = self.root.resolve()
        self.session = Session(self.settings)  # one per MCP session: its conversations and token budget
        self.kernels: KernelSource = self.source if self.source is not None else OwnKernels(self.kernel)

    def path(self, notebook: str) -> Path:
        """The notebook ``notebook`` names under the root; UsageProblem (one line) for anything else."""
        if not notebook.strip():
            raise UsageProblem("name a notebook: its path under the server's root, e.g. analysis.ipynb")
        given = Path(notebook.strip())
        full = (given if given.is_absolute() else self.root / given).resolve()
        if not full.is_relative_to(self.root):
            raise UsageProblem(f"refused: {notebook} is outside the server's root {self.root}")
        if full.suffix != ".ipynb":
            raise UsageProblem(f"expected a notebook (NAME.ipynb), not {given.name}")
        if not full.is_file():
            known = [str(p.relative_to(self.root)) for p in self.root.rglob("*.ipynb")
                     if ".ipynb_checkpoints" not in p.parts][:500]
            close = difflib.get_close_matches(str(given), known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise UsageProblem(f"no notebook {notebook} under {self.root}{hint}; create it first")
        return full

    def lock(self, path: Path) -> asyncio.Lock:
        return self._locks.setdefault(path, asyncio.Lock())

    async def kept(self, path: Path) -> Kept:
        """The notebook's kernel: the one kept while it is still the notebook's, else a new one."""
        kept = self._kept.get(path)
        connection = await self.kernels.connect(path, kept.connection if kept is not None else None)
        if kept is not None and connection is kept.connection:
            return kept
        s = self.settings
        executor = KernelExecutor(connection, timeout=self.kernel.timeout, receive_timeout=self.kernel.receive_timeout,
                                  max_output_chars=s.max_output_chars, snapshot_max_bytes=s.snapshot_max_bytes,
                                  undo=Limits.of(s))  # kept: a cancelled call is undone in it
        self._kept[path] = kept = Kept(connection, executor)
        return kept

    async def close(self) -> None:
        """Let every kernel go (the session ended)."""
        kept, self._kept = list(self._kept.values()), {}
        for k in kept:
            await self.kernels.release(k.connection)
