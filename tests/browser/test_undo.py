"""Undo on a request's status line, in JupyterLab and in Notebook 7 (#36).

A ``%%ask`` request that worked sets a variable and appends to a file; its generated cell is
inserted below.  The status line carries an Undo button: a click takes the kernel and the file
back to before the request, takes the generated cell out, and the cell says what was undone.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from labutil import ARTIFACTS, make_notebook, open_notebook, open_panel, run_first_cell, wait_idle
from test_chat_panel import picture
from test_sidebar import ask

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

ASK = "%%ask --no-answer\nWhat is the total? Note it in log.txt"
CODE = "total = 42\nopen('log.txt', 'a').write(' request')\ntotal"


def source(cell: Any) -> str:
    return str(cell.locator(".jp-InputArea-editor .cm-content").inner_text())


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_undo_takes_the_request_back_and_its_cell_out(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer, frontend: str) -> None:
    if frontend == "notebook7":
        pytest.importorskip("notebook", minversion="7")
    folder = lab["root"] / f"undo-{frontend}"
    folder.mkdir(exist_ok=True)
    (folder / "log.txt").write_text("before")
    model.script(Reply(f"```python\n{CODE}\n```"))
    name = make_notebook(lab, f"undo-{frontend}/undo.ipynb", [
        "%load_ext jupyter_ai_ci", ASK, "print(globals().get('total'), '|', open('log.txt').read())"])
    open_notebook(page, lab, name, notebook7=frontend == "notebook7")
    cells = page.locator(".jp-Notebook .jp-Cell")
    run_first_cell(page)
    page.keyboard.press("Shift+Enter")  # the %%ask cell
    ask = cells.nth(1)
    bar = ask.locator(".jp-aici-undobar")
    bar.wait_for(state="visible", timeout=90_000)
    wait_idle(page)
    assert "✓ done" in ask.locator(".jp-OutputArea").inner_text()
    assert cells.count() == 4 and source(cells.nth(2)).startswith("total = 42")
    assert (folder / "log.txt").read_text() == "before request"
    picture(page, f"undo-before-{frontend}.png")

    bar.locator("button", has_text="Undo").click()
    ask.locator(".jp-OutputArea:has-text('↶ undid')").wait_for(timeout=60_000)
    wait_idle(page)
    said = ask.locator(".jp-OutputArea").inner_text()
    assert "restored log.txt" in said and "removed total" in said and "1 cell taken out" in said
    assert "its replay record dropped (Run All asks the model again)" in said
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length === 3", timeout=30_000)
    assert source(cells.nth(1)).startswith("%%ask --no-answer")  # the request stays, to run again
    assert ask.locator(".jp-aici-undobar").count() == 0  # undone: nothing more to undo there
    assert (folder / "log.txt").read_text() == "before"
    check = cells.nth(2)
    check.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    check.locator(".jp-OutputArea:has-text('|')").wait_for()
    assert re.sub(r"\s+", " ", check.locator(".jp-OutputArea").inner_text()).strip() == "None | before"
    picture(page, f"undo-after-{frontend}.png")
    assert len(model.requests) == 1 and model.misses == []


PANEL = "#jupyter-ai-ci-chat"


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_the_panels_undo_takes_the_request_back_and_its_cell_out(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer, frontend: str) -> None:
    if frontend == "notebook7":
        pytest.importorskip("notebook", minversion="7")
    folder = lab["root"] / f"panel-undo-{frontend}"
    folder.mkdir(exist_ok=True)
    (folder / "log.txt").write_text("before")
    model.script(Reply(f"```python\n{CODE}\n```"))
    name = make_notebook(lab, f"panel-undo-{frontend}/undo.ipynb", ["x = 5"])
    open_notebook(page, lab, name, notebook7=frontend == "notebook7")
    cells = page.locator(".jp-Notebook .jp-Cell")
    cells.first.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    page.wait_for_selector(".jp-Notebook .jp-Cell >> nth=0 >> .jp-InputPrompt:has-text('[1]')")
    wait_idle(page)
    open_panel(page, frontend)
    ask(page, "set total to 42 and note it in log.txt")
    panel = page.locator(PANEL)
    assert panel.locator(".jp-aici-error").count() == 0, panel.inner_text()
    assert "Done in 1 attempt" in panel.locator(".jp-aici-done").inner_text()
    assert cells.count() == 2 and source(cells.nth(1)).startswith("total = 42")
    assert (folder / "log.txt").read_text() == "before request"
    button = panel.locator(".jp-aici-undo")
    assert button.count() == 1 and "files go back to before it" in str(button.get_attribute("title"))
    page.screenshot(path=str(ARTIFACTS / f"undo-panel-before-{frontend}.png"))

    button.click()
    said = panel.locator(".jp-aici-status-undone")
    said.wait_for(timeout=60_000)
    wait_idle(page)
    line = said.inner_text()
    assert line.startswith("↶ undid “set total to 42 and note it in log.txt”: restored"), line
    assert "log.txt" in line and "removed total" in line, line
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length === 1", timeout=30_000)
    assert source(cells.first) == "x = 5"  # the person's own cell stays
    assert panel.locator(".jp-aici-undo").count() == 0  # undone: nothing more to undo there
    assert (folder / "log.txt").read_text() == "before"
    picture(page, f"undo-panel-{frontend}.png")
    # The kernel: the request's variable is gone, the person's is there.
    cells.first.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+a")
    page.keyboard.type("print(globals().get('total'), x)")
    page.keyboard.press("Control+Enter")
    cells.first.locator(".jp-OutputArea:has-text('None')").wait_for(timeout=30_000)
    assert cells.first.locator(".jp-OutputArea").inner_text().strip() == "None 5"
    assert len(model.requests) == 1 and model.misses == []
