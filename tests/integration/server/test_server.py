"""The sidebar's server extension, through real HTTP and websocket requests.

The test plays the panel: it sends ``ask``, answers each ``execute`` with the
outputs a notebook would produce, and checks what the server sent to the
(scripted, real HTTP) model.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import tornado.httpclient

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

ERROR_OUTPUT = {
    "output_type": "error",
    "ename": "ZeroDivisionError",
    "evalue": "division by zero",
    "traceback": [
        "\x1b[31m---------------------------------------------------------------------------\x1b[39m",
        "\x1b[31mZeroDivisionError\x1b[39m   Traceback (most recent call last)",
        "Cell \x1b[32mIn[3]\x1b[39m\x1b[32m, line 2\x1b[39m\n      1 x = 1\n----> 2 y = x / 0",
        "\x1b[31mZeroDivisionError\x1b[39m: division by zero",
    ],
}


async def open_notebook(jp_fetch: Any, path: str = "work.ipynb") -> dict[str, Any]:
    r = await jp_fetch("api", "sessions", method="POST", body=json.dumps(
        {"path": path, "type": "notebook", "name": path, "kernel": {"name": "python3"}}))
    return json.loads(r.body)  # type: ignore[no-any-return]


async def recv(ws: Any) -> dict[str, Any]:
    raw = await asyncio.wait_for(ws.read_message(), 60)
    assert raw is not None, "the server closed the socket"
    return json.loads(raw)  # type: ignore[no-any-return]


async def until(ws: Any, kind: str, log: list[dict[str, Any]]) -> dict[str, Any]:
    while True:
        msg = await recv(ws)
        log.append(msg)
        if msg["type"] == kind or msg["type"] == "done":
            return msg


async def test_config_names_the_model_never_the_key(jp_fetch: Any, model: ScriptedOpenAIServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-key-0123456789")
    r = await jp_fetch("jupyter-ai-ci", "config")
    data = json.loads(r.body)
    assert data["model"] == "scripted-model"
    assert data["host"] == f"127.0.0.1:{model.port}"
    assert data["configured"] is True
    assert b"sk-test" not in r.body


async def test_handlers_refuse_anonymous_requests(jp_fetch: Any, jp_ws_fetch: Any) -> None:
    with pytest.raises(tornado.httpclient.HTTPClientError) as e:
        await jp_fetch("jupyter-ai-ci", "config", headers={"Authorization": "token wrong"})
    assert e.value.code == 403
    with pytest.raises(tornado.httpclient.HTTPClientError) as e:
        await jp_ws_fetch("jupyter-ai-ci", "run", headers={"Authorization": "token wrong"})
    assert e.value.code == 403


async def test_a_notebook_that_is_not_open_is_refused(jp_fetch: Any, jp_ws_fetch: Any,
                                                      model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    for path, kernel in (("other.ipynb", session["kernel"]["id"]), (session["path"], "no-such-kernel")):
        ws.write_message(json.dumps({"type": "ask", "request": "hi", "path": path, "kernel_id": kernel}))
        done = await until(ws, "done", [])
        assert done["status"] == "error"
        assert "not" in done["message"] and done["message"].endswith(".")
    assert model.requests == []  # refused before the model was called
    ws.close()


async def test_a_rejected_key_is_a_sentence_and_the_socket_keeps_working(
        jp_fetch: Any, jp_ws_fetch: Any, model: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-0123456789abcdef")
    model.api_key = "sk-right"
    session = await open_notebook(jp_fetch)
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ask = {"type": "ask", "request": "hi", "path": session["path"], "kernel_id": session["kernel"]["id"]}
    ws.write_message(json.dumps(ask))
    done = await until(ws, "done", [])
    assert done["status"] == "error"
    assert done["message"] == f"127.0.0.1:{model.port} rejected the API key (401): check OPENAI_API_KEY."
    assert "sk-wrong" not in json.dumps(done)
    model.api_key = None
    model.script("No code needed: hello.")
    ws.write_message(json.dumps(ask))
    done = await until(ws, "done", [])
    assert done["status"] == "answered" and done["answer"] == "No code needed: hello."
    ws.close()


async def test_no_endpoint_is_a_sentence(jp_fetch: Any, jp_ws_fetch: Any,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    session = await open_notebook(jp_fetch)
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ws.write_message(json.dumps({"type": "ask", "request": "hi", "path": session["path"],
                                 "kernel_id": session["kernel"]["id"]}))
    done = await until(ws, "done", [])
    assert done["status"] == "error"
    assert done["message"].startswith("No model endpoint is configured: set OPENAI_API_KEY")
    r = await jp_fetch("jupyter-ai-ci", "config")
    assert json.loads(r.body)["configured"] is False
    ws.close()


async def test_a_9_mb_request_is_refused_before_it_is_parsed(
        jp_fetch: Any, jp_ws_fetch: Any, model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ask = {"type": "ask", "request": "sum these: " + "1234567, " * 1_000_000, "path": session["path"],
           "kernel_id": session["kernel"]["id"]}
    ws.write_message(json.dumps(ask))
    done = await until(ws, "done", [])
    assert done == {"type": "done", "status": "error", "message": "The message is 9.0 MB; the limit for a "
                    "request is 64 kB — put large data in a file or variable and refer to it."}
    # Under the socket's cap but over the request's: the run layer's line, still no model request.
    ws.write_message(json.dumps({**ask, "request": "x" * 100_000}))
    done = await until(ws, "done", [])
    assert done["status"] == "error" and "the limit is 64 kB" in done["message"]
    assert model.requests == []
    model.script("No code needed: hello.")  # the socket still works
    ws.write_message(json.dumps({**ask, "request": "hi"}))
    assert (await until(ws, "done", []))["status"] == "answered"
    ws.close()


async def test_run_retries_with_the_traceback_and_the_fix_replaces_the_failed_cell(
        jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    kernel_id = session["kernel"]["id"]
    # A variable in the live kernel: the model must be told about it.
    client = jp_serverapp.kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    await client.wait_for_ready(timeout=60)
    await client.execute_interactive("magic_number = 41", timeout=60)
    client.stop_channels()

    model.script(
        Reply("Here:\n```python\nx = 1\ny = x / 0\n```"),
        Reply("Fixed:\n```python\nx = 1\ny = x / 1\ny\n```", require="ZeroDivisionError"),
    )
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ws.write_message(json.dumps({
        "type": "ask", "request": "divide x", "path": session["path"], "kernel_id": kernel_id,
        "anchor_cell_id": "cell-0", "cells": [{"source": "import math", "output": ""}],
    }))
    log: list[dict[str, Any]] = []
    first = await until(ws, "execute", log)
    assert first["type"] == "execute", log
    assert first["after"] == "cell-0" and first["replace"] == []
    assert first["metadata"]["jupyter_ai_ci"]["request"] == "divide x"
    ws.write_message(json.dumps({"type": "executed", "id": first["id"], "status": "error",
                                 "cell_id": "gen-1", "outputs": [ERROR_OUTPUT]}))
    second = await until(ws, "execute", log)
    assert second["type"] == "execute", log
    assert second["replace"] == ["gen-1"]
    assert "y = x / 1" in second["code"]
    ws.write_message(json.dumps({"type": "executed", "id": second["id"], "status": "ok", "cell_id": "gen-2",
                                 "outputs": [{"output_type": "execute_result", "execution_count": 4,
                                              "data": {"text/plain": "1.0"}, "metadata": {}}]}))
    done = await until(ws, "done", log)
    assert done["status"] == "success", log
    assert done["attempts"] == 2 and done["cells"] == ["gen-2"]
    assert done["message"].startswith("Done in 2 attempts")

    first_request, fix_request = model.request_texts()
    assert "magic_number: int = 41" in first_request
    assert "import math" in first_request
    assert "ZeroDivisionError" in fix_request
    assert "\x1b[" not in fix_request  # ANSI stripped before it reached the model
    assert "----> 2 y = x / 0" in fix_request
    assert model.misses == []
    kinds = [m["type"] for m in log]
    assert "text" in kinds and "running" in kinds and "ran" in kinds
    retry = [m for m in log if m["type"] == "notice" and m["kind"] == "retrying"]
    assert retry and "ZeroDivisionError: division by zero (line 2)" in retry[0]["text"]
    ws.close()


async def test_stop_cancels_a_run_waiting_for_the_notebook(jp_fetch: Any, jp_ws_fetch: Any,
                                                          model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    model.script(Reply("```python\nimport time\ntime.sleep(100)\n```"))
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ws.write_message(json.dumps({"type": "ask", "request": "wait", "path": session["path"],
                                 "kernel_id": session["kernel"]["id"]}))
    assert (await until(ws, "execute", []))["type"] == "execute"
    ws.write_message(json.dumps({"type": "stop"}))
    done = await until(ws, "done", [])
    assert done["status"] == "stopped"
    # The panel's footer stays, and counts the call the stopped run made (it said 0 model calls).
    assert done["session"]["requests"] == 1 and done["session"]["prompt"] > 0, done
    ws.close()


async def test_a_follow_up_carries_the_earlier_exchange(jp_fetch: Any, jp_ws_fetch: Any,
                                                        model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    model.script("```python\nprices = [3, 4]\n```", "Done: two prices, three and four.", "Fresh.")
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ask = {"type": "ask", "path": session["path"], "kernel_id": session["kernel"]["id"]}
    ws.write_message(json.dumps({**ask, "request": "make a list of prices"}))
    execute = await until(ws, "execute", [])
    ws.write_message(json.dumps({"type": "executed", "id": execute["id"], "status": "ok",
                                 "cell_id": "c1", "outputs": []}))
    assert (await until(ws, "done", []))["status"] == "success"
    ws.write_message(json.dumps({**ask, "request": "now describe them in words"}))
    done = await until(ws, "done", [])
    assert done["status"] == "answered" and done["answer"] == "Done: two prices, three and four."
    ws.write_message(json.dumps({**ask, "request": "unrelated", "new": True}))
    assert (await until(ws, "done", []))["status"] == "answered"
    follow_up = model.requests[1]["messages"]
    assert [m["role"] for m in follow_up] == ["system", "user", "assistant", "user"]
    assert "make a list of prices" in follow_up[1]["content"]
    assert follow_up[2]["content"] == "```python\nprices = [3, 4]\n```"
    assert "now describe them in words" in follow_up[3]["content"]
    fresh = model.requests[2]["messages"]
    assert [m["role"] for m in fresh] == ["system", "user"]
    ws.close()


async def test_approval_round_trip() -> None:
    """The approver the loop asks when policy flags code: Approve / Reject in the panel."""
    from jupyter_ai_ci.config import AICISettings
    from jupyter_ai_ci.drivers.server.chats import Chats
    from jupyter_ai_ci.drivers.server.run import SidebarRun
    from jupyter_ai_ci.events import AskApproval

    sent: list[dict[str, Any]] = []
    run = SidebarRun(sent.append, Chats(AICISettings()), None, None)
    request = AskApproval(("import shutil", "shutil.rmtree('data')"), ("deletes files",), attempt=1)
    pending = asyncio.ensure_future(run.aapprove(request))
    await asyncio.sleep(0)
    [shown] = sent
    assert shown == {"type": "approve", "id": shown["id"], "code": "import shutil\n\nshutil.rmtree('data')",
                     "reason": "run: deletes files", "kind": "run"}
    run.decided({"type": "approval", "id": shown["id"], "approved": False})
    approval = await pending
    assert approval.granted is False and approval.why == "rejected in the panel"
    # The next run's first approval has another id: the panel answered the chat's first "a1".
    again = SidebarRun(sent.append, Chats(AICISettings()), None, None)
    pending = asyncio.ensure_future(again.aapprove(request))
    await asyncio.sleep(0)
    assert sent[-1]["id"] != shown["id"]
    again.decided({"type": "approval", "id": shown["id"], "approved": True})  # the old one's: ignored
    await asyncio.sleep(0)
    assert not pending.done()
    again.decided({"type": "approval", "id": sent[-1]["id"], "approved": True})
    assert (await pending).granted


@pytest.fixture
def keyed(model: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedOpenAIServer:
    # Set before the server (and so the extension) starts: listed before jp_fetch.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-kept-from-kernels-0123456789")
    # The extension sets it in this (the server's) process: undone after the test.
    monkeypatch.setenv("JUPYTER_AI_CI_KEY_KEPT", "")
    model.api_key = "sk-kept-from-kernels-0123456789"  # 401 unless the sidebar sends it
    return model


async def test_kernels_do_not_get_the_key_and_the_sidebar_still_sends_it(
        keyed: ScriptedOpenAIServer, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any) -> None:
    session = await open_notebook(jp_fetch)
    kernel = jp_serverapp.kernel_manager.get_kernel(session["kernel"]["id"])
    client = kernel.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        reply = await client.execute("", user_expressions={
            "key": "repr(__import__('os').environ.get('OPENAI_API_KEY'))",
            # The magic in this kernel says why it has no key (not "set OPENAI_API_KEY").
            "magic": "__import__('jupyter_ai_ci.model.endpoint').model.endpoint.Endpoint('m').check()"},
            reply=True, timeout=60)
    finally:
        client.stop_channels()
    assert reply["content"]["user_expressions"]["key"]["data"]["text/plain"] == "'None'"
    said = reply["content"]["user_expressions"]["magic"]
    assert said["ename"] == "NoEndpoint" and "kept OPENAI_API_KEY out of this kernel" in said["evalue"]
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    keyed.script("No code needed: hello.")
    ws.write_message(json.dumps({"type": "ask", "request": "hi", "path": session["path"],
                                 "kernel_id": session["kernel"]["id"]}))
    done = await until(ws, "done", [])
    assert done["status"] == "answered", done
    assert len(keyed.requests) == 1  # answered: the scripted model checked "Bearer sk-kept-…"
    ws.close()
