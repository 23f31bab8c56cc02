"""A kernel the command line or the benchmarks start: reachable by this user only."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import time
import sys
from pathlib import Path

import pytest

from jupyter_ai_ci.executors.kernel import KernelExecutor
from jupyter_ai_ci.executors.local_kernel import LocalKernel

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(sys.platform == "win32", reason="no Unix sockets: the kernel uses TCP there")]


def test_the_kernel_listens_on_private_sockets_not_tcp_ports(tmp_path: Path,
                                                             capfd: pytest.CaptureFixture[str]) -> None:
    # On TCP any local process can reach the kernel's ports (ipykernel warns so on every start,
    # into the command line's output); Unix sockets in a 0700 folder only this user can open.
    folder = asyncio.run(_start_run_stop(tmp_path))
    assert not os.path.exists(folder)  # nothing left behind
    assert "without encryption" not in capfd.readouterr().err


async def _start_run_stop(tmp_path: Path) -> str:
    kernel = await LocalKernel.start("python3", cwd=str(tmp_path), startup_timeout=60)
    folder = kernel.folder
    try:
        assert folder is not None and kernel.manager.transport == "ipc"
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        sockets = sorted(os.listdir(folder))
        assert len(sockets) == 5 and all(stat.S_ISSOCK(os.stat(os.path.join(folder, s)).st_mode) for s in sockets)
        result = await KernelExecutor(kernel, timeout=30).aexecute("print(6 * 7)")
        assert result.error is None and result.output == "42\n"
    finally:
        await kernel.shutdown()
    return folder


def test_a_kernel_that_cannot_start_leaves_no_socket_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from jupyter_ai_ci.errors import KernelError

    temp = tempfile.mkdtemp(prefix="t")  # short: socket paths have a length limit
    monkeypatch.setattr(tempfile, "tempdir", temp)
    try:
        with pytest.raises(KernelError, match="no kernel named 'no-such-kernel'"):
            asyncio.run(LocalKernel.start("no-such-kernel"))
        assert os.listdir(temp) == []
    finally:
        shutil.rmtree(temp)


def _kernel_children() -> list[int]:
    """This process's children that are kernels."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat_line = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat_line.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"ipykernel" in cmdline:
            found.append(int(entry))
    return found


def test_a_start_cancelled_midway_stops_the_kernel_and_removes_its_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM or Ctrl-C while a kernel starts (the command line cancels its task)."""
    import tempfile

    temp = tempfile.mkdtemp(prefix="t")
    monkeypatch.setattr(tempfile, "tempdir", temp)

    async def cancel_once_spawned() -> None:
        task = asyncio.ensure_future(LocalKernel.start("python3", startup_timeout=60))
        for _ in range(300):  # the kernel's process exists, its start is not finished
            if _kernel_children() or task.done():
                break
            await asyncio.sleep(0.02)
        assert not task.done() and _kernel_children()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(cancel_once_spawned())
        for _ in range(100):
            if not _kernel_children():
                break
            time.sleep(0.1)
        assert _kernel_children() == []
        assert os.listdir(temp) == []
    finally:
        shutil.rmtree(temp)
