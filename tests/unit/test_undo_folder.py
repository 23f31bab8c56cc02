"""The private folder a transaction keeps old file contents in, and the sweep of those that killed
kernels left behind: only the person's own, only of processes no longer running."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from jupyter_ai_ci.safety import undofolder


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_new_folder_is_private_and_the_dead_ones_leftovers_go(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(undofolder, "_swept", False)
    dead = tmp_path / f"{undofolder.PREFIX}{dead_pid()}-abc"
    live = tmp_path / f"{undofolder.PREFIX}{os.getppid()}-def"  # the test runner's parent: running
    odd = tmp_path / f"{undofolder.PREFIX}notapid-ghi"
    other = tmp_path / "someone-elses-folder"
    for folder in (dead, live, odd, other):
        folder.mkdir()
        (folder / "0").write_text("old content")
    if os.getuid() == 0:  # a folder of another user's, named as a dead process's: never touched
        strangers = tmp_path / f"{undofolder.PREFIX}{dead_pid()}-jkl"
        strangers.mkdir()
        os.chown(strangers, 65534, 65534)
    made = Path(undofolder.make())
    assert made.parent == tmp_path and made.name.startswith(f"{undofolder.PREFIX}{os.getpid()}-")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    assert not dead.exists() and live.exists() and odd.exists() and other.exists()
    if os.getuid() == 0:
        assert strangers.exists()
    # Once per process: a second folder does not sweep again.
    again = tmp_path / f"{undofolder.PREFIX}{dead_pid()}-mno"
    again.mkdir()
    assert Path(undofolder.make()) != made and again.exists()
