"""The MCP tools over streamable HTTP at /ai-ci/mcp, inside a real Jupyter server, driven by the
``mcp`` SDK's own client: behind the server's token, in the kernel of the notebook's session."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import nbformat
import pytest
from mcp.types import ElicitResult

pytest.importorskip("mcp")

import httpx2  # noqa: E402  (the SDK's HTTP client)
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from jupyter_ai_ci.drivers.mcp.extension import ENDPOINT_KEY  # noqa: E402
from jupyter_ai_ci.notebook.sinks import METADATA_KEY  # noqa: E402
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer  # noqa: E402

from ..mcp.test_mcp_stdio import notebook  # noqa: E402 - one way to write a notebook for both transports

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}}


@pytest.fixture
def endpoint(jp_fetch: Any, jp_http_port: int, jp_base_url: str) -> str:
    """The URL a client is configured with (jp_fetch's fixture makes the server listen)."""
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}ai-ci/mcp"


@pytest.fixture
def token(jp_serverapp: Any, jp_asyncio_loop: Any) -> Iterator[str]:
    yield str(jp_serverapp.identity_provider.token)
    served = jp_serverapp.web_app.settings[ENDPOINT_KEY]
    if served.endpoint is not None:  # the MCP sessions end, their kernels' clients are let go
        jp_asyncio_loop.run_until_complete(asyncio.wait_for(served.endpoint.stop(), 30))
        assert served.endpoint.notebooks._kept == {}


@asynccontextmanager
async def connected(endpoint: str, token: str, headers: dict[str, str] | None = None,
                    **client: Any) -> AsyncIterator[ClientSession]:
    """``headers``: a browser's instead of a token (its cookie and XSRF token), with ``token`` ""."""
    auth = {"Authorization": f"token {token}"} if token else {}
    async with httpx2.AsyncClient(headers={**auth, **(headers or {})}, timeout=120) as http, \
            streamable_http_client(endpoint, http_client=http) as (read, write), \
            ClientSession(read, write, **client) as session:
        await session.initialize()
        yield session


async def execute(serverapp: Any, kernel_id: str, code: str) -> None:
    """Run ``code`` in a kernel as the person's own cell would, not through our tools."""
    client = serverapp.kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        await client.execute_interactive(code, timeout=60)
    finally:
        client.stop_channels()


async def post(endpoint: str, headers: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=60) as http:
        return await http.post(endpoint, json=INITIALIZE, headers={
            "Accept": "application/json, text/event-stream", **headers})


async def test_tools_are_refused_without_the_token_and_served_with_it(
        endpoint: str, token: str, jp_http_port: int, model: ScriptedOpenAIServer) -> None:
    for headers in ({}, {"Authorization": "token wrong"}, {"Cookie": "username-localhost=forged"}):
        refused = await post(endpoint, headers)
        assert refused.status_code == 403, (headers, refused.text)
        assert "serverInfo" not in refused.text
    # The token, but a Host header a DNS-rebinding page would send: the server's own host check.
    rebinding = await post(endpoint, {"Authorization": f"token {token}", "Host": f"evil.example:{jp_http_port}"})
    assert rebinding.status_code == 403
    served = await post(endpoint, {"Authorization": f"token {token}"})
    assert served.status_code == 200 and "jupyter-ai-ci" in served.text

    async with connected(endpoint, token) as s:
        tools = {t.name for t in (await s.list_tools()).tools}
    assert tools == {"ask", "run", "context", "fix", "undo"}


