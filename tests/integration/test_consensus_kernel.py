"""Candidates that must agree (#28), bad input in a real kernel: a candidate that hangs, one
that prints megabytes, an interrupt while a candidate runs, and one while the model writes it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from jupyter_ai_ci.testing.kernel import KernelSession
from jupyter_ai_ci.testing.openai_server import Reply, ScriptedOpenAIServer

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
                       "JUPYTER_AI_CI_MODEL": "scripted-model"}, cwd=str(tmp_path_factory.mktemp("kernel")))
    try:
        setup = k.run("%load_ext jupyter_ai_ci\n%config AskMagics.replay = False\n"
                      "%config AskMagics.execution_timeout = 2.0\n%config AskMagics.answer = 'never'")
        assert setup.status == "ok", setup
        yield k
    finally:
        k.close()


def test_a_candidate_that_hangs_is_interrupted_and_not_counted(kernel: KernelSession,
                                                               server: ScriptedOpenAIServer) -> None:
    kernel.run("total = 0")
    server.script(py("total = 42\ntotal"), py("import time\ntime.sleep(60)\ntotal = 42"), py("total = 42.0\ntotal"))
    started = time.monotonic()
    run = kernel.run("%%ask --candidates 3\nset total to the answer")
    assert run.status == "ok", run
    assert time.monotonic() - started < 30  # the hung one was stopped at execution_timeout, not waited for
    # Interrupted, it raised; asked anew (the error in words), the fix agrees.
    assert "candidate 2 of 3 raised" in run.shown and "asking it anew" in run.shown
    assert "2 of 2 candidates agree" in run.shown
    assert kernel.value("total") == "42.0"


def test_a_candidate_that_prints_megabytes_is_cut_and_still_compared(kernel: KernelSession,
                                                                      server: ScriptedOpenAIServer) -> None:
    server.script(py("print('x' * 5_000_000)\n7"), py("print('y' * 3_000_000)\n7.0"))
    run = kernel.run("%%ask --candidates 3\ncompute seven loudly")
    assert run.status == "ok", run
    assert "2 of 2 candidates agree" in run.shown
    # Each candidate's output is cut as any attempt's is (2 MB kept for the notebook, head and tail).
    assert "was not kept for the notebook" in run.shown and len(run.shown) < 2 * 2_100_000


def test_an_interrupt_while_a_candidate_runs_leaves_the_kernel_as_before(kernel: KernelSession,
                                                                         server: ScriptedOpenAIServer) -> None:
    kernel.run("import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3]})")
    server.script(py("df['x'] *= 10\nint(df['x'].sum())"),
                  py("df['x'] *= 10\nimport time\ntime.sleep(30)\nint(df['x'].sum())"))
    # Inside candidate 2's sleep (its reply comes at once; the cell timeout is 2 s): a Stop while the
    # model writes would keep candidate 1 instead (the test below).
    run, pressed = kernel.run_interrupted("%%ask --candidates 3\nscale x by ten and sum it",
                                          lambda seen: "checking…" in seen.shown, after=1.0)
    assert pressed, "candidate 1 never ran"
    assert run.status == "error", run  # stopped: no winner applied
    assert kernel.value("df['x'].tolist()") == "[1, 2, 3]"  # neither candidate's change stayed


def test_an_interrupt_while_the_model_writes_the_second_candidate_keeps_the_first(
        kernel: KernelSession, server: ScriptedOpenAIServer) -> None:
    """The Stop a person presses while "candidate 1 of 2: 60 — checking…" waits on a slow model:
    the check ends, the result they see is kept (applied once, not run again), and it says it was
    not checked; the cell is inserted and the kernel is free at once."""
    kernel.run("import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3]})")
    server.script(py("df['x'] *= 10\nint(df['x'].sum())"), Reply(py("int(df['x'].sum() * 10)"), delay=30))
    run, pressed = kernel.run_interrupted("%%ask --candidates 2\nscale x by ten and sum it",
                                          lambda seen: "checking…" in seen.shown, after=2.0)  # asked next
    assert pressed and len(server.requests) == 2, "the second candidate was never asked"
    assert run.status == "ok", run
    assert run.seconds < 20  # not the 30 s the model would have taken
    assert "check stopped: candidate 1's result is kept, not checked" in run.shown, run.shown
    assert "⚠ done, not checked: you stopped the check" in run.shown, run.shown
    assert kernel.value("df['x'].tolist()") == "[10, 20, 30]"  # once: held, committed, not run again
    assert any("df['x'] *= 10" in p.get("text", "") for p in run.payloads), run.payloads  # the cell
    server.script(py("int(df['x'].sum())"))
    assert kernel.run("%%ask --candidates 1\nsum x").status == "ok"  # the kernel takes the next request


def test_an_interrupt_while_the_answer_before_the_check_is_written_ends_the_check_too(
        kernel: KernelSession, server: ScriptedOpenAIServer) -> None:
    """With two candidates a question's answer in words is asked before the check (core/loop.py): an
    interrupt while it is written keeps the result, asks no other candidate, and says so."""
    kernel.run("import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3]})")
    server.script(py("df['x'] *= 10\nint(df['x'].sum())"), Reply("It is 60.", delay=30), py("60"))
    run, pressed = kernel.run_interrupted("%%ask --candidates 2 --answer\nscale x by ten and sum it",
                                          lambda seen: "answering from the output" in seen.shown, after=2.0)
    assert pressed and len(server.requests) == 2, "the answer was never asked"
    assert run.status == "ok" and run.seconds < 20, run
    assert "check stopped: candidate 1's result is kept, not checked" in run.shown, run.shown
    assert "not checked: you stopped the check (no answer in words)" in run.shown, run.shown
    assert kernel.value("df['x'].tolist()") == "[10, 20, 30]"  # kept once, not run again
    assert len(server.requests) == 2  # no other candidate asked after the Stop
