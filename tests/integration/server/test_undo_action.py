"""The panel's Undo button through the server extension (real HTTP, websocket, kernel).

The test plays the panel: it asks, runs each ``execute`` in the notebook's kernel itself (in its
history, as the browser's cell would be), then sends ``undo`` for the request the done line
names; the kernel says what it holds afterwards.
"""

from __future__ import annotations

import json
import re
from typing import Any

from jupyter_ai_ci.testing import ScriptedOpenAIServer

from .test_fix_action import kernel_of, value
from .test_server import open_notebook, until

MADE = "undo_me = 42\nopen('data.txt', 'w').write('after')\nimport os\nos.environ['UNDO_PANEL'] = '1'"


async def ask(ws: Any, client: Any, session: dict[str, Any], request: str, log: list[dict[str, Any]],
              cell: str = "gen-1") -> dict[str, Any]:
    ws.write_message(json.dumps({"type": "ask", "request": request, "path": session["path"],
                                 "kernel_id": session["kernel"]["id"]}))
    while True:
        msg = await until(ws, "execute", log)
        if msg["type"] == "done":
            return msg
        # As the browser runs a cell: in the kernel's history (the undo reads it).
        reply = await client.execute_interactive(msg["code"], store_history=True, timeout=60)
        ws.write_message(json.dumps({"type": "executed", "id": msg["id"], "status": reply["content"]["status"],
                                     "cell_id": cell, "outputs": []}))


def undo(session: dict[str, Any], request: str) -> str:
    return json.dumps({"type": "undo", "path": session["path"], "kernel_id": session["kernel"]["id"],
                       "request": request})


async def test_undo_takes_the_request_back_once_and_never_over_a_later_cell_of_yours(
        jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    client = await kernel_of(jp_serverapp, session["kernel"]["id"])
    await client.execute_interactive("open('data.txt', 'w').write('before')", store_history=False, timeout=60)
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    log: list[dict[str, Any]] = []

    model.script(f"```python\n{MADE}\n```")
    done = await ask(ws, client, session, "make undo_me and write data.txt", log)
    assert done["status"] == "success", log
    request = done["undo"]
    assert re.fullmatch(r"[0-9a-f]{12}", request), done
    assert await value(client, "undo_me, open('data.txt').read(), os.environ.get('UNDO_PANEL')") == "42 after 1"

    ws.write_message(undo(session, request))
    undone = await until(ws, "undone", log)
    assert undone["type"] == "undone" and undone["ok"] is True, undone["message"]
    assert undone["request"] == request and undone["cells"] == ["gen-1"] and undone["path"] == session["path"]
    line = undone["message"]
    assert line.startswith("↶ undid “make undo_me and write data.txt”: restored"), line
    assert "removed os, undo_me" in line and "its replay record dropped" in line, line
    assert await value(client, "'undo_me' in globals(), open('data.txt').read(), "
                               "__import__('os').environ.get('UNDO_PANEL')") == "False before None"

    # Twice: the kernel holds no way back any more, and says so; nothing changes.
    ws.write_message(undo(session, request))
    again = await until(ws, "undone", log)
    assert again["ok"] is False and again["message"].startswith("✗ nothing to undo for that request"), again
    assert again["cells"] == []

    # A reloaded panel finds the line after the run it undid.
    ws.write_message(json.dumps({"type": "history", "path": session["path"]}))
    history = await until(ws, "history", log)
    shown = [m for m in history["runs"][-1]["messages"] if m["type"] in ("done", "undone")]
    assert [m["type"] for m in shown] == ["done", "undone", "undone"] and shown[0]["undo"] == request

    # A later cell of the person's changed what the request made: refused, naming the cell.
    await client.execute_interactive("person_was_here = 1", store_history=True, timeout=60)
    model.script("```python\nmine = [1, 2]\n```")
    done = await ask(ws, client, session, "make mine", log, cell="gen-2")
    assert done["status"] == "success" and done.get("undo"), log
    reply = await client.execute_interactive("mine.append(3)", store_history=True, timeout=60)
    count = reply["content"]["execution_count"]
    ws.write_message(undo(session, done["undo"]))
    refused = await until(ws, "undone", log)
    assert refused["ok"] is False and refused["cells"] == []
    assert refused["message"].startswith(f"✗ undo refused: In [{count}] changed mine after the request"), refused
    assert await value(client, "mine") == "[1, 2, 3]"

    # The undone exchange left the conversation: the next request did not build on it (the
    # second's own exchange, not undone, is still there for the one after).
    assert [m["role"] for m in model.requests[0]["messages"]] == ["system", "user"]
    # Nor was it told the undone request's cell ran (it ran in the kernel's history, as the panel's do).
    context = model.requests[0]["messages"][1]["content"]
    assert "undo_me = 42" not in context and "person_was_here = 1" in context, context
    model.script("No code needed.")
    ws.write_message(json.dumps({"type": "ask", "request": "and now?", "path": session["path"],
                                 "kernel_id": session["kernel"]["id"]}))
    assert (await until(ws, "done", log))["status"] == "answered"
    assert [m["role"] for m in model.requests[0]["messages"]] == ["system", "user", "assistant", "user"]
    ws.close()
    client.stop_channels()


async def test_an_undo_is_refused_while_a_request_runs_and_for_a_made_up_id(
        jp_fetch: Any, jp_ws_fetch: Any, model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ws.write_message(undo(session, "not-an-id"))
    bad = await until(ws, "undone", [])
    assert bad["ok"] is False and bad["message"] == "✗ the panel named no request to undo"
    ws.write_message(undo({**session, "path": "other.ipynb"}, "0123456789ab"))
    closed = await until(ws, "undone", [])
    assert closed["ok"] is False and "other.ipynb is not open with that kernel" in closed["message"]

    model.script("```python\nimport time\ntime.sleep(100)\n```")
    ws.write_message(json.dumps({"type": "ask", "request": "wait", "path": session["path"],
                                 "kernel_id": session["kernel"]["id"]}))
    assert (await until(ws, "execute", []))["type"] == "execute"
    ws.write_message(undo(session, "0123456789ab"))
    busy = await until(ws, "undone", [])
    assert busy["ok"] is False and busy["message"] == "✗ A request is already running; stop it first."
    ws.write_message(json.dumps({"type": "stop"}))
    assert (await until(ws, "done", []))["status"] == "stopped"
    ws.close()
