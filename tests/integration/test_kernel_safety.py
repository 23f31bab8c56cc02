"""Transactions, limits and approval in a real kernel, against a real HTTP model.

One kernel for the module (a fresh one costs ~1 s); each test sets its own
variables and checks they survive.  Every wait has a timeout.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_ai_ci.events import TransactionReport
from jupyter_ai_ci.testing import openai_server
from jupyter_ai_ci.testing.kernel import CellRun, KernelSession
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.timeout(120)


def py(code: str) -> str:
    return f"Here it is.\n```python\n{code}\n```"


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as s:
        yield s


@pytest.fixture(scope="module")
def kernel(server: ScriptedOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelSession]:
    k = KernelSession({"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key",
                       "JUPYTER_AI_CI_MODEL": "scripted-model"},
                      cwd=str(tmp_path_factory.mktemp("kernel")))  # replay records land there
    try:
        setup = k.run("%load_ext jupyter_ai_ci\n%config AskMagics.replay = False\n"
                     "%config AskMagics.execution_timeout = 2.0\n"
                      "%config AskMagics.max_request_retries = 1\nimport pandas as pd")
        assert setup.status == "ok", setup
        yield k
    finally:
        k.close()


def no_internal_traceback(run: CellRun) -> None:
    """The error is one line; no frame of ours or of IPython's is shown (the
    generated code's own traceback may be, under the cell)."""
    assert len(run.traceback) <= 1, run.traceback
    shown = run.shown_error + run.stderr + run.stdout
    assert "jupyter_ai_ci/" not in shown and "site-packages/IPython" not in shown


def test_failed_attempt_is_undone_and_the_retry_doubles_once(kernel: KernelSession,
                                                             server: ScriptedOpenAIServer) -> None:
    kernel.run("df = pd.DataFrame({'x': [1, 2, 3]})\nview = df")
    server.script(py("df['x'] *= 2\nhelper = 1\nraise ValueError('half done')"),
                  Reply(py("df['x'] *= 2"), require="half done"))
    run = kernel.run("%%ask\ndouble x in df")
    assert run.status == "ok", run
    assert "attempt 1 undone: restored df" in run.shown and "removed new names helper" in run.shown
    assert kernel.value("df['x'].tolist()") == "[2, 4, 6]"
    assert kernel.value("view is df") == "True"
    assert kernel.value("'helper' in dir()") == "False"


def test_after_the_last_failure_the_namespace_is_as_before(kernel: KernelSession,
                                                           server: ScriptedOpenAIServer) -> None:
    kernel.run("items = [1, 2]\ncounter = 10")
    server.script(py("items.append(3)\ncounter += 1\nboom()"), py("items.clear()\ncounter = 0\nboom2()"))
    run = kernel.run("%%ask --retries 1\nchange things")
    assert run.status == "error" and run.ename == "RetriesExhausted"
    assert "gave up after 2 attempts" in run.evalue
    assert kernel.value("(items, counter)") == "([1, 2], 10)"
    no_internal_traceback(run)


def test_a_hung_cell_times_out_and_the_kernel_lives(kernel: KernelSession,
                                                    server: ScriptedOpenAIServer) -> None:
    kernel.run("keep = 'me'")
    server.script(py("import time\nkeep = 'changed'\ntime.sleep(60)"),
                  Reply(py("spin_done = True"), require="TimeoutError"))
    run = kernel.run("%%ask\nwait a minute", timeout=60)
    assert run.status == "ok", run
    assert run.seconds < 20
    assert "longer than 2 s" in run.shown
    assert kernel.value("(keep, spin_done)") == "('me', True)"


def test_a_busy_loop_is_interrupted_too(kernel: KernelSession, server: ScriptedOpenAIServer) -> None:
    # Two different busy loops (the same code again would not be run: core/loop.py).
    server.script(py("while True:\n    pass"), py("n = 0\nwhile True:\n    n += 1"))
    run = kernel.run("%%ask --retries 1\nloop forever", timeout=60)
    assert run.ename == "RetriesExhausted" and "TimeoutError" in run.evalue
    assert kernel.alive()
    assert kernel.run("1 + 1").status == "ok"  # (an 'aborted' answer is asked again by run itself)


