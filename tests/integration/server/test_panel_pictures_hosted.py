"""The panel asks once before a figure's picture goes to a hosted endpoint (#40): a real server
and kernel, the scripted model behind a hosted name (it is the HTTP proxy); the test plays the
panel, Send or Don't send on the card."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_ai_ci.model import vision
from jupyter_ai_ci.notebook.figuretext import FIGURE_KEY
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer
from jupyter_ai_ci.testing.replies import image_parts

from .test_panel_figures import DESCRIPTION, png
from .test_server import open_notebook, until

HOSTED = "http://hosted.example/v1"


@pytest.fixture
def hosted(model: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    proxy = model.base_url.removesuffix("/v1")
    for name, value in (("OPENAI_BASE_URL", HOSTED), ("JUPYTER_AI_CI_MODEL", "gpt-4o"), ("HTTP_PROXY", proxy),
                        ("http_proxy", proxy), ("NO_PROXY", ""), ("no_proxy", "")):
        monkeypatch.setenv(name, value)
    vision.forget()  # the answer is the server process's: this test's process
    yield model
    vision.forget()


async def ask(ws: Any, session: dict[str, Any], request: str, log: list[dict[str, Any]],
              answer: bool | None) -> dict[str, Any]:
    """One request that draws a chart; ``answer``: the click on the card (None: no card expected)."""
    ws.write_message(json.dumps({"type": "ask", "request": request, "path": session["path"],
                                 "kernel_id": session["kernel"]["id"]}))
    execute = await until(ws, "execute", log)
    ws.write_message(json.dumps({"type": "executed", "id": execute["id"], "status": "ok", "cell_id": "c1",
                                 "outputs": [{"output_type": "display_data", "metadata": {FIGURE_KEY: DESCRIPTION},
                                              "data": {"image/png": png(), "text/plain": "<Figure>"}}]}))
    if answer is not None:
        card = await until(ws, "approve", log)
        assert card["kind"] == "pictures" and card["code"] == ""
        assert card["reason"].startswith("a figure's picture would go to hosted.example, a hosted endpoint")
        ws.write_message(json.dumps({"type": "approval", "id": card["id"], "approved": answer}))
    return await until(ws, "done", log)


@pytest.mark.parametrize("send", [True, False])
async def test_the_card_asks_once_and_its_answer_holds(jp_fetch: Any, jp_ws_fetch: Any,
                                                       hosted: ScriptedOpenAIServer, send: bool) -> None:
    session = await open_notebook(jp_fetch)
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    log: list[dict[str, Any]] = []
    hosted.script("```python\nplot()\n```", Reply("February peaks.", require="3 bars left to right"))
    done = await ask(ws, session, "which month peaks? plot sales by month", log, send)
    assert done["status"] == "success" and hosted.misses == [], done
    assert all(p.startswith(HOSTED) for p in hosted.posts)
    assert [len(image_parts(r)) for r in hosted.requests] == [0, 1 if send else 0]
    # Asked once: the next request is not, and the answer stands.
    log.clear()
    hosted.script("```python\nplot()\n```", Reply("March.", require="3 bars left to right"))
    done = await ask(ws, session, "which month is lowest? plot sales by month", log, None)
    assert done["status"] == "success" and not [m for m in log if m["type"] == "approve"]
    assert [len(image_parts(r)) for r in hosted.requests] == [0, 1 if send else 0]
    ws.close()
