"""``jupyter ai-ci run`` obeys the safety work: policy, approval, transactions, budgets.

A real process, a real local kernel, the scripted HTTP model; what is asserted
is what happened (files a command would have written, values in the saved
notebook), not only what was printed.
"""

from __future__ import annotations

import json
import re
import os
import pty
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

from .test_cli import existing_notebook, py, run

# Flagged by the risk scan (a process), and its effect is a file we can look for.
SHELL = py("import os\nstatus = os.system('echo ran > touched.txt')\nstatus")
DOUBLING = "import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3]})"


def last_line(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stderr.strip().splitlines()[-1]


def test_flagged_code_is_refused_without_a_terminal(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    before = existing_notebook(tmp_path / "a.ipynb", "x = 1")
    model_server.script(SHELL)
    proc = run(["a.ipynb", "--prompt", "run echo"], tmp_path)  # stdin: /dev/null
    assert proc.returncode == 6, proc.stderr
    assert last_line(proc) == (
        "✗ a.ipynb: not run: os.system: runs a shell command (line 2) — needs approval, but stdin is not a terminal, "
        "so nobody can be asked; pass --yes to approve, or set --policy auto / c.AICISettings.allow; "
        "the notebook was not changed")
    assert not (tmp_path / "touched.txt").exists()
    assert (tmp_path / "a.ipynb").read_bytes() == before and len(model_server.requests) == 1


def test_a_name_the_notebooks_own_cells_bound_does_not_hide_a_process(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    # The snapshot crosses the kernel boundary as JSON here (not in the magic's own process).
    before = existing_notebook(tmp_path / "a.ipynb", "from subprocess import run")
    model_server.script(py("run(['touch', 'touched.txt'])"))
    proc = run(["a.ipynb", "--run-existing", "--prompt", "touch it"], tmp_path)
    assert proc.returncode == 6, proc.stderr
    assert "not run: subprocess.run: starts a process (line 1)" in last_line(proc)
    assert not (tmp_path / "touched.txt").exists() and (tmp_path / "a.ipynb").read_bytes() == before


def test_a_name_an_earlier_step_bound_does_not_hide_a_process_in_the_next(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    # Step 1 binds run in a way its code alone does not tell; the kernel is asked, across the
    # kernel boundary, before step 2 is scanned.
    model_server.script(py("import functools, subprocess\nrun, n = functools.reduce(getattr, ['run'], subprocess), 0"),
                        py("run(['touch', 'touched.txt'])"))
    proc = run(["a.ipynb", "--steps", "2", "--prompt", "touch it"], tmp_path)
    assert proc.returncode == 6, proc.stderr
    assert "not run: subprocess.run: starts a process (line 1)" in last_line(proc)
    assert not (tmp_path / "touched.txt").exists() and len(model_server.requests) == 2


def test_a_write_through_a_link_out_of_the_notebooks_folder_is_refused(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    # Issue #38, item 4: the kernel says where its folders are, across the kernel boundary, and the
    # command line, on the kernel's machine, sees the link 'home' lead out of the notebook's folder.
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (work / "home").symlink_to(home)
    before = existing_notebook(work / "a.ipynb", "x = 1")
    model_server.script(py("open('home/.bashrc', 'a').write('echo hi')"))
    proc = run(["a.ipynb", "--prompt", "note it"], work)
    assert proc.returncode == 6, proc.stderr
    assert f"writes outside the working directory: 'home/.bashrc' (a link leads it to {str(home / '.bashrc')!r})" \
        in last_line(proc)
    assert not (home / ".bashrc").exists() and (work / "a.ipynb").read_bytes() == before


@pytest.mark.parametrize("yes", ["--yes", "-y"])  # -y was Jupyter's own "answer yes", and approved nothing
def test_yes_approves_flagged_code(tmp_path: Path, model_server: ScriptedOpenAIServer, yes: str) -> None:
    model_server.script(SHELL)
    proc = run(["a.ipynb", "--prompt", "run echo", yes], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "touched.txt").read_text() == "ran\n"
    cell = nbformat.read(tmp_path / "a.ipynb", as_version=4).cells[-1]
    assert "os.system" in cell.source and cell.outputs[-1].data["text/plain"] == "0"


@pytest.mark.parametrize("answer, code", [(b"y\n", 0), (b"n\n", 6), (b"\x04", 6)])  # \x04: Ctrl-D
def test_a_terminal_is_asked(tmp_path: Path, model_server: ScriptedOpenAIServer, answer: bytes, code: int) -> None:
    model_server.script(SHELL)
    main, terminal = pty.openpty()
    try:
        os.write(main, answer)  # typed ahead: the terminal keeps it until the question reads it
        proc = run(["a.ipynb", "--prompt", "run echo"], tmp_path, stdin=terminal)
    finally:
        os.close(terminal)
        os.close(main)
    assert proc.returncode == code, proc.stderr
    assert "⚠ attempt 1 needs approval:\n   - os.system: runs a shell command (line 2)\n" in proc.stderr
    assert "   ┆ status = os.system('echo ran > touched.txt')\n   ┆ status\nRun this code? [y/N] " in proc.stderr
    assert (tmp_path / "touched.txt").exists() == (code == 0)
    if code and answer == b"\x04":  # the result on a line of its own, not after the question
        assert "Run this code? [y/N] \n" in proc.stderr
        assert last_line(proc).startswith("✗ a.ipynb: ") and "stdin closed before an answer" in last_line(proc)
    elif code:
        assert "rejected by the user; the notebook was not changed" in last_line(proc)


def test_policy_and_deny_list_from_config_and_flags(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    (tmp_path / "cfg.py").write_text("c.AICISettings.deny = ['os.system']\n")
    model_server.script(SHELL)
    proc = run(["a.ipynb", "--prompt", "run echo", "--config", "cfg.py", "--yes"], tmp_path)
    assert proc.returncode == 6, proc.stderr  # deny wins over --yes
    assert "refused by policy: os.system is on the deny list; the notebook" in last_line(proc)  # said once
    model_server.script(SHELL)
    proc = run(["a.ipynb", "--prompt", "run echo", "--policy", "auto"], tmp_path)
    assert proc.returncode == 0, proc.stderr  # no terminal, no --yes: 'auto' runs it
    assert (tmp_path / "touched.txt").exists()


def test_a_failed_attempt_is_undone_in_the_kernel(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    existing_notebook(tmp_path / "a.ipynb", DOUBLING)
    model_server.script(py("df['x'] *= 2\nhalf = 1\nraise ValueError('not yet')"),
                        Reply(py("df['x'] *= 2\ndf['x'].tolist()"), require="ValueError"))
    proc = run(["a.ipynb", "--prompt", "double x", "--run-existing"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "↺ attempt 1 undone: restored df; removed new names half" in proc.stderr
    # Doubled once, not twice: the failed attempt's doubling was rolled back.
    assert nbformat.read(tmp_path / "a.ipynb", as_version=4).cells[-1].outputs[-1].data["text/plain"] == "[2, 4, 6]"


def test_a_kernel_without_jupyter_ai_ci_says_it_cannot_undo(
        tmp_path: Path, model_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # A kernelspec whose Python cannot import jupyter_ai_ci, as on a bare remote image.
    spec = tmp_path / "share" / "kernels" / "bare"
    spec.mkdir(parents=True)
    launch = ("import sys; sys.modules['jupyter_ai_ci'] = None; "
              "from ipykernel.kernelapp import launch_new_instance; launch_new_instance()")
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-c", launch, "-f", "{connection_file}"],
        "display_name": "bare", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share"))
    existing_notebook(tmp_path / "a.ipynb", DOUBLING)
    model_server.script(py("df['x'] *= 2\nraise ValueError('not yet')"),
                        Reply(py("df['x'] *= 2\ndf['x'].tolist()"), require="ValueError"))
    proc = run(["a.ipynb", "--prompt", "double x", "--run-existing", "--kernel", "bare"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "! this kernel cannot undo a failed attempt (jupyter_ai_ci is not installed" in proc.stderr
    assert "attempt 1 failed; this executor cannot undo it, so its changes stay" in proc.stderr
    # Honestly reported, and what happens without transactions: doubled twice.
    assert nbformat.read(tmp_path / "a.ipynb", as_version=4).cells[-1].outputs[-1].data["text/plain"] == "[4, 8, 12]"


def test_over_the_token_budget_exits_7(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    before = existing_notebook(tmp_path / "a.ipynb", "x = 1")
    model_server.script(py("y = missing"), py("y = 1"))
    # Enough for the first request (about 200 tokens), not for the fix that resends it all (500+).
    proc = run(["a.ipynb", "--prompt", "set y", "--max-tokens-per-request", "400", "--json", "r.json"], tmp_path)
    assert proc.returncode == 7, proc.stderr
    assert last_line(proc).startswith("✗ a.ipynb: stopped: token budget reached: ")
    assert last_line(proc).endswith("the request's budget is 400 (--max-tokens-per-request, --max-tokens-per-session); "
                                    "the notebook was not changed")
    assert len(model_server.requests) == 1 and (tmp_path / "a.ipynb").read_bytes() == before
    (record,) = json.loads((tmp_path / "r.json").read_text())
    assert record["status"] == "over-budget" and record["exit_code"] == 7


def test_the_session_budget_spans_the_notebooks_of_one_command(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py("y = 1"), py("y = 2"))
    # The first notebook spends about 300 of 450 tokens (the system prompt is most of it); the
    # second's first request needs about 290 of the 150 left.
    # --regenerate: the second notebook, in the same folder, would replay the first one's answer.
    proc = run(["one.ipynb", "two.ipynb", "--prompt", "set y", "--max-tokens-per-session", "450",
                "--json", "r.json", "--regenerate"], tmp_path)
    assert proc.returncode == 7, proc.stderr
    assert "✓ one.ipynb: 1 code cell appended after 1 attempt" in proc.stdout
    assert "✗ two.ipynb: stopped: token budget reached: the next model call needs about" in proc.stderr
    # Which budget: it said "0 tokens spent, … the budget is 150" of a session's 450.
    assert re.search(r"0 are spent on this request, and the session has 1\d\d of its 450 left", proc.stderr)
    assert len(model_server.requests) == 1 and not (tmp_path / "two.ipynb").exists()
    assert [r["status"] for r in json.loads((tmp_path / "r.json").read_text())] == ["success", "over-budget"]


def test_a_notebook_that_moves_its_kernel_out_of_its_folder_does_not_move_the_write_check(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    """Issue #30, item 7, in the command line: the notebook's own cell ran ``%cd ..``; the
    generated ``open('escaped.txt', 'w')`` would land beside the folder, so it is asked about."""
    folder = tmp_path / "shared"
    folder.mkdir()
    existing_notebook(folder / "a.ipynb", "%cd ..")
    model_server.script(py("open('escaped.txt', 'w').write('x')"))
    proc = run(["a.ipynb", "--prompt", "save a note", "--run-existing"], folder)
    assert proc.returncode == 6, proc.stderr
    assert "(the kernel's working directory is at '..' from the notebook's folder)" in last_line(proc)
    assert not (tmp_path / "escaped.txt").exists() and not (folder / "escaped.txt").exists()
