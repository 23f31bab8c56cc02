"""A notebook's chat outlives its panel's page: a reloaded panel (a new websocket)
gets the earlier messages back, and its next request continues the conversation."""

from __future__ import annotations

import json
from typing import Any

from jupyter_ai_ci.testing import ScriptedOpenAIServer

from .test_server import open_notebook, until


async def history(ws: Any, path: str) -> list[dict[str, Any]]:
    ws.write_message(json.dumps({"type": "history", "path": path}))
    reply = await until(ws, "history", [])
    assert reply["type"] == "history" and reply["path"] == path
    return reply["runs"]  # type: ignore[no-any-return]


async def test_a_reloaded_panel_shows_and_continues_the_conversation(
        jp_fetch: Any, jp_ws_fetch: Any, model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    other = await open_notebook(jp_fetch, "other.ipynb")
    model.script("```python\nprices = [3, 4]\n```", "The total is 7.", "Fresh start.")
    ask = {"type": "ask", "path": session["path"], "kernel_id": session["kernel"]["id"]}

    first = await jp_ws_fetch("jupyter-ai-ci", "run")
    first.write_message(json.dumps({**ask, "request": "make a list of prices"}))
    execute = await until(first, "execute", [])
    first.write_message(json.dumps({"type": "executed", "id": execute["id"], "status": "ok",
                                    "cell_id": "c1", "outputs": []}))
    done = await until(first, "done", [])
    assert done["status"] == "success"
    first.close()  # the page is reloaded

    second = await jp_ws_fetch("jupyter-ai-ci", "run")
    (run,) = await history(second, session["path"])
    assert run["request"] == "make a list of prices"
    kinds = [m["type"] for m in run["messages"]]
    assert kinds[0] == "model" and kinds[-1] == "done"
    assert "execute" not in kinds and "provenance" not in kinds  # they acted on the notebook once
    (text,) = [m["text"] for m in run["messages"] if m["type"] == "text"]  # streamed pieces, joined
    assert text == "```python\nprices = [3, 4]\n```"
    (ran,) = [m for m in run["messages"] if m["type"] == "ran"]
    assert ran["cell_id"] == "c1" and ran["ok"] is True and ran["figure"] is False
    assert run["messages"][-1]["tokens"] == done["tokens"]
    assert await history(second, other["path"]) == []  # each notebook its own chat

    second.write_message(json.dumps({**ask, "request": "now describe them in words"}))
    done = await until(second, "done", [])
    assert done["status"] == "answered"
    follow_up = model.requests[1]["messages"]
    assert [m["role"] for m in follow_up] == ["system", "user", "assistant", "user"]
    assert follow_up[2]["content"] == "```python\nprices = [3, 4]\n```"
    assert done["session"]["requests"] == 2  # the notebook's usage, across pages
    assert [r["request"] for r in await history(second, session["path"])] == [
        "make a list of prices", "now describe them in words"]

    # "New chat": the transcript and the earlier exchanges go; the usage stays, and a reloaded
    # page gets it with the (empty) history: its footer vanished, with no run to read it from.
    second.write_message(json.dumps({"type": "forget", "path": session["path"]}))
    assert await history(second, session["path"]) == []
    second.write_message(json.dumps({"type": "history", "path": session["path"]}))
    assert (await until(second, "history", []))["session"]["requests"] == 2
    second.write_message(json.dumps({"type": "history", "path": "never-asked.ipynb"}))
    assert "session" not in await until(second, "history", [])
    second.write_message(json.dumps({**ask, "request": "unrelated"}))
    assert (await until(second, "done", []))["status"] == "answered"
    assert [m["role"] for m in model.requests[2]["messages"]] == ["system", "user"]
    second.close()


async def test_a_figure_is_named_with_its_cell(jp_fetch: Any, jp_ws_fetch: Any,
                                               model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    model.script("```python\nplot()\n```")
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ws.write_message(json.dumps({"type": "ask", "request": "plot", "path": session["path"],
                                 "kernel_id": session["kernel"]["id"]}))
    execute = await until(ws, "execute", [])
    figure = {"output_type": "display_data", "metadata": {},
              "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure size 640x480 with 1 Axes>"}}
    ws.write_message(json.dumps({"type": "executed", "id": execute["id"], "status": "ok",
                                 "cell_id": "fig-cell", "outputs": [figure]}))
    log: list[dict[str, Any]] = []
    await until(ws, "done", log)
    (ran,) = [m for m in log if m["type"] == "ran"]
    assert ran["cell_id"] == "fig-cell" and ran["figure"] is True
    # The picture itself is not sent to the panel again: it is in its cell.
    assert "iVBORw0KGgo=" not in json.dumps(log)
    ws.close()
