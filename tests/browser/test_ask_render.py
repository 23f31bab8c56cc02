"""What ``%%ask`` shows in the page, in JupyterLab and in Notebook 7: rendered Markdown (no
raw fences), each attempt a ``<details>`` section, one compact status line at the end, and a
question's answer in words."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest
from labutil import ARTIFACTS, make_notebook, open_notebook, wait_idle

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

DOCS_IMG = ARTIFACTS.parent / "docs" / "img"
SALES = ("import pandas as pd\n"
         "sales = pd.DataFrame({'region': ['north', 'south', 'north', 'east'],\n"
         "                      'revenue': [12.0, 20.0, 12.5, 4.0]})")
CODE = ("I'll add up the revenue of each region and print the largest.\n"
        "```python\ntotals = sales.groupby('region')['revenue'].sum()\nprint(totals.idxmax(), totals.max())\n```\n")
ANSWER = "**North** has the highest total revenue: `24.5`."
STATUS = re.compile(r"✓ done in 1 attempt · [\d.]+k? tokens · \d+\.\d s")


def run_cells(page: Any, count: int) -> None:
    """Run the notebook's cells one by one, as a user would (Shift+Enter), in Lab or Notebook 7."""
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")
    for _ in range(count):
        page.keyboard.press("Shift+Enter")
    wait_idle(page)


def picture(page: Any, name: str) -> None:
    """A screenshot for the test's artifacts; with JUPYTER_AI_CI_UPDATE_PICTURES=1 also the docs' copy."""
    page.screenshot(path=str(ARTIFACTS / name))
    if os.environ.get("JUPYTER_AI_CI_UPDATE_PICTURES"):
        page.screenshot(path=str(DOCS_IMG / name))


def answered(page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer, name: str, notebook7: bool,
             shot: str) -> None:
    model.script(CODE, Reply(ANSWER, require="north 24.5"))
    name = make_notebook(lab, name, ["%load_ext jupyter_ai_ci", SALES,
                                     "%%ask\nWhich region has the highest total revenue?"])
    open_notebook(page, lab, name, notebook7=notebook7)
    run_cells(page, 3)
    ask = page.locator(".jp-Notebook .jp-Cell").nth(2)
    page.wait_for_function("document.querySelectorAll('.aici-ask-answer').length == 1")
    wait_idle(page)
    output = ask.locator(".jp-OutputArea-output").first
    text = output.inner_text()
    assert STATUS.search(text), text
    assert "North has the highest total revenue: 24.5." in text  # rendered: no ** or ` left
    assert "```" not in output.inner_text() and "**" not in text
    answer = output.locator(".aici-ask-answer")
    assert answer.locator("strong").inner_text() == "North" and answer.locator("code").inner_text() == "24.5"
    # Folded: one <details> for the run, closed, its attempt sections inside.
    run = output.locator(".aici-ask-run > details")
    assert run.count() == 1 and run.get_attribute("open") is None
    assert "totals.idxmax()" not in text
    picture(page, shot)  # the compact end state: one line, the answer, the inserted cell
    run.locator("summary").first.click()
    attempt = run.locator(":scope > div > details").first
    assert attempt.locator("summary").first.inner_text().startswith("✓ attempt 1 · 1 cell")
    attempt.locator("summary").first.click()
    shown = attempt.inner_text()
    assert "```" not in shown and "totals.idxmax()" in shown and "north 24.5" in shown
    assert attempt.locator("pre code span[style]").count() > 3  # highlighted code
    assert len(model.requests) == 2 and model.misses == []


def test_question_is_answered_in_words_in_jupyterlab(page: Any, lab: dict[str, Any],
                                                     model: ScriptedOpenAIServer) -> None:
    answered(page, lab, model, "render_lab.ipynb", notebook7=False, shot="ask-answer-lab.png")


def test_question_is_answered_in_words_in_notebook7(page: Any, lab: dict[str, Any],
                                                    model: ScriptedOpenAIServer) -> None:
    pytest.importorskip("notebook", minversion="7")
    (lab["root"] / "nb7render").mkdir(exist_ok=True)  # its own replay records
    answered(page, lab, model, "nb7render/render_nb7.ipynb", notebook7=True, shot="ask-answer-notebook7.png")
