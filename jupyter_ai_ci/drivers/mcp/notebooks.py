"""The notebooks an MCP session works on, each with a kernel kept for the session.

A notebook is named by its path under the server's root; anything else (a path outside the root,
a link out of it, not ``.ipynb``, not there) is refused with one line.  Its kernel starts in its
folder the first time a tool needs it, as ``jupyter ai-ci run`` starts one, and is shut down when
the session ends.  One call at a time per notebook: a second agent's call waits for the first
(and is told so), never interleaves with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
from dataclasses import dataclass, field
from pathlib import Path

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


@dataclass
class Notebooks:
    root: Path
    settings: AICISettings
    kernel: KernelOptions
    session: Session = field(init=False)
    _kept: dict[Path, Kept] = field(default_factory=dict)
    _locks: dict[Path, asyncio.Lock] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = self.root.resolve()
        self.session = Session(self.settings)  # one per MCP session: its conversations and token budget

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
        """The notebook's kernel, started in its folder the first time (or again after it died)."""
        kept = self._kept.get(path)
        if kept is not None:
            try:
                if await kept.connection.is_alive():
                    return kept
            except KernelError:
                pass
            self._kept.pop(path, None)
        connection = await start_kernel(self.kernel, path.parent, path)
        s = self.settings
        executor = KernelExecutor(connection, timeout=self.kernel.timeout, receive_timeout=self.kernel.receive_timeout,
                                  max_output_chars=s.max_output_chars, snapshot_max_bytes=s.snapshot_max_bytes,
                                  undo=Limits.of(s))  # kept: a cancelled call is undone in it
        self._kept[path] = kept = Kept(connection, executor)
        return kept

    async def close(self) -> None:
        """Shut every kernel down (the session ended)."""
        kept, self._kept = list(self._kept.values()), {}
        for k in kept:
            with contextlib.suppress(KernelError, OSError):
                await k.connection.shutdown()
