"""Files written whole (notebooks the command line saves, replay records) keep the modes a
plain write would give them: found by hand, a saved notebook turned owner-only."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from jupyter_ai_ci.notebook import document
from jupyter_ai_ci.notebook.atomic import replace_file
from jupyter_ai_ci.notebook.replay import Record, ReplayStore

posix = pytest.mark.skipif(not hasattr(os, "fchmod"), reason="POSIX modes")


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@posix
def test_a_saved_notebook_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "shared.ipynb"
    nb = document.load_or_create(path, "python3")
    document.save(nb, path)
    os.chmod(path, 0o664)  # shared with the group on purpose
    with umask(0o077):
        document.save(document.load_or_create(path, "python3"), path)
    assert mode(path) == 0o664
    assert [p.name for p in tmp_path.iterdir()] == ["shared.ipynb"]


@posix
@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_a_new_file_gets_what_the_umask_allows(tmp_path: Path, mask: int) -> None:
    with umask(mask):
        document.save(document.load_or_create(tmp_path / "new.ipynb", "python3"), tmp_path / "new.ipynb")
        record = Record("k", "r", "m", "h", ("x",), 1, 1, 1, 1, "2026-11-26T00:00:00Z")
        ReplayStore(tmp_path / "replay.json").put(record)
    assert mode(tmp_path / "new.ipynb") == 0o666 & ~mask
    assert mode(tmp_path / "replay" / "k.json") == 0o666 & ~mask
    assert mode(tmp_path / "replay") == 0o777 & ~mask  # as mkdir makes it: the group shares a shared folder
    assert json.loads((tmp_path / "replay" / "k.json").read_text())["key"] == "k"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text("old")

    def fail(f: object) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        replace_file(path, fail)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["data.json"]


@posix
def test_a_file_system_that_refuses_chmod_still_gets_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "on-smb.json"
    path.write_text("old")

    def refuse(fd: int, mode: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fchmod", refuse)  # what an SMB mount or drvfs answers
    replace_file(path, lambda f: f.write("new"))
    assert path.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["on-smb.json"]
