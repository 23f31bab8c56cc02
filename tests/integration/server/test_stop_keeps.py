"""The panel's Stop while the model writes, after code has worked: what ran is kept.

A real Jupyter server, a real kernel and the scripted model (real HTTP); the test plays the panel: it
runs each ``execute`` in the notebook's kernel and answers ``executed``, and presses Stop (sends
``stop``) while the model is slow to write another candidate or the answer in words.  Anywhere else a
Stop still ends the run (tests/integration/server/test_server.py)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer


async def _run_in(client: Any, code: str) -> tuple[str, list[dict[str, Any]]]:
    outputs: list[dict[str, Any]] = []

    def keep(msg: dict[str, Any]) -> None:
        c = msg["content"]
        if msg["msg_type"] == "stream":
            outputs.append({"output_type": "stream", "name": c["name"], "text": c["text"]})
        elif msg["msg_type"] == "execute_result":
            outputs.append({"output_type": "execute_result", "data": c["data"], "metadata": {},
                            "execution_count": c.get("execution_count")})

    reply = await client.execute_interactive(code, output_hook=keep, timeout=60)
    return reply["content"]["status"], outputs


async def _ask_and_stop(jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, request: str, stop_on: str,
                        **fields: Any) -> tuple[dict[str, Any], list[dict[str, Any]], Any]:
    """Ask, play the panel, send Stop once a message of the run contains ``stop_on``; the run's
    ``done``, every message, and the kernel's client (still open, for the caller to read and stop)."""
    r = await jp_fetch("api", "sessions", method="POST", body=json.dumps(
        {"path": "stop.ipynb", "type": "notebook", "name": "stop.ipynb", "kernel": {"name": "python3"}}))
    session = json.loads(r.body)
    client = jp_serverapp.kernel_manager.get_kernel(session["kernel"]["id"]).client()
    client.start_channels()
    await client.wait_for_ready(timeout=60)
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ws.write_message(json.dumps({"type": "ask", "request": request, "path": session["path"],
                                 "kernel_id": session["kernel"]["id"], "cells": [], **fields}))
    seen: list[dict[str, Any]] = []
    stopped, ran = False, 0
    while True:
        msg = json.loads(await asyncio.wait_for(ws.read_message(), 60))
        seen.append(msg)
        if msg["type"] == "execute":
            status, outputs = await _run_in(client, msg["code"])
            ran += 1
            ws.write_message(json.dumps({"type": "executed", "id": msg["id"], "status": status,
                                         "cell_id": f"gen-{ran}", "outputs": outputs}))
        elif not stopped and stop_on in json.dumps(msg, ensure_ascii=False):
            stopped = True
            await asyncio.sleep(1.0)  # the model has been asked, and is slow to write
            ws.write_message(json.dumps({"type": "stop"}))
        elif msg["type"] == "done":
            break
    ws.close()
    assert stopped, f"never saw {stop_on!r}: {seen}"
    return msg, seen, client


async def test_stop_while_the_model_writes_the_second_candidate_keeps_the_first_result(
        jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, model: ScriptedOpenAIServer) -> None:
    model.script(Reply("```python\nn = 76\nprint(n)\n```"), Reply("```python\nn = 76.0\nprint(n)\n```", delay=30))
    loop = asyncio.get_running_loop()
    started = loop.time()
    done, seen, client = await _ask_and_stop(jp_fetch, jp_ws_fetch, jp_serverapp, "set n to the count",
                                             '"purpose": "candidate"', candidates=2)
    try:
        assert loop.time() - started < 25  # not the 30 s the second candidate would have taken
        assert done["status"] == "success", done
        assert done["consensus"]["line"] == "not checked: you stopped the check" and done["consensus"]["sure"] is False
        notices = [m["text"] for m in seen if m["type"] == "notice"]
        assert "check stopped: candidate 1's result is kept, not checked" in notices, notices
        assert len([m for m in seen if m["type"] == "execute"]) == 1  # kept as it ran: not run again
        _, outputs = await _run_in(client, "n")
        assert outputs[0]["data"]["text/plain"] == "76"
    finally:
        client.stop_channels()


async def test_stop_while_the_model_writes_the_answer_in_words_keeps_the_cells(
        jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, model: ScriptedOpenAIServer) -> None:
    # Before, a Stop here ended the run "stopped", and the variables of the code that had worked
    # stayed in the kernel with no cell to show for them.
    model.script(Reply("```python\ntotal = 3 + 4\nprint(total)\n```"), Reply("It is 7.", delay=30))
    done, seen, client = await _ask_and_stop(jp_fetch, jp_ws_fetch, jp_serverapp,
                                             "what is three plus four?", '"purpose": "answer"', candidates=1)
    try:
        assert done["status"] == "success", done
        assert "no answer in words: stopped; the code ran, and its cells are kept" in \
            [m["text"] for m in seen if m["type"] == "notice"]
        _, outputs = await _run_in(client, "total")
        assert outputs[0]["data"]["text/plain"] == "7"
    finally:
        client.stop_channels()


async def test_stop_while_the_answer_before_the_check_is_written_ends_the_check_and_keeps_the_result(
        jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, model: ScriptedOpenAIServer) -> None:
    # With two candidates the answer in words is asked first (core/loop.py): a Stop then is a Stop
    # of the check as well, and no other candidate is asked.
    model.script(Reply("```python\ntotal = 3 + 4\nprint(total)\n```"), Reply("It is 7.", delay=30),
                 Reply("```python\ntotal = 7\nprint(total)\n```"))
    done, seen, client = await _ask_and_stop(jp_fetch, jp_ws_fetch, jp_serverapp,
                                             "what is three plus four?", '"purpose": "answer"', candidates=2)
    try:
        assert done["status"] == "success", done
        assert done["consensus"]["line"] == "not checked: you stopped the check", done
        notices = [m["text"] for m in seen if m["type"] == "notice"]
        assert "check stopped: candidate 1's result is kept, not checked" in notices, notices
        assert not any("purpose" in m and m["purpose"] == "candidate" for m in seen), seen
        assert len(model.requests) == 2 and len([m for m in seen if m["type"] == "execute"]) == 1
        _, outputs = await _run_in(client, "total")
        assert outputs[0]["data"]["text/plain"] == "7"
    finally:
        client.stop_channels()
