"""Undo anything (#36), in a real IPython shell against the scripted HTTP model.

The issue's cases as a person and an attacker met them: a failed attempt that changed the
environment, ``sys.path`` and a file; candidates that each append to a file; a candidate that
leaves an environment variable for the next; a candidate that patches ``builtins.sum``.
"""

from __future__ import annotations

import builtins
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer


def py(code: str) -> str:
    return f"Sure.\n```python\n{code}\n```\n"


@pytest.fixture()
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The notebook's folder, where the kernel works."""
    home = tmp_path / "nb"
    home.mkdir()
    monkeypatch.chdir(home)
    real_sum = builtins.sum
    yield home
    builtins.sum = real_sum  # whatever a test's candidate did, the next test gets the real one
    os.environ.pop("UNDO_T", None)


def test_a_failed_attempt_leaves_environment_path_files_frame_and_folder_as_they_were(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "notes.txt").write_text("mine\n")
    (folder / "sub").mkdir()
    ip.run_cell("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})", store_history=True)
    path_before = list(sys.path)
    model_server.script(
        py("import os, sys\nos.environ['UNDO_T'] = '1'\nsys.path.insert(0, '/nowhere')\n"
           "open('notes.txt', 'w').write('theirs')\nopen('new.txt', 'w').write('new')\n"
           "df.drop(columns=['b'], inplace=True)\nos.chdir('sub')\ndf['regoin']"),
        py("total = int(df['a'].sum())\ntotal"),
    )
    assert ip.run_cell("%%ask --yes --no-answer\nTotal of a in df", store_history=True).success
    out = capsys.readouterr().out
    assert "UNDO_T" not in os.environ
    assert sys.path == path_before
    assert (folder / "notes.txt").read_text() == "mine\n"
    assert not (folder / "new.txt").exists()
    assert list(ip.user_ns["df"].columns) == ["a", "b"]
    assert Path.cwd() == folder
    assert ip.user_ns["total"] == 3
    line = next(ln for ln in out.splitlines() if "attempt 1 undone" in ln)
    for said in ("os.environ['UNDO_T']", "sys.path", "notes.txt", "new.txt", "the working directory"):
        assert said in line
    assert "NOT undone" not in line


def test_candidates_each_start_clean_and_the_winner_writes_once(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    """``log.txt`` held ``c1 c2 c3 c1``: every candidate wrote, and the winner wrote again."""
    model_server.script(*(py(f"with open('log.txt', 'a') as f:\n    f.write('c{i}\\n')\n{n}")
                          for i, n in ((1, 76), (2, 36), (3, 12))))
    assert ip.run_cell("%%ask --candidates 3 --no-answer\nHow many?", store_history=True).success
    out = capsys.readouterr().out
    assert "⚠ candidates disagree: 76 (1 of 3) vs 36 vs 12" in out
    assert (folder / "log.txt").read_text() == "c1\n"  # the winner's line, once
    assert "has side effects" not in out  # a write in the folder no longer keeps the vote to one


def test_two_candidates_that_agree_leave_one_line(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "log.txt").write_text("before\n")
    model_server.script(py("open('log.txt', 'a').write('first\\n')\n3"),
                        py("open('log.txt', 'a').write('second\\n')\n3"))
    assert ip.run_cell("%%ask --candidates 2 --no-answer\nHow many?", store_history=True).success
    assert "✓ done · 2 of 2 candidates agree" in capsys.readouterr().out
    assert (folder / "log.txt").read_text() == "before\nsecond\n"  # the second was committed as it stood


def test_an_environment_variable_left_by_one_candidate_cannot_make_the_next_agree(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(
        py("import os\nos.environ['UNDO_T'] = '41'\nint(os.environ['UNDO_T']) + 1"),
        py("import os\nint(os.environ.get('UNDO_T', '0')) + 1"),
    )
    assert ip.run_cell("%%ask --candidates 2 --no-answer\nWhat is it?", store_history=True).success
    out = capsys.readouterr().out
    assert "2 of 2 candidates agree" not in out
    assert "⚠ candidates disagree: 42 (1 of 2) vs 1" in out
    assert os.environ.get("UNDO_T") == "41"  # the applied candidate's effect, once


def test_a_candidate_that_patches_builtins_sum_is_undone_before_the_next(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(
        py("import builtins\nbuiltins.sum = lambda *a, **k: 999\nsum([1, 2])"),
        py("sum([1, 2])"),
        py("sum([1, 2])"),
    )
    assert ip.run_cell("%%ask --candidates 3 --yes --no-answer\nSum of 1 and 2?", store_history=True).success
    out = capsys.readouterr().out
    assert "999 of 999" not in out
    assert "⚠ candidates disagree: 3 (2 of 3) vs 999" in out
    assert builtins.sum([1, 2]) == 3  # the majority's code applied; the patch was rolled back


def test_a_candidate_that_writes_outside_the_folder_stays_one_candidate(
        ip: Any, folder: Path, tmp_path: Path, model_server: ScriptedOpenAIServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    """What the transaction cannot undo keeps the vote to one, as the scan's effects do."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (folder / "link.txt").symlink_to(outside / "target.txt")
    model_server.script(py("open('link.txt', 'w').write('x')\n5"), Reply("unused"))
    assert ip.run_cell("%%ask --candidates 3 --yes --no-answer\nFive?", store_history=True).success
    out = capsys.readouterr().out
    assert "1 candidate (cannot be undone: wrote" in out
    assert len(model_server.requests) == 1
    assert (outside / "target.txt").read_text() == "x"
