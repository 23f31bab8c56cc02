"""The panel is told what the model was told of an attempt's figures (#40): the words the model
read, and for a model that took the picture a reference to it (its cell and output), never the
PNG again.  A real server and kernel, the scripted model; the test plays the panel."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from PIL import Image

from jupyter_ai_ci.notebook.figuretext import FIGURE_KEY
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer
from jupyter_ai_ci.testing.replies import image_parts

from .test_chats import history
from .test_server import open_notebook, until

DESCRIPTION = ("Matplotlib figure: 1 axes\naxes 1: bars\ntitle 'Sales'\n"
               "3 bars left to right: jan=2, mar=4, feb=9; ascending; largest feb=9, smallest jan=2")
MISMATCH = "the bars ascend from left to right, but the request asked for largest first"


def png() -> str:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), "teal").save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


@pytest.fixture(params=["on", "off"])
def vision(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def jp_server_config(vision: str) -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"jupyter_ai_ci": True}},
            "AICISettings": {"local_fallback": False, "vision": vision}}


async def test_the_figures_a_fix_request_carried_are_named_with_their_attempt(
        jp_fetch: Any, jp_ws_fetch: Any, model: ScriptedOpenAIServer, vision: str) -> None:
    session = await open_notebook(jp_fetch)
    model.script("```python\nplot(ascending=True)\n```",
                 Reply("```python\nplot(ascending=False)\n```", require=MISMATCH))
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ws.write_message(json.dumps({"type": "ask", "request": "bar chart of sales, largest first",
                                 "path": session["path"], "kernel_id": session["kernel"]["id"]}))
    picture = png()
    outputs = [{"output_type": "stream", "name": "stdout", "text": "drawn\n"},
               {"output_type": "display_data", "metadata": {FIGURE_KEY: DESCRIPTION},
                "data": {"image/png": picture, "text/plain": "<Figure size 640x480 with 1 Axes>"}}]
    log: list[dict[str, Any]] = []
    for cell in ("fig-1", "fig-2"):
        execute = await until(ws, "execute", log)
        ws.write_message(json.dumps({"type": "executed", "id": execute["id"], "status": "ok",
                                     "cell_id": cell, "outputs": outputs if cell == "fig-1" else []}))
    done = await until(ws, "done", log)
    assert done["status"] == "success" and model.misses == [], done
    assert len(image_parts(model.requests[1])) == (1 if vision == "on" else 0)

    # Once, before the fix is asked for (the failed cell is still in the notebook then).
    (figures,) = [m for m in log if m["type"] == "figures"]
    assert log.index(figures) < [m["type"] for m in log].index("model", log.index(figures))
    assert figures["attempt"] == 1 and figures["purpose"] == "fix"
    assert figures["figures"] == [{"cell_id": "fig-1", "output": 1, "text": DESCRIPTION, "picture": vision == "on"}]
    # The picture is referred to, never sent to the panel again: it is in the cell the panel ran.
    assert picture not in json.dumps(log)

    # A reloaded panel shows it again with its attempt.
    (run,) = await history(ws, session["path"])
    assert [m for m in run["messages"] if m["type"] == "figures"] == [figures]
    ws.close()


async def test_no_figures_line_when_no_request_followed_the_figure(
        jp_fetch: Any, jp_ws_fetch: Any, model: ScriptedOpenAIServer, vision: str) -> None:
    # A chart that matches its request ends the run: the model never saw it, so nothing is said.
    session = await open_notebook(jp_fetch)
    model.script("```python\nplot()\n```")
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ws.write_message(json.dumps({"type": "ask", "request": "bar chart of sales",
                                 "path": session["path"], "kernel_id": session["kernel"]["id"]}))
    log: list[dict[str, Any]] = []
    execute = await until(ws, "execute", log)
    ws.write_message(json.dumps({"type": "executed", "id": execute["id"], "status": "ok", "cell_id": "c1",
                                 "outputs": [{"output_type": "display_data", "metadata": {FIGURE_KEY: DESCRIPTION},
                                              "data": {"image/png": png(), "text/plain": "<Figure>"}}]}))
    done = await until(ws, "done", log)
    assert done["status"] == "success" and len(model.requests) == 1
    assert [m for m in log if m["type"] == "figures"] == []
    ws.close()
