"""The in-process executor in a real IPython shell: timeouts, exit(), transactions."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_ai_ci.executors.shell import LAST_FAILURE, ShellExecutor

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def shell() -> Iterator[Any]:
    from IPython.testing import globalipapp

    globalipapp.start_ipython()  # None when another test module started it first
    yield globalipapp.get_ipython()


def test_checkpoint_rollback_through_run_cell(shell: Any) -> None:
    shell.run_cell("import pandas as pd\nframe = pd.DataFrame({'x': [1, 2]})\nseen = [frame]")
    ex = ShellExecutor(shell)
    code = "frame['x'] *= 10\nseen.append(None)\ncreated = 1\nraise KeyError('k')"
    assert set(ex.checkpoint([code]).saved) >= {"frame", "seen"}
    result = ex.execute(code)
    assert result.error is not None and result.error.ename == "KeyError"
    undone = ex.rollback()
    ns = shell.user_ns
    assert ns["frame"]["x"].tolist() == [1, 2] and ns["seen"][0] is ns["frame"] and len(ns["seen"]) == 1
    assert "created" not in ns and "created" in undone.dropped


def test_a_failure_never_inspected_is_let_go_with_its_attempt(shell: Any) -> None:
    # Kept on the shell for the fix request's hints; an attempt undone without them (an
    # interrupted run) must not leave its exception, and the frames it holds, behind.
    ex = ShellExecutor(shell)
    code = "big = bytearray(10)\nraise ValueError('no')"
    for undo in (ex.rollback, ex.commit):
        ex.checkpoint([code])
        assert ex.execute(code).error is not None
        assert isinstance(getattr(shell, LAST_FAILURE), ValueError)
        undo()
        assert not hasattr(shell, LAST_FAILURE)


def test_timeout_interrupts_sleep_and_busy_loops(shell: Any) -> None:
    ex = ShellExecutor(shell, timeout=0.5)
    for code in ("import time\ntime.sleep(30)", "while True:\n    pass",
                 ("while True:\n    try:\n        time.sleep(5)\n    except KeyboardInterrupt:\n"
                  "        pass")):
        t0 = time.perf_counter()
        result = ex.execute(code)
        elapsed = time.perf_counter() - t0
        assert result.error is not None and result.error.ename == "TimeoutError", code
        assert elapsed < 25, (code, elapsed)
    assert ex.execute("print('still here')").output == "still here\n"


def test_exit_does_not_end_the_shell(shell: Any) -> None:
    result = ShellExecutor(shell).execute("exit()")
    assert result.error is not None and result.error.ename == "SystemExit"
    assert not shell.exit_now


def test_outputs_are_clean_text(shell: Any) -> None:
    result = ShellExecutor(shell).execute(
        "print('\\x1b[32mgreen\\x1b[0m', b'\\xff'.decode('utf-8', 'surrogateescape'))")
    assert result.output == "green \\xff\n"


def test_the_traceback_is_the_default_context_whatever_xmode_says(shell: Any) -> None:
    """The model is shown the failing lines, never local variables' values (``%xmode Verbose``
    prints them), and an earlier cell's source is still there for IPython's own tracebacks."""
    shell.run_cell("def helper(rows):\n    token_part = 'kept-' + str(7700 + 81)\n"
                   "    return len(token_part) + rows['missing']",
                   store_history=True)
    code = "helper({})"
    shell.run_line_magic("xmode", "Verbose")
    try:
        result = ShellExecutor(shell).execute(code)
    finally:
        shell.run_line_magic("xmode", "Context")
    assert result.error is not None and result.error.ename == "KeyError"
    text = result.error.traceback
    assert "----> 1 helper({})" in text and "----> 3     return len(token_part) + rows['missing']" in text
    assert "kept-7781" not in text and "\x1b[" not in text  # the local's value: only Verbose prints it
    # IPython's own traceback of the helper's cell still shows its source afterwards.
    failed = shell.run_cell("helper({})", store_history=True)
    assert failed.error_in_exec is not None
    stb = shell.InteractiveTB.structured_traceback(type(failed.error_in_exec), failed.error_in_exec,
                                                   failed.error_in_exec.__traceback__)
    assert "return len(token_part) + rows['missing']" in shell.InteractiveTB.stb2text(stb)
