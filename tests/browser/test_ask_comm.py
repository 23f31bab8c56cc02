"""``%%ask`` in JupyterLab inserts real cells, with outputs, through the comm."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from labutil import ARTIFACTS, make_notebook, open_notebook, saved_notebook, wait_idle

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

TWO_BLOCKS = """Two steps:
```python
a = 6
print("a is", a)
```
```python
b = a * 7
b
```
"""


def run_all(page: Any) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def test_ask_inserts_several_cells_with_outputs(page: Any, lab: dict[str, Any],
                                                 model: ScriptedOpenAIServer) -> None:
    model.script(Reply(TWO_BLOCKS))
    name = make_notebook(lab, "ask_comm.ipynb", ["%load_ext jupyter_ai_ci",
                                                 "%%ask\nset a to 6 and b to a times 7"])
    open_notebook(page, lab, name)
    # Run All: the extension's announcement must already be in the kernel,
    # since a reply to anything would queue behind these cells.
    run_all(page)
    cells = page.locator(".jp-Notebook .jp-Cell")
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length >= 4")
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "ask-comm.png"))

    assert cells.count() == 4
    third, fourth = cells.nth(2), cells.nth(3)
    assert 'a = 6' in third.locator(".jp-InputArea-editor").inner_text()
    assert "a is 6" in third.locator(".jp-OutputArea").inner_text()
    assert "b = a * 7" in fourth.locator(".jp-InputArea-editor").inner_text()
    assert "42" in fourth.locator(".jp-OutputArea").inner_text()
    assert "2 new cells below" in cells.nth(1).locator(".jp-OutputArea").inner_text()
    assert len(model.requests) == 1

    # Saved to disk: the new cells name the %%ask cell they came from.
    page.keyboard.press("Control+s")
    nb = saved_notebook(lab, name, lambda nb: len(nb["cells"]) >= 4
                        and "jupyter_ai_ci" in nb["cells"][2].get("metadata", {}))
    ask_id = nb["cells"][1]["id"]
    meta = nb["cells"][2]["metadata"]["jupyter_ai_ci"]
    assert meta["ask_cell_id"] == ask_id
    assert meta["model"] == "scripted-model" and meta["attempts"] == 1
    assert nb["cells"][3]["metadata"]["jupyter_ai_ci"]["ask_cell_id"] == ask_id


STAMP = "```python\nimport time\nstamp = time.time_ns()\nprint('stamp', stamp)\n```\n"


def wait_new_stamp(page: Any, old: str) -> None:
    """Until the third cell shows a stamp other than ``old``. Its old output goes first and the
    new one comes with the run, and the toolbar may read idle between the two (a restart), so
    waiting for the old one to go, then for idle, read an empty output on a loaded machine."""
    page.wait_for_function(
        "(() => { const out = document.querySelectorAll('.jp-Notebook .jp-Cell')[2]"
        "?.querySelector('.jp-OutputArea')?.innerText ?? '';"
        f" return out.startsWith('stamp ') && !out.includes({old!r}); }})()")


def test_rerun_replaces_its_cells_and_a_restarted_kernel_is_linked_again(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    model.script(STAMP, STAMP, STAMP)
    # --regenerate: every run asks the model, whatever the replay records say.
    name = make_notebook(lab, "restart.ipynb", ["%load_ext jupyter_ai_ci",
                                                "%%ask --regenerate\nstamp the time"])
    open_notebook(page, lab, name)
    run_all(page)
    cells = page.locator(".jp-Notebook .jp-Cell")
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length == 3")
    first = cells.nth(2).locator(".jp-OutputArea").inner_text()
    assert first.startswith("stamp ")

    # Re-running the %%ask cell replaces the cell it inserted, not piles up.
    cells.nth(1).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    wait_new_stamp(page, first)
    wait_idle(page)
    assert cells.count() == 3
    second = cells.nth(2).locator(".jp-OutputArea").inner_text()
    assert second.startswith("stamp ") and second != first
    # It ran in the %%ask cell's execution, and shows its number (it showed "[ ]:", as if never run).
    prompt = cells.nth(1).locator(".jp-InputPrompt").inner_text().strip()
    assert re.fullmatch(r"\[\d+\]:", prompt) and cells.nth(2).locator(".jp-InputPrompt").inner_text().strip() == prompt
    assert len(model.requests) == 2

    # "Restart Kernel and Run All": the new kernel process is marked before the
    # cells run, so a real cell with outputs is inserted (set_next_input could not).
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Kernel$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Restart Kernel and Run All Cells")).click()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    wait_new_stamp(page, second)
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "ask-restart.png"))
    assert cells.count() == 3
    third = cells.nth(2).locator(".jp-OutputArea").inner_text()
    assert third.startswith("stamp ") and third not in (first, second)
    assert "1 new cell below" in cells.nth(1).locator(".jp-OutputArea").inner_text()
    assert len(model.requests) == 3 and model.misses == []


SALES = ("import pandas as pd\n"
         "sales = pd.DataFrame({'region': ['north', 'south', 'north', 'east'],\n"
         "                      'revenue': [12.0, 20.0, 12.5, 4.0]})")
MISSPELT = ("I'll group the revenue by region.\n"
            "```python\ntotals = sales.groupby('regoin')['revenue'].sum()\ntotals\n```\n")
FIXED = ("The column is `region`, not `regoin`.\n"
         "```python\ntotals = sales.groupby('region')['revenue'].sum()\ntotals\n```\n")
# The README's picture: JUPYTER_AI_CI_UPDATE_PICTURES=1 writes it into docs/img/.
PICTURE = ARTIFACTS.parent / "docs" / "img" / "ask-fixes-keyerror.png"


def test_ask_fixes_a_keyerror_from_its_traceback(page: Any, lab: dict[str, Any],
                                                 model: ScriptedOpenAIServer) -> None:
    model.script(MISSPELT, FIXED)
    name = make_notebook(lab, "keyerror.ipynb", ["%load_ext jupyter_ai_ci", SALES,
                                                 "%%ask\ntotal revenue by region"])
    open_notebook(page, lab, name)
    run_all(page)
    cells = page.locator(".jp-Notebook .jp-Cell")
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length >= 4")
    wait_idle(page)
    output = cells.nth(2).locator(".jp-OutputArea-output").first
    shown = output.inner_text()
    # One compact line; the attempts are folded under it.
    assert re.search(r"✓ done in 2 attempts · [\d.]+k? tokens · \d+\.\d s · 1 new cell below", shown), shown
    assert "KeyError" not in shown and "```" not in shown
    inserted = cells.nth(3)
    assert "groupby('region')" in inserted.locator(".jp-InputArea-editor").inner_text()
    assert "24.5" in inserted.locator(".jp-OutputArea").inner_text()  # north: 12.0 + 12.5
    # The output shows once: in the inserted cell, not under the %%ask cell too.
    assert "24.5" not in shown
    # The fix request carried the traceback of the failed attempt.
    assert "KeyError" in json.dumps(model.requests[1]["messages"][-1])
    # Unfolded: the failed attempt, its highlighted code, its traceback, what went back to the model.
    output.locator(".aici-ask-run > details > summary").click()
    sections = output.locator(".aici-ask-run > details > div > details")
    failed = sections.first
    assert failed.locator(":scope > summary").inner_text() == "✗ attempt 1 · KeyError: 'regoin' (line 1)"
    failed.locator(":scope > summary").click()
    opened = failed.inner_text()
    assert "groupby('regoin')" in opened and "sent back to the model" in opened
    assert "traceback · KeyError: 'regoin' (line 1)" in opened and "Traceback (most recent call last)" not in opened
    assert "```" not in opened and failed.locator("pre code span[style]").count() > 3
    assert sections.nth(1).locator("summary").first.inner_text().startswith("✓ attempt 2 · 1 cell")
    page.screenshot(path=str(ARTIFACTS / "ask-fixes-keyerror.png"))
    if os.environ.get("JUPYTER_AI_CI_UPDATE_PICTURES"):
        PICTURE.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(PICTURE))
