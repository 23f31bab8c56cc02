"""Issue #30, items 7 and 8, performed in a real IPython shell with the scripted model: code
that leaves the working directory before a relative write, and star imports that hide run,
rmtree and copy, are asked about -- here nobody can be asked, so they never run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer


def py(code: str) -> str:
    return f"Here it is.\n```python\n{code}\n```\n"


def refused(ip: Any, model_server: ScriptedOpenAIServer, code: str) -> str:
    model_server.script(py(code))
    result = ip.run_cell("%%ask --retries 0\nsave the summary")
    assert not result.success and type(result.error_in_exec).__name__ == "PolicyRefused", result.error_in_exec
    return str(result.error_in_exec)


@pytest.mark.parametrize("leave", ["import os\nos.chdir('..')", "%cd ..", "from os import chdir\nchdir('..')",
                                   "from os import *\nchdir('..')"])
def test_leaving_the_working_directory_before_a_relative_write_is_asked_about(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, leave: str) -> None:
    said = refused(ip, model_server, f"{leave}\nopen('escaped.txt', 'w').write('x')")
    assert "changes the working directory" in said
    assert not (work.parent / "escaped.txt").exists() and not (work / "escaped.txt").exists()
    assert Path.cwd() == work  # the kernel never moved


def test_a_relative_write_that_stays_put_still_runs_unasked(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path) -> None:
    model_server.script(py("open('summary.txt', 'w').write('ok')"))
    assert ip.run_cell("%%ask\nsave the summary").success
    assert (work / "summary.txt").read_text() == "ok"


def test_star_imports_do_not_hide_run_rmtree_or_copy(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "data.csv").write_text("a\n1\n")
    said = refused(ip, model_server, f"from subprocess import *\nrun(['touch', {str(tmp_path / 'ran')!r}])")
    assert "subprocess.run: starts a process" in said and not (tmp_path / "ran").exists()
    said = refused(ip, model_server, f"from shutil import *\nrmtree({str(keep)!r})")
    assert "shutil.rmtree: deletes a directory tree" in said and (keep / "data.csv").exists()
    said = refused(ip, model_server, f"from shutil import *\ncopy('/etc/hostname', {str(tmp_path / 'copied')!r})")
    assert "copies outside the working directory" in said and not (tmp_path / "copied").exists()


def test_a_kernel_already_moved_out_of_the_notebooks_folder_asks_before_a_relative_write(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel left the notebook's folder before the request (an earlier request's approved
    ``%cd ..``): a relative write is judged from where the kernel is, not as it reads."""
    notebook = work / "analysis.ipynb"
    notebook.write_text("{}")
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    ip.run_line_magic("cd", "..")
    said = refused(ip, model_server, "open('escaped.txt', 'w').write('x')")
    assert "the kernel's working directory is at '..' from the notebook's folder" in said
    assert not (work.parent / "escaped.txt").exists()
    (work / "sub").mkdir()
    ip.run_line_magic("cd", str(work / "sub"))  # inside the notebook's folder: as ever
    model_server.script(py("open('kept.txt', 'w').write('ok')"))
    assert ip.run_cell("%%ask\nsave it").success and (work / "sub" / "kept.txt").read_text() == "ok"