def test_output_kept_and_fed_back_is_capped(kernel: KernelSession, server: ScriptedOpenAIServer) -> None:
    server.script(py("for i in range(1_000_000):\n    print('line', i)\nraise RuntimeError('after output')"),
                  Reply(py("ok = 1"), require="RuntimeError: after output"))
    kernel.run("%config AskMagics.execution_timeout = 60.0")
    try:
        run = kernel.run("%%ask\nprint a lot", timeout=90)
    finally:
        kernel.run("%config AskMagics.execution_timeout = 2.0")
    assert run.status == "ok", run.status
    assert len(run.stdout) < 2_200_000 and "output cut here" in run.stdout  # the frontend is spared too
    fix = server.request_texts()[1]
    assert "characters cut" in fix and len(fix) < 40_000
    assert "line 0" in fix and "line 999999" in fix


def test_risky_code_is_refused_when_nobody_can_answer(kernel: KernelSession,
                                                      server: ScriptedOpenAIServer) -> None:
    kernel.run("import os\nmarker = 'untouched'")
    server.script(py("import os\nos.system('echo hi')\nmarker = 'ran'"))
    run = kernel.run("%%ask\nrun a command", allow_stdin=False)
    assert run.ename == "PolicyRefused" and "os.system" in run.evalue
    assert "nobody can be asked" in run.evalue
    assert run.seconds < 10 and kernel.value("marker") == "'untouched'"
    no_internal_traceback(run)


def test_approval_through_stdin(kernel: KernelSession, server: ScriptedOpenAIServer) -> None:
    server.script(py("import subprocess\nout = subprocess.getoutput('echo approved')"))
    run = kernel.run("%%ask\nrun echo", answers=["y"])
    assert run.status == "ok" and run.prompts == ["Run this code? [y/N] "]
    assert "subprocess.getoutput: starts a process" in run.stdout
    assert kernel.value("out") == "'approved'"
    server.script(py("import subprocess\nrejected = subprocess.getoutput('echo no')"))
    run = kernel.run("%%ask\nrun echo", answers=["n"])
    assert run.ename == "PolicyRefused" and "rejected by the user" in run.evalue
    assert kernel.value("'rejected' in dir()") == "False"


