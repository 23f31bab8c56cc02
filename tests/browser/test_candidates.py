"""Candidates that disagree, and "use this one", in JupyterLab and in Notebook 7 (#28).

``%%ask --candidates 3`` gets three results (76, 36, 12): the cell says it is not sure
(never a plain ✓) and shows a "Use …" button for each other result.  A click runs the
cell again as ``%%ask --use 2``: candidate 2's code is applied once, with no model call,
its generated cell takes the place of the applied one's, and the cell says who chose.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from labutil import make_notebook, open_notebook, run_first_cell, saved_notebook, wait_idle
from test_chat_panel import picture

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

ASK = "%%ask --candidates 3 --no-answer\nHow many answers in survey say yes?"


def py(n: int) -> Reply:
    return Reply(f"```python\nn = {n}\nruns.append(n)\nn\n```")


def source(cell: Any) -> str:
    return str(cell.locator(".jp-InputArea-editor .cm-content").inner_text())


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_disagreement_shows_the_other_results_and_use_this_one_applies_one(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer, frontend: str) -> None:
    if frontend == "notebook7":
        pytest.importorskip("notebook", minversion="7")
    (lab["root"] / frontend).mkdir(exist_ok=True)
    model.script(py(76), py(36), py(12))
    name = make_notebook(lab, f"{frontend}/vote.ipynb", ["%load_ext jupyter_ai_ci\nruns = []", ASK,
                                                         "print('runs =', runs)"])
    open_notebook(page, lab, name, notebook7=frontend == "notebook7")
    cells = page.locator(".jp-Notebook .jp-Cell")
    run_first_cell(page)
    page.keyboard.press("Shift+Enter")  # the %%ask cell
    ask = cells.nth(1)
    bar = ask.locator(".jp-aici-usebar")
    bar.wait_for(state="visible", timeout=90_000)
    wait_idle(page)
    status = ask.locator(".jp-OutputArea").inner_text()
    assert "candidates disagree: 76 (1 of 3) vs 36 vs 12" in status and "✓" not in status.splitlines()[0]
    assert [b.inner_text() for b in bar.locator("button").all()] == ["Use 36", "Use 12"]
    assert bar.locator(".jp-aici-uselabel").inner_text() == "Not sure — other results:"
    assert ask.locator(".jp-aici-fixbar").count() == 0
    generated = cells.nth(2)
    assert source(generated).startswith("n = 76")
    picture(page, f"candidates-{frontend}.png")

    # Use 36: no model call; the generated cell now holds candidate 2's code, run once.
    bar.locator("button", has_text="Use 36").click()
    page.wait_for_function(
        "[...document.querySelectorAll('.jp-Notebook .jp-Cell')].some(c => c.innerText.includes('chosen by you'))",
        timeout=60_000)
    wait_idle(page)
    assert len(model.requests) == 3 and model.misses == []
    status = ask.locator(".jp-OutputArea").inner_text()
    assert "✓ done · candidate 2 applied, chosen by you" in status
    assert [b.inner_text() for b in ask.locator(".jp-aici-usebar button").all()] == ["Use 76", "Use 12"]
    assert ask.locator(".jp-aici-uselabel").inner_text() == "Other results:"  # chosen: no longer a doubt
    assert source(ask).startswith("%%ask --candidates 3")  # the cell's own source is untouched
    assert cells.count() == 4  # replaced, not added
    assert source(cells.nth(2)).startswith("n = 36")
    assert re.search(r"\b36\b", cells.nth(2).locator(".jp-OutputArea").inner_text())
    picture(page, f"candidates-used-{frontend}.png")

    # The kernel ran candidate 2's code once on top of the applied one (76 was committed).
    check = cells.nth(3)
    check.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    check.locator(".jp-OutputArea:has-text('runs =')").wait_for()
    assert check.locator(".jp-OutputArea").inner_text().strip() == "runs = [76, 36]"

    # Saved: the generated cell is candidate 2's, linked to its %%ask cell.
    page.keyboard.press("Control+s")
    nb = saved_notebook(lab, name, lambda nb: len(nb["cells"]) > 2
                        and "".join(nb["cells"][2]["source"]).startswith("n = 36"))
    assert nb["cells"][2]["metadata"]["jupyter_ai_ci"]["ask_cell_id"] == nb["cells"][1]["id"]


def test_the_panel_checks_with_candidates_and_use_this_one_replaces_the_cells(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    from test_sidebar import ask as ask_panel
    from test_sidebar import prepare

    prepare(page, lab, "panel-vote.ipynb")
    panel = page.locator("#jupyter-ai-ci-chat")
    check = panel.locator(".jp-aici-candidates select")
    # The server's default, 'auto': two candidates for a question about data on the local model (this
    # scripted endpoint is not one, so one answer unless another is picked).
    assert check.input_value() == "auto"
    assert check.locator("option:checked").inner_text() == "auto" and "Auto: two for a question about data" in str(
        check.get_attribute("title"))
    picture(page, "candidates-panel-default.png")
    check.select_option("3")
    model.script(*(Reply(f"```python\nn = {n}\nn\n```") for n in (76, 36, 12)))
    ask_panel(page, "count the answers in survey that say yes")
    assert [r.get("temperature", 0) for r in model.requests] == [0, 0.7, 0.7]
    done = panel.locator(".jp-aici-done").last
    assert "Candidates disagree: 76 (1 of 3) vs 36 vs 12" in done.inner_text()
    notices = panel.locator(".jp-aici-notice").all_inner_texts()  # the first is no longer "checking…"
    assert "candidate 1 of 3: 76" in notices and not any(n.endswith("checking…") for n in notices), notices
    assert "jp-aici-unsure" in str(done.get_attribute("class"))  # a warning, not the ✓'s green
    others = done.locator(".jp-aici-other")
    assert others.count() == 2 and "other result: 36 (1 candidate)" in others.first.inner_text()
    cells = page.locator(".jp-Notebook .jp-Cell")
    assert cells.count() == 2 and source(cells.nth(1)).startswith("n = 76")  # one cell: the applied one
    others.first.locator("summary").click()  # the code, one unfold away
    assert "n = 36" in others.first.locator(".jp-aici-codeblock").inner_text()
    picture(page, "candidates-panel.png")

    # Use this one: no model call; candidate 2's cell takes the applied one's place.
    before = page.locator("#jupyter-ai-ci-chat .jp-aici-done").count()
    others.first.locator(".jp-aici-use").click()
    page.wait_for_function(f"document.querySelectorAll('#jupyter-ai-ci-chat .jp-aici-done').length > {before}",
                           timeout=60_000)
    wait_idle(page)
    assert len(model.requests) == 3 and model.misses == []
    said = panel.locator(".jp-aici-done").last.inner_text()
    assert "Done · candidate 2 applied, chosen by you · no model call." in said
    assert cells.count() == 2 and source(cells.nth(1)).startswith("n = 36")
    picture(page, "candidates-panel-used.png")

    # Reloaded, the panel still offers the other results (the server keeps the vote).
    page.keyboard.press("Control+s")
    page.wait_for_timeout(500)
    page.reload()
    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=60_000)
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    wait_idle(page)
    page.locator(".jp-SideBar [data-id='jupyter-ai-ci-chat']").click()
    last = panel.locator(".jp-aici-done").last
    last.wait_for()
    assert [o.locator("summary b").inner_text() for o in last.locator(".jp-aici-other").all()] == ["76", "12"]
    assert page.locator(".jp-aici-candidates select").input_value() == "3"  # the pick is kept too


def test_a_chosen_candidate_that_fails_in_the_panel_leaves_the_applied_cells_as_they_were(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    """Candidate 2 ran cleanly in the vote (on the state the request found) and fails when
    chosen (on top of the applied candidate): rolled back, its cell leaves, the applied one stays."""
    from test_sidebar import ask as ask_panel
    from test_sidebar import prepare

    prepare(page, lab, "panel-vote-fails.ipynb")
    panel = page.locator("#jupyter-ai-ci-chat")
    panel.locator(".jp-aici-candidates select").select_option("3")
    fragile = "assert 'n' not in globals(), 'n is already set'\nn = 36\nn"
    model.script(Reply("```python\nn = 76\nn\n```"), Reply(f"```python\n{fragile}\n```"),
                 Reply("```python\nn = 12\nn\n```"))
    ask_panel(page, "count the answers in survey that say yes")
    done = panel.locator(".jp-aici-done").last
    assert "Candidates disagree: 76 (1 of 3) vs 36 vs 12" in done.inner_text()
    cells = page.locator(".jp-Notebook .jp-Cell")
    assert cells.count() == 2 and source(cells.nth(1)).startswith("n = 76")

    before = page.locator("#jupyter-ai-ci-chat .jp-aici-done").count()
    done.locator(".jp-aici-other").first.locator(".jp-aici-use").click()
    page.wait_for_function(f"document.querySelectorAll('#jupyter-ai-ci-chat .jp-aici-done').length > {before}",
                           timeout=60_000)
    wait_idle(page)
    said = panel.locator(".jp-aici-done").last.inner_text()
    assert "Candidate 2 (36) failed when applied: AssertionError: n is already set" in said
    assert "that one's cells stay" in said and "Rephrase" not in said
    assert len(model.requests) == 3 and model.misses == []  # no model call, no fix asked
    assert cells.count() == 2 and source(cells.nth(1)).startswith("n = 76")  # the applied cell, alone
    picture(page, "candidates-panel-use-failed.png")
    # The vote stands: 76 applied, the others offered again; Use 12 replaces the applied cell.
    failed = panel.locator(".jp-aici-done").nth(before)
    assert [o.locator("summary b").inner_text() for o in failed.locator(".jp-aici-other").all()] == ["36", "12"]
    failed.locator(".jp-aici-other").nth(1).locator(".jp-aici-use").click()
    page.wait_for_function(f"document.querySelectorAll('#jupyter-ai-ci-chat .jp-aici-done').length > {before + 1}",
                           timeout=60_000)
    wait_idle(page)
    assert "candidate 3 applied, chosen by you" in panel.locator(".jp-aici-done").last.inner_text()
    assert cells.count() == 2 and source(cells.nth(1)).startswith("n = 12") and len(model.requests) == 3
