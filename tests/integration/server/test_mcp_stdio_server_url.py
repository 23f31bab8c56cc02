"""``jupyter ai-ci mcp --server-url``: over stdio, the agent's code runs in the kernel of the
notebook's session on a running Jupyter server (a real one), behind its token."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from jupyter_ai_ci.testing import ScriptedOpenAIServer  # noqa: E402

from .test_mcp_http import execute, notebook  # noqa: E402


async def over_stdio(root: Path, *args: str) -> list[Any]:
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ), cwd=str(root),
                                   args=["-m", "jupyter_ai_ci.drivers.cli", "mcp", "--root-dir", str(root), *args])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        return [await s.call_tool("run", {"code": "print(set_by_the_person + 1)", "notebook": "open.ipynb"}),
                await s.call_tool("run", {"code": "set_by_the_person = 0\n1/0", "notebook": "open.ipynb"})]


async def test_stdio_uses_the_sessions_kernel_of_the_server_it_is_pointed_at(
        jp_serverapp: Any, jp_fetch: Any, jp_http_port: int, jp_base_url: str, jp_root_dir: Path,
        model: ScriptedOpenAIServer) -> None:
    notebook(jp_root_dir / "open.ipynb", "# the person's notebook")
    r = await jp_fetch("api", "sessions", method="POST", body=json.dumps(
        {"path": "open.ipynb", "type": "notebook", "name": "open.ipynb", "kernel": {"name": "python3"}}))
    kernel_id = json.loads(r.body)["kernel"]["id"]
    await execute(jp_serverapp, kernel_id, "set_by_the_person = 4242")
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    token = str(jp_serverapp.identity_provider.token)

    ok, bad = await over_stdio(jp_root_dir, "--server-url", url, "--server-token", token)
    assert "4243" in ok.structured_content["outputs"], ok.content[0].text  # the person's kernel
    assert bad.structured_content["status"] == "rolled back"
    await execute(jp_serverapp, kernel_id, "assert set_by_the_person == 4242")  # undone there
    sessions = json.loads((await jp_fetch("api", "sessions")).body)
    assert [s["kernel"]["id"] for s in sessions] == [kernel_id]  # no kernel of our own, none shut down

    refused, _ = await over_stdio(jp_root_dir, "--server-url", url, "--server-token", "wrong")
    assert refused.is_error and "rejected the token" in refused.content[0].text
    assert "--server-token" in refused.content[0].text