async def test_run_uses_the_kernel_of_the_notebooks_open_session(
        endpoint: str, token: str, jp_serverapp: Any, jp_fetch: Any, jp_root_dir: Path,
        model: ScriptedOpenAIServer) -> None:
    nb_path = notebook(jp_root_dir / "open.ipynb", "# the person's notebook")
    r = await jp_fetch("api", "sessions", method="POST", body=json.dumps(
        {"path": "open.ipynb", "type": "notebook", "name": "open.ipynb", "kernel": {"name": "python3"}}))
    kernel_id = json.loads(r.body)["kernel"]["id"]
    await execute(jp_serverapp, kernel_id, "set_by_the_person = 4242")

    async with connected(endpoint, token) as s:
        ok = await s.call_tool("run", {"code": "print(set_by_the_person + 1)", "notebook": "open.ipynb"})
        bad = await s.call_tool("run", {"code": "set_by_the_person = 0\n1/0", "notebook": "open.ipynb"})
        after = await s.call_tool("run", {"code": "print(set_by_the_person)", "notebook": "open.ipynb"})
    assert ok.content[0].text.startswith("✓ committed"), ok.content[0].text
    assert "4243" in ok.structured_content["outputs"]
    assert bad.is_error and bad.structured_content["status"] == "rolled back"
    assert "4242" in after.structured_content["outputs"]  # rolled back in the session's kernel
    sessions = json.loads((await jp_fetch("api", "sessions")).body)
    assert [s["kernel"]["id"] for s in sessions] == [kernel_id]  # no second kernel was started
    cells = nbformat.read(nb_path, as_version=4).cells
    assert [c.source for c in cells][-1] == "print(set_by_the_person)"
    assert cells[-1].metadata[METADATA_KEY]["agent_code"] is True


async def test_a_notebook_with_no_session_gets_one_and_a_browser_is_told_to_reload(
        endpoint: str, token: str, jp_fetch: Any, jp_ws_fetch: Any, jp_root_dir: Path,
        model: ScriptedOpenAIServer) -> None:
    (jp_root_dir / "sub").mkdir()
    notebook(jp_root_dir / "sub" / "new.ipynb")
    async with connected(endpoint, token) as s:
        first = await s.call_tool("run", {"code": "made_by_agent = 7\nimport os; print(os.getcwd())",
                                          "notebook": "sub/new.ipynb"})
        sessions = json.loads((await jp_fetch("api", "sessions")).body)
        assert [x["path"] for x in sessions] == ["sub/new.ipynb"]  # as opening it in JupyterLab would
        kernel_id = sessions[0]["kernel"]["id"]
        assert "is open in a browser" not in first.content[0].text
        # A browser opens the notebook: it joins that session's kernel (its websocket).
        ws = await jp_ws_fetch("api", "kernels", kernel_id, "channels")
        try:
            second = await s.call_tool("run", {"code": "print(made_by_agent * 6)", "notebook": "sub/new.ipynb"})
        finally:
            ws.close()
    assert str(jp_root_dir / "sub") in first.structured_content["outputs"]  # started in the notebook's folder
    assert "42" in second.structured_content["outputs"]
    assert "new.ipynb is open in a browser" in second.content[0].text
    assert "reload it from disk" in second.content[0].text


async def test_paths_outside_the_servers_root_are_refused(
        endpoint: str, token: str, jp_root_dir: Path, model: ScriptedOpenAIServer) -> None:
    notebook(jp_root_dir.parent / "outside.ipynb")
    async with connected(endpoint, token) as s:
        outside = await s.call_tool("run", {"code": "1", "notebook": "../outside.ipynb"})
    assert outside.is_error and "outside the server's root" in outside.content[0].text


async def test_the_login_cookie_works_with_its_xsrf_token_and_not_from_another_page(
        endpoint: str, token: str, model: ScriptedOpenAIServer) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=60, follow_redirects=True) as browser:
        await browser.get(endpoint.replace("ai-ci/mcp", f"tree?token={token}"))  # logs in: the cookie
        assert any(name.startswith("username-") for name in browser.cookies)
        # A page on another site makes the browser POST with the cookie, but cannot read _xsrf.
        forged = await browser.post(endpoint, json=INITIALIZE, headers=headers)
        assert forged.status_code == 403
        xsrf = browser.cookies["_xsrf"]
        ours = await browser.post(endpoint, json=INITIALIZE, headers={**headers, "X-XSRFToken": xsrf})
        assert ours.status_code == 200 and "serverInfo" in ours.text


async def test_progress_streams_while_the_code_runs(
        endpoint: str, token: str, jp_root_dir: Path, model: ScriptedOpenAIServer) -> None:
    notebook(jp_root_dir / "long.ipynb")
    seen: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")
        (jp_root_dir / "go").touch()  # the cell below ends only once a progress message got here

    code = "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.1)\nprint('released')"
    async with connected(endpoint, token) as s:
        result = await asyncio.wait_for(s.call_tool("run", {"code": code, "notebook": "long.ipynb"},
                                                    progress_callback=on_progress), 60)
    # A response buffered until the call ended would have held the progress back: no "released".
    assert "released" in result.structured_content["outputs"], result.content[0].text
    assert seen and "running" in seen[0]


