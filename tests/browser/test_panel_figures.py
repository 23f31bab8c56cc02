"""The panel shows the figure the model was shown (#40): with the attempt that drew it, folded,
the picture a vision model was sent (the same PNG) and the words the model read; in JupyterLab and
Notebook 7, and again after a reload (the failed attempt's cell is gone by then: the words stay)."""

from __future__ import annotations

from typing import Any

import pytest
from labutil import make_notebook, open_notebook, wait_idle
from test_chat_panel import picture
from test_sidebar import ask, prepare

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer
from jupyter_ai_ci.testing.replies import image_parts

PANEL = "#jupyter-ai-ci-chat"
BARS = ("import matplotlib.pyplot as plt\n"
        "sales = {{'jan': 4, 'feb': 9, 'mar': 2}}\n"
        "months = sorted(sales, key=sales.get, reverse={down})\n"
        "plt.bar(months, [sales[m] for m in months])\n"
        "plt.title('Sales by month')\n"
        "plt.show()")
MISMATCH = "the bars ascend from left to right, but the request asked for largest first"
REQUEST = "bar chart of sales by month, largest first"
TOLD = "3 bars left to right: mar=2, jan=4, feb=9; ascending"


def script(model: ScriptedOpenAIServer) -> None:
    """An ascending chart first (the chart check fails it), then the fix the mismatch asks for."""
    model.script(Reply(f"```python\n{BARS.format(down=False)}\n```"),
                 Reply(f"Sorted now:\n```python\n{BARS.format(down=True)}\n```", require=MISMATCH))


def attempts(page: Any) -> tuple[Any, Any]:
    panel = page.locator(PANEL)
    assert "Done in 2 attempts" in panel.locator(".jp-aici-done").inner_text(), panel.inner_text()
    return panel.locator(".jp-aici-run-error"), panel.locator(".jp-aici-run-ok")


def unfold(failed: Any) -> Any:
    shown = failed.locator("details.jp-aici-shown")
    assert shown.count() == 1
    assert shown.get_attribute("open") is None  # folded, like the panel's other details
    shown.locator("summary").click()
    assert shown.get_attribute("open") is not None
    assert "What the model was told about the figure:" in shown.inner_text()
    assert TOLD in shown.locator(".jp-aici-shown-text").inner_text()
    return shown


def test_the_failed_attempts_figure_and_its_words_as_a_vision_model_was_shown_them(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    script(model)
    prepare(page, lab, "shown-figure.ipynb")
    page.locator(f"{PANEL} .jp-aici-picker select").select_option("scripted-vision")
    ask(page, REQUEST)
    failed, ok = attempts(page)
    assert model.misses == [] and len(model.requests) == 2
    (sent,) = image_parts(model.requests[1])  # the fix request carried the failed chart's picture

    shown = unfold(failed)
    assert "the figure the model was shown" in shown.locator("summary").inner_text()
    # The same picture: kept from the cell when the fix was asked for (the fix replaced the cell).
    assert shown.locator("img.jp-aici-shown-picture").get_attribute("src") == sent
    assert "cell no longer in the notebook" in failed.inner_text()
    assert page.locator(".jp-Notebook .jp-Cell").count() == 2
    # The attempt that worked drew a chart no request followed: nothing is said the model saw.
    assert ok.locator(".jp-aici-shown").count() == 0 and ok.locator(".jp-aici-figure img").count() == 1
    picture(page, "panel-figure-shown.png")

    # Reloaded: the words come back with the attempt; the picture's cell is gone, and it says so.
    open_notebook(page, lab, "shown-figure.ipynb")
    page.locator(".jp-SideBar [data-id='jupyter-ai-ci-chat']").click()
    failed, _ = attempts(page)
    shown = unfold(failed)
    assert shown.locator("img").count() == 0
    assert "the model was sent its picture (no longer in the notebook)" in shown.inner_text()


def test_notebook7_shows_the_words_a_text_model_read(page: Any, lab: dict[str, Any],
                                                     model: ScriptedOpenAIServer) -> None:
    pytest.importorskip("notebook", minversion="7")
    script(model)
    (lab["root"] / "nb7figures").mkdir(exist_ok=True)
    name = make_notebook(lab, "nb7figures/told.ipynb", ["x = 5"])
    open_notebook(page, lab, name, notebook7=True)
    page.locator(".lm-MenuBar-itemLabel", has_text="View").click()
    page.locator(".lm-Menu-itemLabel", has_text="Right Sidebar").hover()
    page.locator(".lm-Menu-itemLabel", has_text="Show AI code interpreter").click()
    page.locator(f"{PANEL} .jp-aici-input").wait_for(state="visible")
    ask(page, REQUEST)
    wait_idle(page)
    failed, ok = attempts(page)
    assert model.misses == [] and image_parts(model.requests[1]) == []  # a text model: words only

    shown = unfold(failed)
    assert "the figure the model was told about" in shown.locator("summary").inner_text()
    assert shown.locator("img").count() == 0 and "picture" not in shown.inner_text()
    assert ok.locator(".jp-aici-shown").count() == 0
    picture(page, "panel-figure-told-nb7.png")
