"""``jupyter ai-ci run`` end to end: a real process, a real local kernel, the scripted HTTP model."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from jupyter_ai_ci.notebook.sinks import METADATA_KEY
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

CLI = [sys.executable, "-m", "jupyter_ai_ci.drivers.cli", "run"]


def py(code: str) -> str:
    return f"Here you go.\n```python\n{code}\n```\n"


def run(args: list[str], cwd: Path, timeout: float = 120, cmd: list[str] = CLI,
        stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    # stdin is not the test runner's terminal: flagged code would wait for an answer there.
    return subprocess.run([*cmd, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=stdin)


def existing_notebook(path: Path, *sources: str) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path.read_bytes()


def test_fix_from_traceback_appends_cells_with_outputs_and_provenance(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    existing_notebook(tmp_path / "a.ipynb", "import pandas as pd\n"
                      "sales = pd.DataFrame({'region': list('nsn'), 'revenue': [10, 20, 30]})")
    model_server.script(
        py("totals = sales.groupby('region')['revenue'].sum()\nshare = totals['x']"),
        Reply(py("totals = sales.groupby('region')['revenue'].sum()\nprint(totals.to_dict())\nint(totals['n'])"),
              require="KeyError"),
    )
    # Through `jupyter ai-ci`, as users type it: jupyter_core finds our `jupyter-ai-ci` script.
    proc = run(["a.ipynb", "--run-existing", "--prompt", "Revenue per region"], tmp_path,
               cmd=[sys.executable, "-m", "jupyter", "ai-ci", "run"])
    assert proc.returncode == 0, proc.stderr
    assert "✓ a.ipynb: 1 code cell appended after 2 attempts" in proc.stdout
    assert "✗ attempt 1 failed: KeyError: 'x'" in proc.stderr
    assert model_server.misses == []
    first, fix = model_server.request_texts()
    # The context came from the kernel's variables, after the existing cell ran.
    assert "sales: pandas.DataFrame 3 rows × 2 columns" in first
    assert "share = totals['x']" in fix and "\x1b[" not in fix
    nb = nbformat.read(tmp_path / "a.ipynb", as_version=4)
    nbformat.validate(nb)
    existing, request, cell = nb.cells
    assert existing.execution_count == 1 and existing.outputs == []
    assert request.cell_type == "markdown" and "> Revenue per region" in request.source
    assert cell.source.endswith("int(totals['n'])")
    meta = cell.metadata[METADATA_KEY]
    assert (meta["request"], meta["attempts"], meta["requests"]) == ("Revenue per region", 2, 2)
    assert meta["endpoint_host"] == f"127.0.0.1:{model_server.port}" and meta["tokens"]["prompt"] > 0
    stream, result = cell.outputs
    assert stream.text == "{'n': 40, 's': 20}\n"
    assert result.data["text/plain"] == "40" and result.execution_count == cell.execution_count


def test_new_notebook_from_prompt_file_with_a_figure(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    (tmp_path / "ask.txt").write_text("plot a line\n")
    model_server.script(py("from IPython.display import clear_output\nprint('frame 1')\nclear_output(wait=True)\n"
                           "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"))
    proc = run(["new.ipynb", "--prompt-file", "ask.txt"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    nb = nbformat.read(tmp_path / "new.ipynb", as_version=4)
    assert nb.metadata.kernelspec.name == "python3"
    (figure,) = nb.cells[-1].outputs  # the cleared frame is gone, as in Jupyter
    assert "image/png" in figure.data
    assert "plot a line" in model_server.request_texts()[0]


def test_giving_up_exits_1_and_leaves_the_notebook_unchanged(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    before = existing_notebook(tmp_path / "a.ipynb", "x = 1")
    model_server.script(py("y = missing_a"), py("y = missing_b"))
    proc = run(["a.ipynb", "--prompt", "set y", "--retries", "1"], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "✗ a.ipynb: gave up after 2 attempts; last error: NameError: name 'missing_b' is not defined "
        "(line 1); the notebook was not changed. Rephrase the request, give more detail, or raise --retries.")
    assert (tmp_path / "a.ipynb").read_bytes() == before


def test_a_name_the_notebook_sets_but_did_not_run_points_at_run_existing(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    # Found by hand: the model was shown the cell that sets df, but a new kernel has no df.
    existing_notebook(tmp_path / "a.ipynb", "df = {'n': 1}")
    model_server.script(py("print(df['n'])"))
    proc = run(["a.ipynb", "--prompt", "print n of df", "--retries", "0"], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith(
        "the notebook was not changed ('df' is set by the notebook's own cells, which were not run: "
        "--run-existing runs them first)"), proc.stderr
    # A cell that only mentions the name does not set it: no such hint.
    existing_notebook(tmp_path / "b.ipynb", "# df comes later\nprint('df')")
    model_server.script(py("print(df['n'])"))
    proc = run(["b.ipynb", "--prompt", "print n of df", "--retries", "0"], tmp_path)
    assert proc.returncode == 1 and proc.stderr.strip().endswith(
        "the notebook was not changed. Rephrase the request, give more detail, or raise --retries."), proc.stderr


def test_config_file_reaches_the_shared_settings(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    (tmp_path / "cfg.py").write_text("c.AICISettings.retries = 0\nc.AICISettings.model = 'from-config'\n")
    model_server.script(py("y = missing_a"), py("y = 1"))
    proc = run(["a.ipynb", "--prompt", "set y", "--config", "cfg.py"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "gave up after 1 attempt;" in proc.stderr
    assert [r["model"] for r in model_server.requests] == ["from-config"]


def test_existing_cell_error_exits_5(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    # An error before the last cell: later cells never ran, so the context would be wrong.
    # (An error in the last cell is the request's business: "fix the cell above", see
    # tests/integration/drivers/test_conformance.py.)
    existing_notebook(tmp_path / "a.ipynb", "ok = 1", "1 / 0", "ok = 2")
    proc = run(["a.ipynb", "--prompt", "anything", "--run-existing"], tmp_path)
    assert proc.returncode == 5
    assert "existing code cell 2 raised ZeroDivisionError: division by zero" in proc.stderr
    assert model_server.requests == []  # the model is not asked about a broken notebook


def test_model_errors_exit_3_with_one_line(tmp_path: Path, model_server: ScriptedOpenAIServer,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    model_server.script(Reply(status=503))
    proc = run(["a.ipynb", "--prompt", "x", "--AICISettings.max_request_retries=0"], tmp_path)
    assert proc.returncode == 3
    assert proc.stderr.strip().splitlines()[-1].startswith("✗ a.ipynb: ModelServerError: ")
    assert "Traceback" not in proc.stderr
    monkeypatch.delenv("OPENAI_BASE_URL")
    # With the [local] extra installed, no endpoint means the local model, as in %%ask; off here.
    proc = run(["a.ipynb", "--prompt", "x", "--AICISettings.local_fallback=False"], tmp_path)
    assert proc.returncode == 3 and "no model endpoint is configured" in proc.stderr
    assert not (tmp_path / "a.ipynb").exists()


def test_a_file_that_is_not_a_notebook_exits_2_untouched(tmp_path: Path,
                                                         model_server: ScriptedOpenAIServer) -> None:
    (tmp_path / "a.ipynb").write_text("{not json")
    proc = run(["a.ipynb", "--prompt", "x"], tmp_path, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert "UsageProblem: cannot read a.ipynb as a notebook" in proc.stderr and "Traceback" not in proc.stderr
    assert (tmp_path / "a.ipynb").read_text() == "{not json" and model_server.requests == []


@pytest.mark.parametrize("args, message", [
    (["a.ipynb"], "give a request with --prompt"),
    (["--prompt", "x"], "name a notebook"),
    (["a.txt", "--prompt", "x"], "expected NAME.ipynb"),
    (["a.ipynb", "--prompt", "x", "--jobs", "0"], "--jobs must be at least 1"),
    (["a.ipynb", "--prompt", "x", "--retries", "-1"], "retries"),
    (["a.ipynb", "--prompt-file", "nope.txt"], "cannot read --prompt-file"),
    (["a.ipynb", "--prompt", "x", "--policy", "never"], "expected any of ['auto', 'ask-risky', 'ask']"),
    # A mistyped option ran with the default and exited 0 (traitlets only warns).
    (["a.ipynb", "--prompt", "x", "--retires", "0"], "unknown option --retires (did you mean --retries?)"),
    (["a.ipynb", "--prompt", "x", "--regenrate"], "unknown option --regenrate (did you mean --regenerate?)"),
    (["a.ipynb", "--prompt", "x", "--retries"], "--retries needs a value"),
    (["a.ipynb", "--prompt", "x", "--jobs", "x"], "expected an int, not the str 'x'"),
])
def test_usage_errors_exit_2(tmp_path: Path, model_server: ScriptedOpenAIServer,
                             args: list[str], message: str) -> None:
    proc = run(args, tmp_path, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert "usage:" not in proc.stderr and "CRITICAL" not in proc.stderr  # one line, not argparse's page
    assert model_server.requests == [] and not (tmp_path / "a.ipynb").exists()


def test_an_unknown_kernel_is_one_line(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    # Found by a newcomer: jupyter_client logged a 20-line NoSuchKernel traceback above our line.
    proc = run(["a.ipynb", "--prompt", "x", "--kernel", "no-such-kernel"], tmp_path, timeout=60)
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "✗ a.ipynb: KernelError: no kernel named 'no-such-kernel': see `jupyter kernelspec list`"]


def test_a_cell_past_the_timeout_is_interrupted_and_fixed(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    existing_notebook(tmp_path / "a.ipynb", "base = 1")
    # It prints all the while: the kernel is never quiet, yet the timeout must fire.
    model_server.script(py("import time\nbase += 100\nkept = 1\nwhile True:\n    print('tick')\n    time.sleep(0.001)"),
                        Reply(py("done = base + 1\ndone"), require="TimeoutError"))
    started = time.monotonic()
    proc = run(["a.ipynb", "--prompt", "loop", "--timeout", "2", "--run-existing"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 60
    assert "TimeoutError: the code ran longer than 2 s and was interrupted" in proc.stderr
    # The interrupt kept the kernel and its state; the interrupted attempt itself was undone.
    assert "↺ attempt 1 undone: restored base; removed new names kept, time" in proc.stderr
    assert nbformat.read(tmp_path / "a.ipynb", as_version=4).cells[-1].outputs[0].data["text/plain"] == "2"


def test_a_kernel_that_dies_is_a_clear_error_within_seconds(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    before = existing_notebook(tmp_path / "a.ipynb", "x = 1")
    model_server.script(py("import os\nos._exit(1)"))
    started = time.monotonic()
    proc = run(["a.ipynb", "--prompt", "die", "--receive-timeout", "1", "--yes"], tmp_path)  # os._exit is flagged
    assert proc.returncode == 4, proc.stderr
    assert time.monotonic() - started < 30
    assert "KernelDied: the kernel (local python3) died while running code" in proc.stderr
    assert (tmp_path / "a.ipynb").read_bytes() == before


@pytest.mark.parametrize(("how", "code", "said"), [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 143, "stopped (SIGTERM)"),  # a CI job's timeout, a container stopping
])
def test_interrupting_the_command_leaves_the_notebook_valid_and_unchanged(
        tmp_path: Path, model_server: ScriptedOpenAIServer, how: signal.Signals, code: int, said: str) -> None:
    before = existing_notebook(tmp_path / "a.ipynb", "x = 1")
    model_server.script(py("import os, time\nopen('kernel.pid', 'w').write(str(os.getpid()))\ntime.sleep(60)"))
    # Where the kernel's private socket folder goes: short, as socket paths must be.
    temp = Path(tempfile.mkdtemp(prefix="t"))
    try:
        interrupt_and_check(tmp_path, temp, before, how, code, said)
    finally:
        shutil.rmtree(temp)


def interrupt_and_check(tmp_path: Path, temp: Path, before: bytes, how: signal.Signals, code: int,
                        said: str) -> None:
    # A shell starts background jobs with SIGINT ignored, and children inherit that: give the
    # command the default handler a user's terminal would, wherever the suite itself runs.
    proc = subprocess.Popen([*CLI, "a.ipynb", "--prompt", "wait"], cwd=tmp_path, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "TMPDIR": str(temp)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not (tmp_path / "kernel.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # the code is now asleep in the kernel
    assert [p.name[:5] for p in temp.iterdir() if p.is_dir()] == ["aici-"]
    proc.send_signal(how)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert err.strip().splitlines()[-1] == f"jupyter ai-ci: {said}; notebooks not yet finished were not changed"
    assert list(temp.iterdir()) == []  # the kernel's socket folder (and connection file) went with it
    assert (tmp_path / "a.ipynb").read_bytes() == before
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    # The kernel was shut down, not left running without a client.
    pid = int((tmp_path / "kernel.pid").read_text())
    deadline = time.monotonic() + 10
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not process_alive(pid)


def process_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie has exited; only its parent has not reaped it yet


def test_jobs_run_notebooks_at_once_each_in_its_own_kernel(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    code = ("import os, time, json\nstart = time.time()\ntime.sleep(2)\n"
            "print(json.dumps([os.getpid(), start, time.time()]))")
    model_server.script(py(code), py(code))
    proc = run(["one.ipynb", "two.ipynb", "--prompt", "wait", "--jobs", "2", "--json", "runs.json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "runs.json").read_text())
    assert [(r["notebook"], r["exit_code"], r["status"], r["attempts"]) for r in record] == [
        ("one.ipynb", 0, "success", 1), ("two.ipynb", 0, "success", 1)]
    assert all(r["execute_seconds"] >= 2 for r in record)
    spans = [json.loads(nbformat.read(tmp_path / n, as_version=4).cells[-1].outputs[0].text)
             for n in ("one.ipynb", "two.ipynb")]
    (pid1, start1, end1), (pid2, start2, end2) = spans
    assert pid1 != pid2
    assert start1 < end2 and start2 < end1  # the two cells ran at the same time


def test_one_prompt_over_two_notebooks_asks_for_each_and_replays_each_its_own(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    # Found by hand: d replayed the code written for c (its names, not d's).
    existing_notebook(tmp_path / "c.ipynb", "v = 2")
    existing_notebook(tmp_path / "d.ipynb", "w = 5")
    model_server.script(py("doubled = v * 2\nprint(doubled)"), py("doubled = w * 2\nprint(doubled)"))
    proc = run(["c.ipynb", "d.ipynb", "--run-existing", "--prompt", "double it"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(model_server.requests) == 2 and "NameError" not in "".join(model_server.request_texts())
    outputs = [nbformat.read(tmp_path / n, as_version=4).cells[-1].outputs[0].text for n in ("c.ipynb", "d.ipynb")]
    assert outputs == ["4\n", "10\n"]
    # Run again on fresh copies: each notebook replays its own code, and the model is not asked.
    existing_notebook(tmp_path / "c.ipynb", "v = 3")
    existing_notebook(tmp_path / "d.ipynb", "w = 7")
    proc = run(["c.ipynb", "d.ipynb", "--run-existing", "--prompt", "double it"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(model_server.requests) == 2
    outputs = [nbformat.read(tmp_path / n, as_version=4).cells[-1].outputs[0].text for n in ("c.ipynb", "d.ipynb")]
    assert outputs == ["6\n", "14\n"]


def test_a_missing_folder_fails_alone_in_a_batch(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    # Found by hand: one mistyped path stopped the whole batch (exit 2, no --json records).
    model_server.script(py("x = 1"))
    proc = run(["nope/a.ipynb", "b.ipynb", "--prompt", "set x", "--json", "runs.json"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "✗ nope/a.ipynb: UsageProblem: the folder nope does not exist; nothing was run for a.ipynb" \
        in proc.stderr
    assert "✓ b.ipynb: 1 code cell appended after 1 attempt" in proc.stdout
    record = json.loads((tmp_path / "runs.json").read_text())
    assert [(r["notebook"], r["exit_code"]) for r in record] == [("nope/a.ipynb", 2), ("b.ipynb", 0)]
    assert not (tmp_path / "nope").exists()
    # Asked again of a fresh b, it replays, and the line says so once.
    (tmp_path / "b.ipynb").unlink()
    proc = run(["b.ipynb", "--prompt", "set x"], tmp_path)
    assert proc.returncode == 0 and len(model_server.requests) == 1, proc.stderr
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("✓ b.ipynb")]
    assert "replayed, no model call" in line and line.count("replayed") == 1, line


def test_the_kernel_gets_no_model_key_to_print_into_the_saved_notebook(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    # Found by the security review's follow-up (#30): the command line's kernel inherited
    # OPENAI_API_KEY, and generated code could print it into the notebook this command saves
    # (outputs are not masked there), or read it from the command's /proc/<pid>/environ.
    key = "sk-test-Keep0utOfKernels42"
    existing_notebook(tmp_path / "a.ipynb", "x = 1")
    model_server.script(py("import os\nprint('env:', os.environ.get('OPENAI_API_KEY'))\n"
                           "parent = open(f'/proc/{os.getppid()}/environ', 'rb').read()\n"
                           "print('parent:', parent.count(b'Keep0utOfKernels'))"))
    model_server.api_key = key  # the model must still get it: the server answers 401 otherwise
    try:
        proc = subprocess.run([*CLI, "a.ipynb", "--prompt", "show the environment", "--yes"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                              env={**os.environ, "OPENAI_API_KEY": key})
    finally:
        model_server.api_key = None
    assert proc.returncode == 0, proc.stderr
    saved = (tmp_path / "a.ipynb").read_text()
    assert "env: None" in saved and "parent: 0" in saved, saved[-400:]
    assert key not in saved


def test_a_failed_attempt_in_the_commands_kernel_leaves_its_files_and_environment(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    """#36 through the kernel the command line drives (remote transactions): the failed attempt's
    file writes and environment are undone before the fix runs, and the line says so."""
    existing_notebook(tmp_path / "a.ipynb", "x = 1")
    (tmp_path / "notes.txt").write_text("mine")
    model_server.script(
        py("import os\nos.environ['UNDO_CLI'] = '1'\nopen('notes.txt', 'w').write('theirs')\n"
           "open('new.txt', 'w').write('new')\nmissing_name"),
        py("import os\nseen = (os.environ.get('UNDO_CLI'), open('notes.txt').read(), os.path.exists('new.txt'))\n"
           "print(seen)"))
    proc = run(["a.ipynb", "--prompt", "write notes", "--yes"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    cell = nbformat.read(tmp_path / "a.ipynb", as_version=4).cells[-1]
    printed = "".join(o.get("text", "") for o in cell.outputs)
    assert "(None, 'mine', False)" in printed  # what the fix found: nothing of attempt 1
    said = proc.stdout + proc.stderr
    assert "attempt 1 undone" in said and "os.environ['UNDO_CLI']" in said and "notes.txt" in said
    assert (tmp_path / "notes.txt").read_text() == "mine" and not (tmp_path / "new.txt").exists()