def test_hidden_processes_and_writes_through_links_are_asked_about_and_a_no_keeps_them_from_running(
        kernel: KernelSession, server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    """Issue #38, items 3 and 4: the question names what is hidden, the user says no, nothing happens."""
    home, ran = tmp_path / "home", tmp_path / "ran"
    home.mkdir()
    kernel.run(f"import os\nos.symlink({str(home)!r}, 'home_link')\nRAN = {str(ran)!r}")  # in the kernel's folder
    try:
        for code, says in [
            ("import os\nlist(map(os.system, ['touch ' + RAN]))",
             "os.system: runs a shell command (passed on as a value"),
            ("get_ipython().system_raw('touch ' + RAN)", "get_ipython().system_raw: runs a shell command"),
            ("get_ipython().run_cell(\"import os; os.system('touch ' + RAN)\")",
             "os.system: runs a shell command (in a string run as code)"),
            ("open('home_link/.bashrc', 'a').write('echo hi')",
             f"outside the working directory: 'home_link/.bashrc' (a link leads it to {str(home / '.bashrc')!r})"),
        ]:
            server.script(py(code))
            run = kernel.run("%%ask --retries 0\ndo it", answers=["n"])
            assert run.ename == "PolicyRefused" and "rejected by the user" in run.evalue, code
            assert run.prompts == ["Run this code? [y/N] "] and says in run.stdout, run.stdout
            assert not ran.exists() and not (home / ".bashrc").exists()
    finally:
        kernel.run("os.remove('home_link')")


def test_exit_is_refused_or_caught_and_the_kernel_lives(kernel: KernelSession,
                                                        server: ScriptedOpenAIServer) -> None:
    kernel.run("precious = 42")
    server.script(py("exit()"))
    refused = kernel.run("%%ask\nquit")
    assert refused.ename == "PolicyRefused" and "exit" in refused.evalue
    server.script(py("precious = 0\nexit()"), Reply(py("import sys\nsys.exit(1)"), require="exit()"),
                  Reply(py("done = 'fixed'"), require="SystemExit"))
    run = kernel.run("%%ask --yes --retries 2\nquit politely")
    assert run.status == "ok", run
    assert not any(p.get("source") == "ask_exit" for p in run.payloads)
    time.sleep(0.5)  # ipykernel would stop 0.1 s after exit_now was set
    assert kernel.alive() and kernel.value("(precious, done)") == "(42, 'fixed')"


def test_code_that_deletes_what_the_loop_relies_on(kernel: KernelSession,
                                                   server: ScriptedOpenAIServer) -> None:
    kernel.run("mine = [1]")
    server.script(py("%reset -f\nraise RuntimeError('after reset')"),
                  Reply(py("del In, Out, get_ipython, _ih, _oh\nfine = 1"), require="after reset"))
    run = kernel.run("%%ask --yes\nclean up")
    assert run.status == "ok", run
    assert kernel.value("mine") == "[1]" and kernel.value("fine") == "1"
    server.script(py("again = mine + [2]"))
    run = kernel.run("%%ask\nuse mine again")
    assert run.status == "ok" and kernel.value("again") == "[1, 2]"
    no_internal_traceback(run)


def test_user_interrupt_during_generation_inserts_nothing(kernel: KernelSession,
                                                          server: ScriptedOpenAIServer) -> None:
    kernel.run("safe = 'yes'")
    server.script(Reply(py("safe = 'no'"), delay=5))
    run, pressed = kernel.run_interrupted("%%ask\nslow", lambda seen: "writing code" in seen.shown,  # the call began
                                          after=0.5, timeout=30)
    assert pressed and run.ename == "Interrupted" and "nothing was inserted" in run.evalue
    assert run.seconds < 4.5 and not run.payloads
    assert kernel.value("safe") == "'yes'"


def test_user_interrupt_during_execution_undoes_the_attempt(kernel: KernelSession,
                                                            server: ScriptedOpenAIServer) -> None:
    kernel.run("%config AskMagics.execution_timeout = 30.0\nbag = []")
    server.script(py("import time\nbag.append('partial')\nprint('started', flush=True)\ntime.sleep(20)"))
    try:  # interrupt once the generated code is running (its print arrived)
        run, pressed = kernel.run_interrupted("%%ask\nslow code", lambda seen: "started" in seen.stdout,
                                              after=0.3, timeout=40)
    finally:
        kernel.run("%config AskMagics.execution_timeout = 2.0")
    assert pressed, "the generated code never started"
    assert run.ename == "Interrupted" and run.seconds < 15
    assert kernel.value("bag") == "[]"


def test_token_budget_per_request_and_session(kernel: KernelSession, server: ScriptedOpenAIServer) -> None:
    kernel.run("%config AskMagics.max_tokens_per_request = 50")
    server.script(py("x = 1"))
    try:
        run = kernel.run("%%ask\nanything")
    finally:
        kernel.run("%config AskMagics.max_tokens_per_request = 0")
    assert run.ename == "BudgetExceeded" and "token budget reached" in run.evalue
    assert server.requests == []
    kernel.run("%config AskMagics.max_tokens_per_session = 1")
    try:
        run = kernel.run("%%ask\nanything")
    finally:
        kernel.run("%config AskMagics.max_tokens_per_session = 0")
    # Spent by earlier tests in this kernel, or all but 1 token left when run alone.
    assert run.ename == "BudgetExceeded" and ("session's token budget" in run.evalue
                                              or "the session has 1 of its 1 left" in run.evalue), run.evalue


assert openai_server  # the module under test is the real server


def test_missing_module_is_installed_after_approval_and_rerun(kernel: KernelSession,
                                                              server: ScriptedOpenAIServer) -> None:
    """Needs the package index (PyPI or a mirror); installs termcolor into the
    kernel's own environment and removes it again."""
    if kernel.value("__import__('importlib.util').util.find_spec('termcolor') is None") != "True":
        pytest.skip("termcolor is already installed; nothing would be missing")
    kernel.run("%config AskMagics.execution_timeout = 120.0")
    server.script(py("import termcolor\ncolored = termcolor.colored('ok', 'green')"))
    try:
        run = kernel.run("%%ask\ncolour it", answers=["y"], timeout=180)
        if "installing termcolor failed" in run.shown:
            pytest.skip("the package index is not reachable")
        assert run.status == "ok", (run.ename, run.evalue, run.stdout[-2000:])
        assert run.prompts == ["Install it? [y/N] "]
        assert "module 'termcolor' is not installed" in run.shown
        assert len(server.requests) == 1  # re-run without asking the model again
        assert "ok" in kernel.value("colored")
        prefix = kernel.value("__import__('sys').prefix").strip("'")
        assert kernel.value("__import__('termcolor').__file__").strip("'").startswith(prefix + "/")
    finally:
        kernel.run("%pip uninstall -y -q termcolor", timeout=120)
        kernel.run("%config AskMagics.execution_timeout = 2.0")


def test_install_refused_without_stdin(kernel: KernelSession, server: ScriptedOpenAIServer) -> None:
    server.script(py("import surely_not_a_module_xyz"), py("fallback = 'used'"))
    run = kernel.run("%%ask\nuse it", allow_stdin=False)
    assert run.status == "ok" and "not installing surely-not-a-module-xyz" in run.shown.replace("_", "-")
    assert kernel.value("fallback") == "'used'"


def test_transactions_driven_from_outside_the_kernel(kernel: KernelSession) -> None:
    """What the CLI's and the sidebar's executors do: user expressions, no in-kernel driver."""
    from jupyter_ai_ci.safety.remote import expression, parse

    def call(op: str, code: tuple[str, ...] = ()) -> TransactionReport:
        return parse(kernel.expressions({"tx": expression(op, code)}, silent=True)["tx"])

    kernel.run("remote_rows = [1, 2]\nremote_df = pd.DataFrame({'x': [1]})")
    code = ("remote_rows.append(3)\nremote_df['x'] += 1\nremote_new = 1\n1/0",)
    saved = call("checkpoint", code)
    assert saved.supported and set(saved.saved) == {"remote_rows", "remote_df"}
    assert kernel.run(code[0]).ename == "ZeroDivisionError"
    undone = call("rollback")
    assert undone.dropped == ("remote_new",) and "remote_rows" in undone.restored
    assert kernel.value("(remote_rows, int(remote_df['x'][0]))") == "([1, 2], 1)"
    assert call("commit").supported
    assert not parse({"status": "error", "ename": "ModuleNotFoundError"}).supported


def test_a_failed_attempt_that_changed_directory_is_undone_there_too(kernel: KernelSession,
                                                                     server: ScriptedOpenAIServer) -> None:
    kernel.run("import os\nos.makedirs('elsewhere', exist_ok=True)\nhome = os.getcwd()")
    server.script(py("import os\nos.chdir('elsewhere')\nraise ValueError('moved')"),
                  Reply(py("import os\nwhere = os.getcwd()"), require="moved"))
    run = kernel.run("%%ask --yes\nfind the data")
    assert run.status == "ok", run
    assert "attempt 1 undone: restored the working directory" in run.shown
    assert "effects outside the kernel's memory stay" not in run.shown  # it did not stay
    assert kernel.value("where == home == os.getcwd()") == "True"  # the fix ran where the request began
