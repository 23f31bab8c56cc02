"""The panel asks before a figure's picture goes to a hosted endpoint (#40): a card with Send and
Don't send, asked once for the endpoint; in JupyterLab, then Notebook 7 on the same server, where
the answer holds. The endpoint is a hosted name; the scripted model is its HTTP proxy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import start_lab
from labutil import open_notebook
from test_chat_panel import picture
from test_sidebar import ENDS, ask, prepare, send

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer
from jupyter_ai_ci.testing.replies import image_parts

PANEL = "#jupyter-ai-ci-chat"
BARS = ("import matplotlib.pyplot as plt\nplt.bar(['jan', 'feb', 'mar'], [4, 9, 2])\n"
        "plt.title('Sales by month')\nplt.show()")


@pytest.fixture(scope="module")
def hosted_lab(model: ScriptedOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    proxy = model.base_url.removesuffix("/v1")
    yield from start_lab(tmp_path_factory, {"OPENAI_BASE_URL": "http://hosted.example/v1", "HTTP_PROXY": proxy,
                                            "http_proxy": proxy, "NO_PROXY": "", "no_proxy": ""})


def chart(model: ScriptedOpenAIServer) -> None:
    model.script(Reply(f"```python\n{BARS}\n```"), Reply("February peaks, at 9.", require="3 bars left to right"))


def test_the_card_asks_once_and_send_sends_the_picture(page: Any, hosted_lab: dict[str, Any],
                                                        model: ScriptedOpenAIServer) -> None:
    chart(model)
    prepare(page, hosted_lab, "hosted.ipynb")
    panel = page.locator(PANEL)
    panel.locator(".jp-aici-picker select").select_option("scripted-vision")  # a name that takes images
    send(page, "which month peaks? plot sales by month")
    card = panel.locator(".jp-aici-approval")
    card.locator("button", has_text="Don't send").wait_for(timeout=60_000)
    assert card.locator(".jp-aici-label").inner_text().lower() == "send a picture?"  # CSS capitals
    assert "a figure's picture would go to hosted.example, a hosted endpoint" in card.inner_text()
    assert card.locator(".jp-aici-code, pre").count() == 0  # no code to show
    assert len(model.requests) == 1  # the answer waits for the click
    picture(page, "panel-pictures-card.png")
    card.locator("button.jp-mod-accept", has_text="Send").click()
    panel.locator(".jp-aici-done").wait_for(timeout=60_000)
    assert "allowed: pictures may go to this endpoint (asked once" in card.inner_text()
    assert all(p.startswith("http://hosted.example/v1") for p in model.posts)
    assert [len(image_parts(r)) for r in model.requests] == [0, 1]
    panel.get_by_text("February peaks, at 9.").wait_for()
    # What went is said where it went: under the attempt, the figure the model was shown.
    assert panel.locator(".jp-aici-shown summary").first.inner_text() == "the figure the model was shown"

    # Notebook 7, the same server: the answer holds, no card, the picture goes.
    chart(model)
    open_notebook(page, hosted_lab, "hosted.ipynb", notebook7=True)
    page.locator(".lm-MenuBar-itemLabel", has_text="View").click()
    page.locator(".lm-Menu-itemLabel", has_text="Right Sidebar").hover()
    page.locator(".lm-Menu-itemLabel", has_text="Show AI code interpreter").click()
    panel.locator(".jp-aici-input").wait_for(state="visible")
    panel.locator(".jp-aici-picker select").select_option("scripted-vision")
    ended = page.locator(ENDS).count()
    ask(page, "which month is lowest? plot sales by month")
    assert page.locator(ENDS).count() > ended
    assert panel.locator(".jp-aici-approval button.jp-mod-accept").count() == 0
    assert [len(image_parts(r)) for r in model.requests] == [0, 1]
    picture(page, "panel-pictures-nb7.png")
