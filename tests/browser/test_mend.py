"""An inplace change pandas made on a copy, mended by the run with no model call (core/mends.py), as
a user sees it in JupyterLab and Notebook 7: through the panel and through ``%%ask``, the notebook
ends with one cell holding the assignment that ran, and one line says what was changed and why."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from labutil import ARTIFACTS, goto, make_notebook, run_first_cell, wait_idle
from test_answer_first import panel_for
from test_candidates import source
from test_sidebar import ENDS, send

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.skipif(int(pd.__version__.split(".")[0]) < 3,
                                reason="pandas 3 (Copy-on-Write) is what warns ChainedAssignmentError")

CODE = ("import pandas as pd\nprices = pd.DataFrame({'price': [1.5, None, 4.0]})\n"
        "prices['price'].fillna(0, inplace=True)\nprint('missing', prices['price'].isna().sum())")
MENDED = "prices['price'] = prices['price'].fillna(0)"
SAID = f"wrote `{MENDED}` for the line that changed a copy and running it again (no model call)"


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_the_panel_runs_the_assignment_in_the_cell_that_failed(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer, frontend: str) -> None:
    model.script(Reply(f"```python\n{CODE}\n```"))
    panel = panel_for(page, lab, f"mend-{frontend}.ipynb", frontend, "1")
    send(page, "Fill the missing prices with 0")
    page.wait_for_function(f"document.querySelectorAll({ENDS!r}).length > 0", timeout=60_000)
    wait_idle(page)
    assert "Done in 2 attempts" in page.locator(ENDS).last.inner_text() and len(model.requests) == 1
    assert panel.locator(".jp-aici-notice", has_text=SAID).count() == 1
    # The first attempt's cell ran, but the attempt failed: not a tick.
    assert panel.locator(".jp-aici-run", has_text="cell ran, but failed the check").count() == 1
    cells = page.locator(".jp-Notebook .jp-Cell")
    # The failed attempt's cell was replaced: one generated cell, the line as it ran, no warning.
    assert cells.count() == 2, [source(cells.nth(i)) for i in range(cells.count())]
    assert MENDED in source(cells.nth(1)) and "inplace=True" not in source(cells.nth(1))
    output = cells.nth(1).locator(".jp-OutputArea").inner_text()
    assert "missing 0" in output and "ChainedAssignmentError" not in output, output
    page.screenshot(path=str(ARTIFACTS / f"panel-mend-{frontend}.png"))


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_the_magic_says_the_mend_and_inserts_the_code_as_it_ran(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer, frontend: str) -> None:
    if frontend == "notebook7":
        pytest.importorskip("notebook", minversion="7")
    model.script(Reply(f"```python\n{CODE}\n```"))
    (lab["root"] / frontend).mkdir(exist_ok=True)  # a folder each: its own replay records
    name = make_notebook(lab, f"{frontend}/mend-magic.ipynb",
                         ["%load_ext jupyter_ai_ci", "%%ask --no-answer\nFill the missing prices with 0"])
    goto(page, lab, name, frontend)
    wait_idle(page)
    cells = page.locator(".jp-Notebook .jp-Cell")
    run_first_cell(page)
    cells.first.locator(".jp-InputPrompt", has_text="[1]").wait_for(timeout=60_000)  # the kernel is up
    page.keyboard.press("Shift+Enter")  # the %%ask cell
    cells.nth(1).locator(".jp-OutputArea", has_text="done in").wait_for(timeout=90_000)
    wait_idle(page)
    run = cells.nth(1).locator(".aici-ask-run")
    assert run.locator("summary").first.inner_text().startswith("✓ done in 2 attempts")
    run.locator("summary").first.click()  # the run's sections, as a user unfolds them
    attempt = run.locator("details details").first
    assert attempt.locator("summary").first.inner_text().startswith("✓ attempt 2 · 1 cell")  # once, as it ran
    attempt.locator("summary").first.click()
    shown = attempt.inner_text()
    assert MENDED in shown and "inplace=True" not in shown.split("attempt 1 undone")[0], shown  # the code it ran
    assert SAID in shown, shown
    assert MENDED in source(cells.nth(2)) and "inplace=True" not in source(cells.nth(2))
    assert len(model.requests) == 1
    page.screenshot(path=str(ARTIFACTS / f"magic-mend-{frontend}.png"))
