"""Jupyter AI's agents call our tools: a real Jupyter server with jupyter-server-mcp (the MCP server
Jupyter AI 3 gives its personas), our tools registered by its entry point group alone, called over
that server's streamable HTTP endpoint with the ``mcp`` SDK's own client, as a persona's agent does.

Skipped without jupyter-server-mcp (the ``test-jupyter-server-mcp`` extra).  Written for both SDKs:
the 2.x one of the ``[test]`` extra with jupyter-server-mcp 0.4, and the 1.x one that jupyter-ai
3.2 brings with jupyter-server-mcp 0.3 (results are read by their wire names).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import nbformat
import pytest

pytest.importorskip("jupyter_server_mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from jupyter_ai_ci.notebook.sinks import METADATA_KEY  # noqa: E402
from jupyter_ai_ci.testing import ScriptedOpenAIServer  # noqa: E402

TOKEN = "jupyter-ai-test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served(NamedTuple):
    mcp: str  # jupyter-server-mcp's endpoint
    api: str  # the Jupyter server's own REST API


@contextmanager
def jupyter_server(root: Path, *options: str) -> Iterator[Served]:
    """A Jupyter server with jupyter-server-mcp and jupyter-ai-ci enabled."""
    port, mcp_port = free_port(), free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(root / "runtime")}
    env.pop("MPLBACKEND", None)  # the tests' Agg: the server's kernels draw inline, as a person's do
    log = (root / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
         "--ServerApp.jpserver_extensions={'jupyter_ai_ci': True, 'jupyter_server_mcp': True}",
         f"--MCPExtensionApp.mcp_port={mcp_port}", *options], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:  # jupyter-server-mcp binds its port once the server has started
            try:
                socket.create_connection(("127.0.0.1", mcp_port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (root / "server.log").read_text()
                time.sleep(0.3)
        yield Served(f"http://localhost:{mcp_port}/mcp", f"http://127.0.0.1:{port}/api")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture
def served(tmp_path: Path, model_server: ScriptedOpenAIServer) -> Iterator[Served]:
    """The endpoint of a server whose person turned our tools on; a notebook a.ipynb under its root."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("# the persona's notebook")]
    nbformat.write(nb, tmp_path / "a.ipynb")
    with jupyter_server(tmp_path, "--JupyterAITools.enabled=True") as server:
        yield server


@asynccontextmanager
async def connected(url: str, **client: Any) -> AsyncIterator[ClientSession]:
    # The 1.x SDK's transport yields a third item (the session id): only the streams are used.
    async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1], **client) as session:
        await session.initialize()
        yield session


def call(url: str, steps: Callable[[ClientSession], Awaitable[Any]], **client: Any) -> Any:
    async def go() -> Any:
        async with connected(url, **client) as session:
            return await steps(session)
    return asyncio.run(asyncio.wait_for(go(), 240))


def wire(result: Any) -> dict[str, Any]:
    """A tool result as it went over the wire (``structuredContent``, ``isError``): the same in both SDKs."""
    data: dict[str, Any] = result.model_dump(mode="json", by_alias=True)
    data["line"] = data["content"][0]["text"]
    return data