async def test_ask_runs_in_the_session_kernel_and_risky_code_is_asked_through_the_client(
        endpoint: str, token: str, jp_fetch: Any, jp_root_dir: Path, model: ScriptedOpenAIServer) -> None:
    notebook(jp_root_dir / "a.ipynb")
    model.script(Reply("Here:\n```python\ntotal = sum(range(5))\nprint(total)\n```\n"))
    risky = "import subprocess\nsubprocess.run(['true'])\nprint('ran')"
    asked: list[str] = []

    async def answer(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)  # the question travels on the call's stream; the answer is a POST
        return ElicitResult(action="accept", content={"run_it": True})

    async with connected(endpoint, token) as s:
        done = await s.call_tool("ask", {"request": "add up 0..4", "notebook": "a.ipynb"})
        refused = await s.call_tool("run", {"code": risky, "notebook": "a.ipynb"})
    async with connected(endpoint, token, elicitation_callback=answer) as s:
        ran = await s.call_tool("run", {"code": risky, "notebook": "a.ipynb"})
        kept = await s.call_tool("run", {"code": "print(total * 2)", "notebook": "a.ipynb"})
    assert done.structured_content["status"] == "done", done.content[0].text
    assert done.structured_content["outputs"].strip() == "10" and model.misses == []
    assert refused.structured_content["status"] == "refused"
    text = refused.content[0].text
    assert "Jupyter server's configuration" in text and "--yes" not in text  # no --yes to tell of here
    assert ran.structured_content["status"] == "committed", ran.content[0].text
    assert "subprocess" in asked[0] and "ran" in ran.structured_content["outputs"]
    assert "20" in kept.structured_content["outputs"]  # ask's variables are in the one session kernel
    assert len(json.loads((await jp_fetch("api", "sessions")).body)) == 1


async def idle(jp_fetch: Any, kernel_id: str) -> None:
    """Until the server says the kernel is idle (a restart on a slow machine: CI's oldest run once
    got the first call's error while the restarted kernel was still starting)."""
    for _ in range(300):
        if json.loads((await jp_fetch("api", "kernels", kernel_id)).body).get("execution_state") == "idle":
            return
        await asyncio.sleep(0.1)


async def test_a_kernel_the_person_restarted_or_replaced_is_followed(
        endpoint: str, token: str, jp_fetch: Any, jp_root_dir: Path, model: ScriptedOpenAIServer) -> None:
    notebook(jp_root_dir / "r.ipynb")
    async with connected(endpoint, token) as s:
        await s.call_tool("run", {"code": "before = 1", "notebook": "r.ipynb"})
        session = json.loads((await jp_fetch("api", "sessions")).body)[0]
        await jp_fetch("api", "kernels", session["kernel"]["id"], "restart", method="POST", body="")
        await idle(jp_fetch, session["kernel"]["id"])  # as a person waits for the kernel's indicator
        restarted = await s.call_tool("run", {"code": "import os\nprint('before' in globals(), os.getpid())",
                                              "notebook": "r.ipynb"})
        # The person picks another kernel for the notebook: the session's kernel id changes.
        await jp_fetch("api", "sessions", session["id"], method="PATCH",
                       body=json.dumps({"kernel": {"name": "python3"}}))
        new_id = json.loads((await jp_fetch("api", "sessions")).body)[0]["kernel"]["id"]
        replaced = await s.call_tool("run", {"code": "import os\nprint(os.getpid())", "notebook": "r.ipynb"})
    assert new_id != session["kernel"]["id"]
    assert restarted.structured_content.get("status") == "committed", restarted.content[0].text
    gone, old_pid = restarted.structured_content["outputs"].split()
    assert gone == "False", restarted.content[0].text  # the restarted kernel, not a stale client's answer
    new_pid = replaced.structured_content["outputs"].strip()
    assert replaced.structured_content["status"] == "committed" and new_pid != old_pid, replaced.content[0].text
