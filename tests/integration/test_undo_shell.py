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

from jupyter_ai_ci.safety import undostack
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer


def py(code: str) -> str:
    return f"Sure.\n```python\n{code}\n```\n"


@pytest.fixture()
def folder(ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The notebook's folder, where the kernel works; no earlier test's requests to undo."""
    if hasattr(ip, undostack.ATTRIBUTE):
        delattr(ip, undostack.ATTRIBUTE)
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
    # A helper of the person's writes through the link: the scan sees only save(), the transaction the write.
    ip.run_cell("def save():\n    open('link.txt', 'w').write('x')", store_history=True)
    model_server.script(py("save()\n5"), Reply("unused"))
    assert ip.run_cell("%%ask --candidates 3 --yes --no-answer\nFive?", store_history=True).success
    out = capsys.readouterr().out
    assert "1 candidate (cannot be undone: wrote" in out
    assert len(model_server.requests) == 1
    assert (outside / "target.txt").read_text() == "x"


# ---- %ask undo: a request that worked, taken back after the fact ---------------------------------


def undo(ip: Any, capsys: pytest.CaptureFixture[str], arg: str = "") -> str:
    capsys.readouterr()
    ip.run_cell(f"%ask undo {arg}".strip(), store_history=True)
    return capsys.readouterr().out


def test_undo_takes_the_last_request_back_kernel_process_files_record_and_conversation(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "notes.txt").write_text("mine\n")
    ip.run_cell("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})", store_history=True)
    code = ("import os\nos.environ['UNDO_T'] = '1'\ndf['c'] = df['a'] * 2\ntotal = int(df['c'].sum())\n"
            "open('notes.txt', 'a').write('request\\n')\nopen('made.txt', 'w').write('x')\ntotal")
    model_server.script(py(code), py(code))
    request = "%%ask --yes --no-answer\nAdd c = 2a to df and total it"
    assert ip.run_cell(request, store_history=True).success
    assert ip.user_ns["total"] == 6 and os.environ["UNDO_T"] == "1"
    out = undo(ip, capsys)
    assert out.startswith("↶ undid “Add c = 2a to df and total it”: restored ")
    for said in ("df", "os.environ['UNDO_T']", "notes.txt", "made.txt", "removed os, total",
                 "its replay record dropped (Run All asks the model again)"):
        assert said in out
    assert "the code it put in the notebook stays: delete that cell yourself" in out  # no labextension here
    assert list(ip.user_ns["df"].columns) == ["a", "b"] and "total" not in ip.user_ns
    assert "UNDO_T" not in os.environ
    assert (folder / "notes.txt").read_text() == "mine\n" and not (folder / "made.txt").exists()
    # The record is gone: the same cell asks the model again, with no earlier exchange in its prompt.
    assert ip.run_cell(request, store_history=True).success
    assert len(model_server.requests) == 2
    assert "Add c = 2a" not in model_server.request_texts()[1].split("Add c = 2a", 1)[1]
    # Undone once: a second undo of the same has nothing more than the new request to take.
    assert "↶ undid" in undo(ip, capsys)
    assert "nothing to undo in this kernel" in undo(ip, capsys)


def test_undo_is_refused_when_a_later_cell_of_yours_changed_what_the_request_made(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})", store_history=True)
    model_server.script(py("df['c'] = df['a'] * 2"))
    assert ip.run_cell("%%ask --no-answer\nAdd c", store_history=True).success
    count = ip.execution_count
    ip.run_cell("df['mine'] = 7", store_history=True)
    out = undo(ip, capsys)
    assert out.startswith(f"✗ undo refused: In [{count}] changed df after the request")
    assert list(ip.user_ns["df"].columns) == ["a", "c", "mine"]  # nothing was thrown away


def test_undo_n_takes_several_back_newest_first_and_a_rebound_name_refuses(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(py("x = 1"), py("x = x + 1\ny = 5"), py("z = 3"))
    for n in range(3):
        assert ip.run_cell(f"%%ask --no-answer\nStep {n}", store_history=True).success
    assert (ip.user_ns["x"], ip.user_ns["y"], ip.user_ns["z"]) == (2, 5, 3)
    out = undo(ip, capsys, "2")
    assert out.startswith("↶ undid the last 2 requests")
    assert ip.user_ns["x"] == 1 and "y" not in ip.user_ns and "z" not in ip.user_ns
    ip.user_ns["x"] = 99  # rebound by hand, not by a cell: still the person's
    assert "✗ undo refused: x was changed after the request" in undo(ip, capsys)
    assert ip.user_ns["x"] == 99


def test_an_accepted_fix_and_the_winner_of_a_vote_are_undone(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(*(py(f"open('log.txt', 'a').write('c{i}\\n')\nresult = {n}\nresult")
                          for i, n in ((1, 76), (2, 36), (3, 12))))
    assert ip.run_cell("%%ask --candidates 3 --no-answer\nHow many?", store_history=True).success
    assert (folder / "log.txt").read_text() == "c1\n" and ip.user_ns["result"] == 76
    out = undo(ip, capsys)
    assert "log.txt" in out and "result" in out
    assert not (folder / "log.txt").exists() and "result" not in ip.user_ns
    # %ask fix: the tried fix is applied; undone, the kernel is as before it.
    ip.run_cell("import pandas as pd\ndf = pd.DataFrame({'revenue': [1.5, 2.5]})", store_history=True)
    ip.run_cell("df['Revenue'].sum()", store_history=True)
    model_server.script(py("fixed_total = df['revenue'].sum()\nfixed_total"))
    ip.run_cell("%ask fix", store_history=True)
    assert ip.user_ns["fixed_total"] == 4.0
    assert "removed fixed_total" in undo(ip, capsys)
    assert "fixed_total" not in ip.user_ns


def test_a_file_changed_by_someone_else_since_is_not_clobbered(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "data.csv").write_text("a\n1\n")
    model_server.script(py("open('data.csv', 'a').write('2\\n')"))
    assert ip.run_cell("%%ask --no-answer\nAppend 2", store_history=True).success
    (folder / "data.csv").write_text("another process wrote this, longer\n")
    out = undo(ip, capsys)
    assert "NOT undone: data.csv (changed since; not restored)" in out
    assert (folder / "data.csv").read_text() == "another process wrote this, longer\n"


def test_undo_keep_bounds_what_is_kept(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_line_magic("config", "AICISettings.undo_keep = 1")
    model_server.script(py("a = 1"), py("b = 2"))
    assert ip.run_cell("%%ask --no-answer\nA", store_history=True).success
    assert ip.run_cell("%%ask --no-answer\nB", store_history=True).success
    assert "removed b" in undo(ip, capsys)
    assert "nothing to undo in this kernel" in undo(ip, capsys)
    assert ip.user_ns["a"] == 1
    ip.run_line_magic("config", "AICISettings.undo_memory = 10")
    ip.run_cell("import numpy as np\narr = np.zeros(1000)", store_history=True)
    model_server.script(py("arr[0] = 1"))
    capsys.readouterr()
    assert ip.run_cell("%%ask --no-answer\nSet arr[0]", store_history=True).success
    assert "undo not kept: arr changed" in capsys.readouterr().out


def test_a_file_over_the_cap_is_said_at_the_requests_end(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_line_magic("config", "AICISettings.undo_file_cap = 1000")
    (folder / "big.bin").write_bytes(b"x" * 5000)
    model_server.script(py("open('big.bin', 'ab').write(b'y')"))
    capsys.readouterr()
    assert ip.run_cell("%%ask --no-answer\nAppend y", store_history=True).success
    assert "undo cannot restore: changed big.bin (4.9 KB, over the 1000 B cap)" in capsys.readouterr().out


def test_a_display_option_left_by_one_candidate_cannot_make_the_next_agree(
        ip: Any, folder: Path, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    """State a library keeps for the process (pandas' options): no variable shows it, and before
    it was undone the second candidate printed the first one's truncated frame, and agreed."""
    ip.run_cell("import pandas as pd\ndf = pd.DataFrame({'x': range(10, 20)})", store_history=True)
    model_server.script(py("pd.set_option('display.max_rows', 4)\nprint(df)"), py("print(df)"))
    try:
        assert ip.run_cell("%%ask --candidates 2 --no-answer\nShow df", store_history=True).success
        out = capsys.readouterr().out
        assert "2 of 2 candidates agree" not in out and "candidates disagree" in out
    finally:
        ip.run_cell("pd.reset_option('display.max_rows')")