def test_our_tools_are_registered_and_run_is_transactional_there(tmp_path: Path, served: Served) -> None:
    async def steps(s: ClientSession) -> list[Any]:
        listed = await s.list_tools()
        ok = await s.call_tool("run", {"code": "x = 41\nprint('x + 1 is', x + 1)", "notebook": "a.ipynb"})
        bad = await s.call_tool("run", {"code": "x = 999\nopen('made.txt', 'w').write('half')\n1/0",
                                        "notebook": "a.ipynb"})
        after = await s.call_tool("run", {"code": "print(x)", "notebook": "a.ipynb"})
        outside = await s.call_tool("run", {"code": "1", "notebook": "../elsewhere.ipynb"})
        drawn = await s.call_tool("run", {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()",
                                          "notebook": "a.ipynb"})
        return [listed, ok, bad, after, outside, drawn]

    listed, ok, bad, after, outside, drawn = call(served.mcp, steps)
    tools = {t.name: t for t in listed.tools}
    assert {"ask", "run", "context", "fix", "undo"} <= set(tools)
    schema = tools["run"].model_dump(by_alias=True)["inputSchema"]
    assert schema["required"] == ["code", "notebook"] and "transactionally" in (tools["run"].description or "")
    ok, bad, after, outside = wire(ok), wire(bad), wire(after), wire(outside)
    assert ok["line"].startswith("✓ committed") and not ok["isError"]
    assert ok["structuredContent"]["status"] == "committed" and "x + 1 is 42" in ok["structuredContent"]["outputs"]
    assert bad["isError"] and bad["structuredContent"]["status"] == "rolled back"
    assert "ZeroDivisionError" in bad["line"] and "restored x" in bad["line"]
    assert not (tmp_path / "made.txt").exists()  # the file the failed code wrote is gone too
    assert "41" in after["structuredContent"]["outputs"]  # x as it was, not 999
    assert outside["isError"] and "outside the server's root" in outside["line"]
    figures = [b for b in wire(drawn)["content"] if b["type"] == "image"]
    assert len(figures) == 1 and figures[0]["mimeType"] == "image/png" and len(figures[0]["data"]) > 1000
    # The code ran in the kernel of the notebook's session in that server, as opening it would make.
    request = urllib.request.Request(served.api + "/sessions", headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert [s["path"] for s in json.loads(response.read())] == ["a.ipynb"]
    cells = nbformat.read(tmp_path / "a.ipynb", as_version=4).cells
    agent = [c for c in cells if c.get("metadata", {}).get(METADATA_KEY, {}).get("agent_code")]
    assert [c.source for c in agent][:2] == ["x = 41\nprint('x + 1 is', x + 1)", "print(x)"]


def test_ask_is_the_same_run_and_risky_code_needs_the_person(
        tmp_path: Path, served: Served, model_server: ScriptedOpenAIServer) -> None:
    model_server.script("Here you go.\n```python\ntotal = sum(range(10))\nprint(total)\n```\n")
    risky = "import subprocess\nsubprocess.run(['true'])\nprint('ran')"
    asked: list[str] = []

    async def steps(s: ClientSession) -> list[Any]:
        return [await s.call_tool("ask", {"request": "add up 0 to 9", "notebook": "a.ipynb"}),
                await s.call_tool("run", {"code": risky, "notebook": "a.ipynb"})]

    done, refused = (wire(r) for r in call(served.mcp, steps))
    assert done["structuredContent"]["status"] == "done", done["line"]
    assert "45" in done["structuredContent"]["outputs"] and done["structuredContent"]["requests"] == 1
    # The agent cannot approve its own risky code: with no way to ask the person, it is refused.
    assert refused["isError"] and refused["structuredContent"]["status"] == "refused"
    assert "c.AICISettings.allow" in refused["line"]

    from mcp.types import ElicitResult

    async def answer(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"run_it": True})

    ran = wire(call(served.mcp, lambda s: s.call_tool("run", {"code": risky, "notebook": "a.ipynb"}),
                    elicitation_callback=answer))
    assert ran["structuredContent"]["status"] == "committed", ran["line"]
    assert "subprocess" in asked[0]


def test_the_tools_are_not_offered_until_the_person_turns_them_on(tmp_path: Path) -> None:
    # jupyter-server-mcp's port takes no token: any local process (this test's client) may connect.
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "a.ipynb")
    with jupyter_server(tmp_path) as server:
        async def steps(s: ClientSession) -> list[Any]:
            return [await s.list_tools(),
                    await s.call_tool("run", {"code": "open('pwned', 'w')", "notebook": "a.ipynb"})]

        listed, ran = call(server.mcp, steps)
    assert not {"ask", "run", "context", "fix", "undo"} & {t.name for t in listed.tools}
    assert wire(ran)["isError"] and not (tmp_path / "pwned").exists()
    assert "c.JupyterAITools.enabled = True offers them" in (tmp_path / "server.log").read_text()