def test_the_panel_and_the_cli_learn_where_the_kernel_is_across_the_kernel_boundary(
        ip: Any, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from jupyter_ai_ci.context import snapshot

    notebook = work / "analysis.ipynb"
    notebook.write_text("{}")
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    ip.run_line_magic("cd", "..")
    payload = json.dumps({"request": "save it"})
    reply = {"status": "ok", "data": {"text/plain": repr(snapshot.kernel_side(payload))}}
    assert snapshot.from_reply(reply).moved == ".."  # what the server and the CLI are told
    monkeypatch.delenv("JPY_SESSION_NAME")
    assert snapshot.from_reply({"status": "ok", "data": {"text/plain": repr(snapshot.kernel_side(payload))}}
                               ).moved == ""  # no notebook known: the current directory is the working one


@pytest.mark.parametrize(("setup", "call", "says"), [
    ("from subprocess import run", "run(['touch', RAN])", "subprocess.run: starts a process"),
    ("from subprocess import *", "run(['touch', RAN])", "subprocess.run: starts a process"),
    ("import subprocess as sp", "sp.run(['touch', RAN])", "subprocess.run: starts a process"),
    ("from os import system", "system('touch ' + RAN)", "os.system: runs a shell command"),
    ("import shutil\nwipe = shutil.rmtree", "wipe(KEEP)", "shutil.rmtree: deletes a directory tree"),
    ("shell = get_ipython().system", "shell('touch ' + RAN)", "runs a shell command"),
    ("e = eval", "e('__import__(\"os\").system(\"touch \" + RAN)')", "evaluates a string as code"),
    ("import os as pd", "pd.system('touch ' + RAN)", "os.system: runs a shell command"),  # not pandas
    ("from subprocess import run", "(run := run)(['touch', RAN])", "subprocess.run: starts a process"),
    ("from subprocess import run", "globals().get('run')(['touch', RAN])", "subprocess.run: starts a process"),
    ("from subprocess import run", "globals()['r' + 'un'](['touch', RAN])",
     "calls a name looked up in the kernel's namespace at run time"),
])
def test_names_the_users_own_cells_bound_do_not_hide_a_risky_call(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, tmp_path: Path, setup: str, call: str,
        says: str) -> None:
    """The model's code alone reads ``run(...)`` as a call of an unknown function: the kernel
    tells the scan what the user's earlier cells bound it to."""
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "data.csv").write_text("a\n1\n")
    assert ip.run_cell(f"{setup}\nRAN, KEEP = {str(tmp_path / 'ran')!r}, {str(keep)!r}").success
    said = refused(ip, model_server, call)
    assert says in said
    assert not (tmp_path / "ran").exists() and (keep / "data.csv").exists()


@pytest.mark.parametrize(("setup", "call", "says"), [
    ("from subprocess import run", "run(['touch', RAN])", "subprocess.run: starts a process"),
    ("from os import *", "system('touch ' + RAN)", "os.system: runs a shell command"),
    ("import os\nsh = os.system", "sh('touch ' + RAN)", "os.system: runs a shell command"),
    # Ways the step's code alone does not tell: the kernel is asked between the steps.  (Handing on
    # subprocess.run by name -- ``run, n = subprocess.run, 0`` -- is asked about at step 1 itself
    # since issue #38: tests/unit/test_risk_table.py.)
    ("import functools, subprocess\nrun, n = functools.reduce(getattr, ['run'], subprocess), 0",
     "run(['touch', RAN])", "subprocess.run: starts a process"),
    ("import functools, subprocess\nglobals()['run'] = functools.reduce(getattr, ['run'], subprocess)",
     "run(['touch', RAN])", "subprocess.run: starts a process"),
    ("import functools, subprocess\nfor run in [functools.reduce(getattr, ['run'], subprocess)]:\n    pass",
     "run(['touch', RAN])", "subprocess.run: starts a process"),
])
def test_a_name_an_earlier_step_bound_does_not_hide_a_risky_call_in_the_next(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, tmp_path: Path, setup: str, call: str,
        says: str) -> None:
    """The kernel is named once per request: step 1 binds ``run``, step 2 calls it bare."""
    assert ip.run_cell(f"RAN = {str(tmp_path / 'ran')!r}").success
    model_server.script(py(setup), py(call))
    result = ip.run_cell("%%ask --steps 2 --retries 0\nsave the summary")
    assert not result.success and type(result.error_in_exec).__name__ == "PolicyRefused", result.error_in_exec
    assert says in str(result.error_in_exec) and not (tmp_path / "ran").exists()
    assert len(model_server.requests) == 2  # step 1 ran (unasked), step 2 was asked for


def test_a_name_the_code_binds_itself_is_its_own(ip: Any, model_server: ScriptedOpenAIServer, work: Path) -> None:
    assert ip.run_cell("from subprocess import run").success
    model_server.script(py("def run(items):\n    return sum(items)\n\ntotal = run([1, 2, 3])"))
    assert ip.run_cell("%%ask\nadd them up").success and ip.user_ns["total"] == 6  # not asked about


@pytest.mark.parametrize("code", [
    "if False:\n    run = print\nrun(['touch', RAN])",  # bound only in a branch never taken
    "def f(run):\n    return run\nrun(['touch', RAN])",  # a parameter, not the top level's name
    "run(['touch', RAN])\ndef run(items):\n    return items",  # used before it is defined
    "run = run\nrun(['touch', RAN])",  # rebound to itself
])
def test_a_binding_that_may_not_happen_first_leaves_the_kernels_name(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, tmp_path: Path, code: str) -> None:
    assert ip.run_cell(f"from subprocess import run\nRAN = {str(tmp_path / 'ran')!r}").success
    assert "subprocess.run: starts a process" in refused(ip, model_server, code)
    assert not (tmp_path / "ran").exists()
