"""``%ask fix`` / ``%ask explain`` in a real kernel with no frontend (jupyter_client),
the model the scripted HTTP server: the last failed cell fixed by a tried,
transactional attempt, or explained; each way it cannot be, one line, the kernel
and the notebook as they were."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

from .kernel_helpers import ask_kernel, run_cell

FAILING = "runs += 1\nprint(df['Revenue'].sum())"
FIXED = "runs += 1\nprint(df['revenue'].sum())"


def py(code: str) -> str:
    return f"```python\n{code}\n```\n"


@pytest.fixture
def kernel(_server: ScriptedOpenAIServer) -> Iterator[Any]:
    with ask_kernel(_server.base_url) as kc:
        yield kc


def value(kc: Any, expression: str) -> str:
    return run_cell(kc, f"print({expression})").stdout.strip()


SETUP = "import pandas as pd\ndf = pd.DataFrame({'revenue': [1.5, 2.5]})\nruns = 0"


def failed(kc: Any, cell: str) -> None:
    assert run_cell(kc, cell).status == "error"


def one_line_error(run: Any, ename: str) -> str:
    assert run.status == "error", run.stdout
    content = run.reply["content"]
    assert content["ename"] == ename, content
    return str(content["evalue"])


def test_fix_runs_the_fix_once_and_offers_it_below_with_its_diff(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    assert run_cell(kernel, SETUP).status == "ok"
    failed(kernel, FAILING)
    assert value(kernel, "runs") == "1"  # the user's own cell got that far
    model_server.script(Reply(py(FIXED), require="KeyError: 'Revenue'"))
    run = run_cell(kernel, "%ask fix")
    assert run.status == "ok", run.reply
    assert model_server.misses == []
    sent = model_server.request_texts()[0]
    assert "Fix the notebook cell below (In [" in sent and f"```python\n{FAILING}\n```" in sent
    assert "4.0" in run.stdout  # the attempt's own output
    assert run.next_inputs == [FIXED]  # offered below: the tried fix, not re-run
    assert "ran without error" in run.shown
    assert "-print(df['Revenue'].sum())" in run.html and "+print(df['revenue'].sum())" in run.html
    assert value(kernel, "runs") == "2"  # the fix's += ran exactly once


def test_fix_after_retries_says_how_many(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    assert run_cell(kernel, SETUP).status == "ok"
    failed(kernel, FAILING)
    model_server.script(py("runs += 1\nprint(df['REVENUE'].sum())"), Reply(py(FIXED), require="KeyError"))
    run = run_cell(kernel, "%ask fix")
    assert run.status == "ok", run.reply
    assert "ran without error after 1 retry" in run.shown
    assert value(kernel, "runs") == "2"  # the failed attempt's += was rolled back


def test_explain_answers_in_words_and_runs_nothing(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    assert run_cell(kernel, SETUP.replace("[1.5, 2.5]", "[1.5]")).status == "ok"
    failed(kernel, FAILING)
    model_server.script(Reply("The column is called 'revenue', in lower case; 'Revenue' does not exist.",
                              require="Explain in a few sentences"))
    run = run_cell(kernel, "%ask explain")
    assert run.status == "ok", run.reply
    assert "in lower case" in run.shown and "nothing was run" in run.shown
    assert run.next_inputs == []
    assert value(kernel, "runs") == "1"


def test_each_cell_that_cannot_be_fixed_gets_one_line_and_changes_nothing(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    assert "no failed cell to fix" in one_line_error(run_cell(kernel, "%ask fix"), "UsageError")
    failed(kernel, "raise KeyboardInterrupt")
    assert "interrupted (KeyboardInterrupt)" in one_line_error(run_cell(kernel, "%ask fix"), "UsageError")
    failed(kernel, "raise SystemExit(3)")
    assert "SystemExit" in one_line_error(run_cell(kernel, "%ask explain"), "UsageError")
    assert model_server.requests == []  # none of them reached the model

    assert run_cell(kernel, "k = 0").status == "ok"
    failed(kernel, "k += 1\nx = undefined_name")
    # The same code back, every time: it fails as before, is rolled back, and the run says why.  Asking
    # again is free once, then spends the two retries (#37): four requests, none left unspent.
    model_server.script(*[py("k += 1\nx = undefined_name")] * 4)
    run = run_cell(kernel, "%ask fix")
    assert "sent In [" in one_line_error(run, "NotFixed") and "back unchanged" in run.reply["content"]["evalue"]
    assert len(model_server.requests) == 4
    assert run.next_inputs == [] and value(kernel, "k") == "1"
    # %ask fix again still means the user's cell (the last error is now %ask's own).
    model_server.script(py("k += 1\nx = other_undefined"), py("k += 1\nx = third_undefined"))
    evalue = one_line_error(run_cell(kernel, "%ask --retries 1 fix"), "NotFixed")
    assert "gave up after 2 attempts; last error: NameError: name 'third_undefined'" in evalue
    assert "and the kernel are as they were" in evalue and value(kernel, "k") == "1"

    failed(kernel, "import not_a_module_xyz")
    model_server.script(py("import not_a_module_xyz"), py("import not_a_module_xyz as m"))
    evalue = one_line_error(run_cell(kernel, "%ask --retries 1 fix"), "NotFixed")
    assert "needs the package 'not_a_module_xyz'" in evalue and "%pip install not_a_module_xyz" in evalue
    assert value(kernel, "k") == "1"
