"""The Fix / Explain action on a cell that raised, in JupyterLab and in Notebook 7.

A user cell ``runs += 1; df['Revenue'].sum()`` on a frame whose column is ``revenue``
raises.  Explain answers in words; Fix shows the tried fix's diff and "Ran without
error"; Reject leaves the cell and the kernel as they were; Accept puts the fix in the
cell with the attempt's output, and the kernel kept the attempt's state once (the
in-place ``+=`` applied once: ``runs`` ends at 2, not 3, with no second run).
"""

from __future__ import annotations

from typing import Any

import pytest
from labutil import make_notebook, open_notebook, run_first_cell, saved_notebook, wait_idle
from test_chat_panel import picture

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

PANEL = "#jupyter-ai-ci-chat"
ENDS = f"{PANEL} .jp-aici-done, {PANEL} .jp-aici-error"
SETUP = "import pandas as pd\ndf = pd.DataFrame({'revenue': [1.5, 2.5]})\nruns = 0"
FAILING = "runs += 1\ndf['Revenue'].sum()"
FIXED = "runs += 1\ndf['revenue'].sum()"


def source(cell: Any) -> str:
    return str(cell.locator(".jp-InputArea-editor .cm-content").inner_text())


def ended(page: Any, before: int) -> None:
    page.wait_for_function(f"document.querySelectorAll({ENDS!r}).length > {before}", timeout=90_000)
    wait_idle(page)


def click(page: Any, cell: Any, action: str) -> None:
    before = page.locator(ENDS).count()
    cell.locator(f".jp-aici-{action}-action").click()
    if action == "explain":
        ended(page, before)


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_fix_explain_reject_accept(page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer,
                                   frontend: str) -> None:
    if frontend == "notebook7":
        pytest.importorskip("notebook", minversion="7")
    (lab["root"] / frontend).mkdir(exist_ok=True)
    name = make_notebook(lab, f"{frontend}/fix.ipynb", [SETUP, FAILING, "print('runs =', runs)"])
    open_notebook(page, lab, name, notebook7=frontend == "notebook7")
    cells = page.locator(".jp-Notebook .jp-Cell")
    run_first_cell(page)
    page.keyboard.press("Control+Enter")  # the failing cell; the check below stays unrun
    failed = cells.nth(1)
    failed.locator(".jp-aici-fix-action").wait_for(state="visible")
    wait_idle(page)
    assert "KeyError" in failed.locator(".jp-OutputArea").inner_text()
    assert cells.first.locator(".jp-aici-fixbar").count() == 0  # only on cells that raised
    panel = page.locator(PANEL)

    # Explain: an answer in words; nothing runs, the cell is untouched.
    model.script(Reply("The frame's column is 'revenue', in lower case: 'Revenue' does not exist.",
                       require="Explain in a few sentences"))
    click(page, failed, "explain")
    assert panel.is_visible()  # opened by the action, in Notebook 7 too
    panel.locator(".jp-aici-model", has_text="in lower case").wait_for()  # rendered as it streamed
    assert "nothing was run" in panel.locator(".jp-aici-done").last.inner_text()

    # Fix, then Reject: the attempt ran (tried) and is rolled back.
    model.script(Reply(f"```python\n{FIXED}\n```", require="KeyError: 'Revenue'"))
    click(page, failed, "fix")
    offer = panel.locator(".jp-aici-fix").last
    offer.locator(".jp-aici-fix-accept").wait_for(state="visible")
    assert "Ran without error." in offer.inner_text()
    assert "attempt 1: ran without error" in panel.locator(".jp-aici-run").last.inner_text()  # in no cell
    assert offer.locator(".jp-aici-diff-del").inner_text() == "-df['Revenue'].sum()"
    assert offer.locator(".jp-aici-diff-add").inner_text() == "+df['revenue'].sum()"
    assert "4.0" in offer.locator(".jp-aici-fix-output").inner_text()
    picture(page, f"fix-{frontend}.png")
    before = page.locator(ENDS).count()
    offer.locator(".jp-aici-fix-reject").click()
    ended(page, before)
    assert "Rejected: the fix was rolled back" in panel.locator(".jp-aici-done").last.inner_text()
    assert source(failed) == FAILING and "KeyError" in failed.locator(".jp-OutputArea").inner_text()

    # Fix, then Accept: the cell holds the fix and the attempt's output; nothing runs again.
    model.script(Reply(f"```python\n{FIXED}\n```", require="KeyError: 'Revenue'"))  # asked anew: no replay
    failed.locator(".jp-InputPrompt").click()  # this time from the keyboard, on the active cell
    page.keyboard.press("Alt+Shift+F")
    offer = panel.locator(".jp-aici-fix").last
    offer.locator(".jp-aici-fix-accept").wait_for(state="visible")
    before = page.locator(ENDS).count()
    offer.locator(".jp-aici-fix-accept").click()
    ended(page, before)
    assert "Accepted" in panel.locator(".jp-aici-done").last.inner_text()
    assert len(model.requests) == 1 and model.misses == []  # the rejected fix was not replayed
    assert source(failed) == FIXED
    assert "4.0" in failed.locator(".jp-OutputArea").inner_text()
    assert failed.locator(".jp-aici-fixbar").count() == 0  # no error any more
    failed.scroll_into_view_if_needed()
    picture(page, f"fix-accepted-{frontend}.png")

    # The kernel: runs is 2 (the user's failed += and the fix's, once); Reject had undone its own.
    check = cells.nth(2)
    check.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    check.locator(".jp-OutputArea:has-text('runs =')").wait_for()
    assert check.locator(".jp-OutputArea").inner_text().strip() == "runs = 2"

    # The old source is recorded in the fixed cell's metadata, once saved.
    page.keyboard.press("Control+s")
    saved = saved_notebook(lab, name, lambda nb: nb["cells"][1].get("metadata", {}).get("jupyter_ai_ci_fix"))["cells"]
    record = saved[1]["metadata"]["jupyter_ai_ci_fix"]
    assert record["fixes"]["source"] == FAILING and "".join(saved[1]["source"]) == FIXED
