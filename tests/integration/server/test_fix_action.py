"""The Fix / Explain action through the server extension (real HTTP, websocket, kernel).

The test plays the panel: it sends ``fix`` for a cell whose error output it holds,
runs each ``scratch`` attempt in the notebook's kernel itself (as the panel does,
without a cell), and accepts or rejects the offer; the kernel says what it kept.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

from .test_server import open_notebook, until

FAILING = "runs += 1\ndf['Revenue'].sum()"
FIXED = "runs += 1\ndf['revenue'].sum()"
ERROR = {"ename": "KeyError", "evalue": "'Revenue'",
         "traceback": ["\x1b[31mKeyError\x1b[39m Traceback (most recent call last)",
                       "Cell \x1b[32mIn[2]\x1b[39m, line 2\n----> 2 df['Revenue'].sum()", "KeyError: 'Revenue'"]}


async def kernel_of(jp_serverapp: Any, kernel_id: str) -> Any:
    client = jp_serverapp.kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    await client.wait_for_ready(timeout=60)
    return client


async def run(client: Any, code: str) -> tuple[str, list[dict[str, Any]]]:
    outputs: list[dict[str, Any]] = []

    def hook(msg: dict[str, Any]) -> None:
        kind, content = msg["msg_type"], dict(msg["content"])
        if kind in ("stream", "execute_result", "display_data", "error"):
            outputs.append({"output_type": kind, **content})

    reply = await client.execute_interactive(code, store_history=False, output_hook=hook, timeout=60)
    return str(reply["content"]["status"]), outputs


async def value(client: Any, expression: str) -> str:
    """What ``print(expression)`` prints, read from the execute reply (a user expression), not from
    its output: under load the oldest ipykernel's stream message came after the kernel said idle,
    and the value read was '' (CI, 6 Dec)."""
    reply = await client.execute_interactive("", store_history=False, timeout=60,
                                             user_expressions={"x": f"' '.join(map(str, [{expression}]))"})
    found = reply["content"]["user_expressions"]["x"]
    assert found["status"] == "ok", found
    return str(ast.literal_eval(found["data"]["text/plain"])).strip()


def fix_message(session: dict[str, Any], kind: str = "fix") -> str:
    return json.dumps({"type": "fix", "kind": kind, "path": session["path"], "kernel_id": session["kernel"]["id"],
                       "cell_id": "cell-2", "source": FAILING, "error": ERROR, "count": 2})


async def offer(ws: Any, client: Any, log: list[dict[str, Any]]) -> dict[str, Any]:
    """Answer every scratch attempt by running it in the kernel; the offer (or the end)."""
    while True:
        msg = await until(ws, "execute", log)
        if msg["type"] == "done":
            return msg
        if msg["type"] == "fix":
            return msg
        if msg["type"] == "execute":
            assert msg.get("scratch") is True  # tried without a cell
            status, outputs = await run(client, msg["code"])
            ws.write_message(json.dumps({"type": "executed", "id": msg["id"], "status": status,
                                         "outputs": outputs}))
            nxt = await until(ws, "fix", log)
            if nxt["type"] in ("fix", "done"):
                return nxt


async def test_reject_rolls_back_accept_keeps_the_attempt_ran_once(
        jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    client = await kernel_of(jp_serverapp, session["kernel"]["id"])
    await run(client, "import pandas as pd\ndf = pd.DataFrame({'revenue': [1.5, 2.5]})\nruns = 0")
    assert (await run(client, FAILING))[0] == "error"
    assert await value(client, "runs") == "1"
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")

    # Reject: the attempt ran (runs was 2 while offered), and is rolled back.
    model.script(Reply(f"```python\n{FIXED}\n```", require="KeyError: 'Revenue'"))
    ws.write_message(fix_message(session))
    log: list[dict[str, Any]] = []
    shown = await offer(ws, client, log)
    assert shown["type"] == "fix", log
    assert shown["cell_id"] == "cell-2" and shown["before"] == FAILING and shown["after"] == FIXED
    assert "-df['Revenue'].sum()" in shown["diff"] and "+df['revenue'].sum()" in shown["diff"]
    assert shown["ran"] == "Ran without error."
    assert any("4.0" in o.get("data", {}).get("text/plain", "") for o in shown["outputs"]), shown["outputs"]
    assert shown["metadata"]["jupyter_ai_ci_fix"]["fixes"]["source"] == FAILING
    assert await value(client, "runs") == "2"  # tried: the offer holds the attempt's state
    ws.write_message(json.dumps({"type": "fix_decision", "id": shown["id"], "accept": False}))
    done = await until(ws, "done", log)
    assert done["status"] == "rejected" and done["message"].startswith("Rejected: the fix was rolled back")
    assert await value(client, "runs") == "1"

    # Accept: the kernel keeps the attempt's state; nothing runs again.
    model.script(f"```python\n{FIXED}\n```")
    ws.write_message(fix_message(session))
    shown = await offer(ws, client, log)
    assert shown["type"] == "fix", log
    ws.write_message(json.dumps({"type": "fix_decision", "id": shown["id"], "accept": True}))
    done = await until(ws, "done", log)
    assert done["status"] == "success" and "ran once" in done["message"]
    assert await value(client, "runs") == "2"

    # Explain: words, nothing run.
    model.script("The frame has a lower-case 'revenue' column; 'Revenue' does not exist.")
    ws.write_message(fix_message(session, "explain"))
    done = await until(ws, "done", log)
    assert done["status"] == "answered" and "lower-case 'revenue'" in done["answer"]
    assert await value(client, "runs") == "2"
    ws.close()
    client.stop_channels()


async def test_an_interrupted_cell_is_one_line(jp_fetch: Any, jp_ws_fetch: Any,
                                               model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    msg = json.loads(fix_message(session))
    msg["error"] = {"ename": "KeyboardInterrupt", "evalue": "", "traceback": []}
    ws.write_message(json.dumps(msg))
    done = await until(ws, "done", [])
    assert done["status"] == "error" and "interrupted (KeyboardInterrupt)" in done["message"]
    assert model.requests == []
    ws.close()


async def test_a_cell_edited_since_it_raised_is_fixed_as_it_is_now_and_said_so(
        jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    client = await kernel_of(jp_serverapp, session["kernel"]["id"])
    await run(client, "import pandas as pd\ndf = pd.DataFrame({'revenue': [1.5, 2.5]})\nruns = 0")
    reply = await client.execute_interactive(FAILING, store_history=True, timeout=60)
    count = reply["content"]["execution_count"]
    edited = "runs += 1\ndf['Revenue'].mean()"  # the cell now, after the user typed on
    model.script(Reply("```python\nruns += 1\ndf['revenue'].mean()\n```", require="has been edited since it raised"))
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    msg = json.loads(fix_message(session))
    msg.update(source=edited, count=count)
    ws.write_message(json.dumps(msg))
    log: list[dict[str, Any]] = []
    shown = await offer(ws, client, log)
    assert shown["type"] == "fix" and shown["before"] == edited, log
    notes = [m["text"] for m in log if m["type"] == "notice"]
    assert f"In [{count}] has been edited since it raised: the fix is of the source it holds now" in notes
    assert f"```python\n{edited}\n```" in model.request_texts()[0]
    ws.write_message(json.dumps({"type": "fix_decision", "id": shown["id"], "accept": False}))
    assert (await until(ws, "done", log))["status"] == "rejected"
    assert await value(client, "runs") == "1"
    ws.close()
    client.stop_channels()


async def test_reject_after_a_kernel_restart_drops_nothing_and_says_so(
        jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, model: ScriptedOpenAIServer) -> None:
    # The attack: a rollback in a restarted kernel holds no checkpoint, and used to take every
    # name for new and drop it.  A second Fix while the first waits gets one line.
    session = await open_notebook(jp_fetch)
    kernel_id = session["kernel"]["id"]
    client = await kernel_of(jp_serverapp, kernel_id)
    await run(client, "import pandas as pd\ndf = pd.DataFrame({'revenue': [1.5, 2.5]})\nruns = 0")
    model.script(f"```python\n{FIXED}\n```")
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ws.write_message(fix_message(session))
    log: list[dict[str, Any]] = []
    shown = await offer(ws, client, log)
    assert shown["type"] == "fix", log
    ws.write_message(fix_message(session))
    busy = await until(ws, "done", log)
    assert busy["status"] == "error" and busy["message"] == "A request is already running; stop it first."
    await jp_serverapp.kernel_manager.restart_kernel(kernel_id)
    await client.wait_for_ready(timeout=60)
    await run(client, "after_restart = 'mine'")
    ws.write_message(json.dumps({"type": "fix_decision", "id": shown["id"], "accept": False}))
    done = await until(ws, "done", log)
    assert done["status"] == "rejected" and "could not undo it: did it restart?" in done["message"]
    assert await value(client, "after_restart") == "mine"
    ws.close()
    client.stop_channels()


async def test_reject_undoes_the_fixs_environment_and_files_and_keeps_the_persons_cell(
        jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, model: ScriptedOpenAIServer) -> None:
    """#36: Reject said "as it was" while the environment variable the fix set was still set."""
    session = await open_notebook(jp_fetch)
    client = await kernel_of(jp_serverapp, session["kernel"]["id"])
    await run(client, "import pandas as pd\ndf = pd.DataFrame({'revenue': [1.5, 2.5]})\nruns = 0\n"
                      "open('kept.txt', 'w').write('before')")
    fixed = ("import os\nos.environ['UNDO_FIX'] = '1'\nopen('kept.txt', 'w').write('fix')\n"
             "open('fix.txt', 'w').write('fix')\n" + FIXED)
    model.script(f"```python\n{fixed}\n```")
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ws.write_message(fix_message(session))
    log: list[dict[str, Any]] = []
    shown = await offer(ws, client, log)
    assert shown["type"] == "fix", log
    assert await value(client, "__import__('os').environ.get('UNDO_FIX')") == "1"
    # The person's own cell while the offer waits: theirs, kept by the Reject.
    await run(client, "open('mine.txt', 'w').write('mine')")
    ws.write_message(json.dumps({"type": "fix_decision", "id": shown["id"], "accept": False}))
    done = await until(ws, "done", log)
    assert done["status"] == "rejected" and done["message"].endswith("is as it was."), done
    assert await value(client, "__import__('os').environ.get('UNDO_FIX')") == "None"
    assert await value(client, "open('kept.txt').read()") == "before"
    assert await value(client, "__import__('os').path.exists('fix.txt')") == "False"
    assert await value(client, "open('mine.txt').read()") == "mine"
    ws.close()
    client.stop_channels()
