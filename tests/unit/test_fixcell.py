"""The fix request, its checks and its verdict (run/fixcell.py), without a kernel."""

from __future__ import annotations

import pytest

from jupyter_ai_ci.errors import NotFixed, UsageProblem
from jupyter_ai_ci.events import Attempt, Cell, ErrorInfo, ExecutionResult, Outcome
from jupyter_ai_ci.run import fixcell

CELL = fixcell.FailedCell("total = df['Revenue'].sum()", "KeyError: 'Revenue'", "Traceback …\nKeyError: 'Revenue'", 4)


def failed(code: str, ename: str = "NameError", evalue: str = "name 'x' is not defined") -> Attempt:
    error = ErrorInfo(ename, evalue, f"{ename}: {evalue}")
    return Attempt(1, 1, (code,), (ExecutionResult(error=error),))


def test_the_request_names_the_cell_its_source_and_its_traceback() -> None:
    text = fixcell.request(CELL, "fix")
    assert text.startswith("Fix the notebook cell below (In [4]): it raised KeyError: 'Revenue'.")
    assert "```python\ntotal = df['Revenue'].sum()\n```" in text and "Traceback …" in text
    assert fixcell.request(CELL, "explain").startswith("Explain in a few sentences, in words")


@pytest.mark.parametrize("error, said", [("KeyboardInterrupt", "interrupted"), ("SystemExit: 3", "exit"),
                                         ("DeadKernelError: Kernel died", "kernel restart")])
def test_cells_with_nothing_to_fix_are_refused_in_one_line(error: str, said: str) -> None:
    with pytest.raises(UsageProblem, match=said):
        fixcell.check(fixcell.FailedCell("x = 1", error, error))


def test_the_verdict_names_why_there_is_no_fix() -> None:
    ok = Outcome("success", cells=(Cell("total = df['revenue'].sum()", 1, ExecutionResult()),))
    assert fixcell.fixed_code(CELL, ok) == "total = df['revenue'].sum()"
    with pytest.raises(NotFixed, match="back unchanged, and it runs now"):
        fixcell.fixed_code(CELL, Outcome("success", cells=(Cell(CELL.source + "\n", 1, ExecutionResult()),)))
    with pytest.raises(NotFixed, match="back unchanged: it cannot fix this one; In \\[4\\] and the kernel"):
        fixcell.fixed_code(CELL, Outcome("failed", attempts=(failed(CELL.source),)))
    with pytest.raises(NotFixed, match="gave up after 1 attempt; last error: NameError"):
        fixcell.fixed_code(CELL, Outcome("failed", attempts=(failed("y = x"),)))
    with pytest.raises(NotFixed, match="^the model said it cannot: I cannot see df.; In \\[4\\] and the kernel"):
        fixcell.fixed_code(CELL, Outcome("failed", attempts=(failed("y = x"),), declined=True,
                                         reason="the model said it cannot: I cannot see df."))
    with pytest.raises(NotFixed, match="needs the package 'polars'.*%pip install polars"):
        fixcell.fixed_code(CELL, Outcome("failed", attempts=(
            failed("import polars", "ModuleNotFoundError", "No module named 'polars'"),)))


def test_the_diff_goes_from_before_to_after() -> None:
    delta = fixcell.diff("a = 1\nb = df['Revenue']\n", "a = 1\nb = df['revenue']\n", "In [4]")
    assert delta.splitlines()[:2] == ["--- In [4] (before)", "+++ In [4] (after)"]
    assert "-b = df['Revenue']" in delta and "+b = df['revenue']" in delta and " a = 1" in delta
