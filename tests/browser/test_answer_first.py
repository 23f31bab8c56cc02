"""The panel with two candidates: the answer in words is shown when the first result is, while
the model still writes the second candidate (on a CPU the long part of the check); the check's
verdict follows (core/loop.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from labutil import ARTIFACTS, goto, make_notebook, open_panel, wait_idle
from test_sidebar import ENDS, send

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

PANEL = "#jupyter-ai-ci-chat"


def panel_for(page: Any, lab: dict[str, Any], name: str, frontend: str, check: str) -> Any:
    """A new notebook ``name`` open in ``frontend``, its panel shown with the Check picker at ``check``."""
    if frontend == "notebook7":
        pytest.importorskip("notebook", minversion="7")
    goto(page, lab, make_notebook(lab, name, ["# prices"]), frontend)
    wait_idle(page)
    open_panel(page, frontend)
    panel = page.locator(PANEL)
    panel.locator(".jp-aici-candidates select").select_option(check)
    return panel


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_the_answer_is_shown_while_the_second_candidate_is_written(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer, frontend: str) -> None:
    second = threading.Event()  # the second candidate is held until the answer has been seen
    model.script(Reply("```python\ntotal = sum([1.5, 2.5, 4.0])\nprint('total', total)\n```"),
                 Reply("The total of the prices is 8.0."),
                 Reply("```python\nprint('total', float(1.5 + 2.5 + 4.0))\n```", until=second))
    try:
        panel = panel_for(page, lab, f"answer-first-{frontend}.ipynb", frontend, "2")
        send(page, "What is the total of the prices 1.5, 2.5 and 4.0?")
        panel.locator(".jp-aici-model", has_text="The total of the prices is 8.0.").wait_for(timeout=60_000)
        panel.locator(".jp-aici-notice", has_text="candidate 1 of 2: total 8.0 — checking…").wait_for(timeout=30_000)
        assert page.locator(ENDS).count() == 0 and len(model.requests) == 3  # the check goes on
        page.screenshot(path=str(ARTIFACTS / f"panel-answer-before-the-check-{frontend}.png"))
    finally:
        second.set()
    page.wait_for_function(f"document.querySelectorAll({ENDS!r}).length > 0", timeout=60_000)
    done = page.locator(ENDS).last.inner_text()
    assert "2 of 2 candidates agree" in done, done
    assert panel.locator(".jp-aici-model", has_text="The total of the prices is 8.0.").count() == 1
    page.screenshot(path=str(ARTIFACTS / f"panel-answer-then-checked-{frontend}.png"))


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_an_answer_the_output_states_is_shown_with_no_model_call(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer, frontend: str) -> None:
    # The request gives its answer's form, @name[value]; the output fills it in: those lines are the
    # answer (core/answer.py), shown where a reply in words would be, with no second call.
    model.script(Reply("```python\ntotal = sum([1.5, 2.5, 4.0])\nprint(f'@total[{total}]')\n```"))
    panel = panel_for(page, lab, f"stated-{frontend}.ipynb", frontend, "1")
    send(page, "What is the total of the prices 1.5, 2.5 and 4.0? Answer format: @total[total_value]")
    page.wait_for_function(f"document.querySelectorAll({ENDS!r}).length > 0", timeout=60_000)
    assert "Done in 1 attempt" in page.locator(ENDS).last.inner_text()
    assert panel.locator(".jp-aici-model", has_text="@total[8.0]").count() == 1 and len(model.requests) == 1
    page.screenshot(path=str(ARTIFACTS / f"panel-answer-stated-{frontend}.png"))
