"""A kernel the command line or the benchmarks start: reachable by this user only."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
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
