"""Notebook 7 loads the same prebuilt labextension: the chat panel is in the right
sidebar there, hidden until the user opens it from View > Right Sidebar."""

from __future__ import annotations

from typing import Any

import pytest
from labutil import ARTIFACTS, make_notebook, open_notebook, wait_idle
from test_chat_panel import picture
from test_provenance import save, saved_cells
from test_sidebar import ask

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

pytest.importorskip("notebook", minversion="7")


def test_chat_panel_in_notebook7(page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    model.script(Reply("Squaring it:\n```python\nprint('x squared is', x ** 2)\n```", tokens=(300, 20)))
    (lab["root"] / "notebook7").mkdir(exist_ok=True)  # its own replay records
    name = make_notebook(lab, "notebook7/nb7.ipynb", ["x = 5"])
    open_notebook(page, lab, name, notebook7=True)
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    page.wait_for_selector(".jp-Notebook .jp-Cell >> nth=0 >> .jp-InputPrompt:has-text('[1]')")
    wait_idle(page)

    panel = page.locator("#jupyter-ai-ci-chat")
    assert not panel.is_visible(), "the right sidebar is hidden in Notebook 7 until opened"
    # How a user opens it: View > Right Sidebar > Show AI code interpreter.
    page.locator(".lm-MenuBar-itemLabel", has_text="View").click()
    page.locator(".lm-Menu-itemLabel", has_text="Right Sidebar").hover()
    page.locator(".lm-Menu-itemLabel", has_text="Show AI code interpreter").click()
    panel.locator(".jp-aici-input").wait_for(state="visible")
    assert "nb7.ipynb" in panel.locator(".jp-aici-header").inner_text()

    ask(page, "square x")
    page.screenshot(path=str(ARTIFACTS / "notebook7-sidebar.png"))
    picture(page, "panel-nb7.png")
    # The panel's parts work here too: the picker lists the offered models, code is rendered.
    options = panel.locator(".jp-aici-picker option")
    assert [options.nth(i).get_attribute("value") for i in range(options.count())] == [
        "scripted-model", "scripted-large", "scripted-vision"]
    check = panel.locator(".jp-aici-candidates select option")  # the Check picker, the server's 'auto' chosen
    assert [check.nth(i).get_attribute("value") for i in range(check.count())] == ["auto", "1", "2", "3", "5"]
    assert panel.locator(".jp-aici-candidates select").input_value() == "auto"
    assert panel.locator(".jp-aici-model .jp-aici-codewrap .jp-aici-copy").count() == 1
    assert "```" not in panel.evaluate("el => el.textContent")
    assert panel.locator(".jp-aici-error").count() == 0, panel.inner_text()
    assert "Done in 1 attempt" in panel.locator(".jp-aici-done").inner_text()
    assert panel.locator(".jp-aici-usage").inner_text() == "session: 1 model call · 320 tokens"
    cells = page.locator(".jp-Notebook .jp-Cell")
    assert cells.count() == 2
    assert "x squared is 25" in cells.nth(1).locator(".jp-OutputArea").inner_text()

    save(page)
    meta = saved_cells(lab, name, 2)[1]["metadata"]["jupyter_ai_ci"]
    assert meta["attempts"] == 1 and meta["requests"] == 1
    assert meta["tokens"] == {"prompt": 300, "completion": 20}
