"""The chat panel while its notebook is still finding its kernel (just opened or reloaded): the
request waits for it, and a Stop meanwhile sends nothing and gives the typed text back."""

from __future__ import annotations

from typing import Any

import pytest
from labutil import ARTIFACTS, goto, make_notebook, open_panel, wait_idle
from test_sidebar import ENDS, send

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

PANEL = "#jupyter-ai-ci-chat"


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_stop_while_the_notebook_finds_its_kernel_gives_the_request_back(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer, frontend: str) -> None:
    # The page's request for the notebook's session is held: the notebook has no kernel yet, as just
    # after it opens or reloads. The panel waits for it; Stop gives the wait up, and what the
    # person typed (the box was cleared when it went) comes back to the box, never sent.
    if frontend == "notebook7":
        pytest.importorskip("notebook", minversion="7")
    name = make_notebook(lab, f"late-{frontend}.ipynb", ["x = 5"])
    model.script(Reply("```python\nprint('total', 2 + 3)\n```"))  # no cell of it is run first: no x
    held: list[Any] = []
    page.route("**/api/sessions*", lambda route: held.append(route) if route.request.method == "POST"
               else route.continue_())
    try:
        goto(page, lab, name, frontend)
        open_panel(page, frontend)
        panel = page.locator(PANEL)
        box = panel.locator(".jp-aici-input")
        send(page, "sum the prices")
        panel.locator(".jp-aici-notice", has_text="waiting for the notebook’s kernel").wait_for(timeout=10_000)
        assert box.input_value() == ""
        panel.locator(".jp-aici-stop").click()
        page.wait_for_function("document.querySelector('#jupyter-ai-ci-chat .jp-aici-input').value"
                               " === 'sum the prices'", timeout=10_000)
        page.screenshot(path=str(ARTIFACTS / f"panel-stop-while-waiting-for-kernel-{frontend}.png"))
        assert panel.locator(".jp-aici-notice", has_text="waiting for the notebook").count() == 0
        assert panel.locator(".jp-aici-user").count() == 0 and model.requests == []
        assert panel.locator(".jp-aici-send").is_visible()  # not busy: Send again
    finally:
        for route in held:  # the notebook gets its kernel now
            route.continue_()
        page.unroute("**/api/sessions*")
    wait_idle(page)
    # Sent again once the kernel is there, it runs.
    ended = page.locator(ENDS).count()
    box.press("Enter")
    page.wait_for_function(f"document.querySelectorAll({ENDS!r}).length > {ended}", timeout=60_000)
    assert "Done in 1 attempt" in page.locator(ENDS).last.inner_text(), panel.inner_text()
