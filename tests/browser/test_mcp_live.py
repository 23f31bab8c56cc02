"""An MCP tool's cells appear live in the open notebook (#39), no reload.

JupyterLab has the notebook open; an agent calls ``run`` through ``/ai-ci/mcp`` with the ``mcp``
SDK's own HTTP client.  The committed code arrives in the page as a new last cell with its
output, through the kernel's comm, and the file is not written under the page (its save does
that).  ``undo`` takes the cell out of the page again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import Any

import nbformat
import pytest
from labutil import make_notebook, open_notebook, wait_idle

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

pytest.importorskip("mcp")

from tests.integration.server.test_mcp_http import connected  # noqa: E402 - the SDK's HTTP client, as there

CODE = "live_total = 6 * 7\nprint('live', live_total)"


def call(page: Any, lab: dict[str, Any], tool: str, arguments: dict[str, Any]) -> str:
    """One tool call, its text line; in a thread of its own: sync Playwright holds this one's loop.
    The lab runs without a token: the page's own cookies (its XSRF token, the user the server
    made for it: an MCP session is its user's) let the call in."""
    cookies = {c["name"]: c["value"] for c in page.context.cookies()}
    headers = {"X-XSRFToken": cookies["_xsrf"], "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}

    async def go() -> str:
        async with connected(f"{lab['url']}/ai-ci/mcp", "", headers) as session:
            result = await session.call_tool(tool, arguments)
            return str(result.content[0].text)  # type: ignore[union-attr]
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, go()).result(timeout=180)


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_run_through_mcp_shows_its_cell_in_the_open_notebook(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer, frontend: str) -> None:
    if frontend == "notebook7":
        pytest.importorskip("notebook", minversion="7")
    name = make_notebook(lab, f"mcp-live-{frontend}.ipynb", ["x = 1", "y = 2"])
    before = (lab["root"] / name).read_text()
    open_notebook(page, lab, name, notebook7=frontend == "notebook7")
    cells = page.locator(".jp-Notebook .jp-Cell")
    assert cells.count() == 2  # the first is active: the cell goes at the end, not below it

    line = call(page, lab, "run", {"code": CODE, "notebook": name})
    assert line.startswith("✓ committed · 1 cell added to the open notebook"), line
    assert "reload" not in line
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length === 3", timeout=30_000)
    new = cells.nth(2)
    assert new.locator(".jp-InputArea-editor .cm-content").inner_text().startswith("live_total = 6 * 7")
    assert "live 42" in new.locator(".jp-OutputArea").inner_text()
    assert (lab["root"] / name).read_text() == before  # the page has the cell; its save writes it

    page.keyboard.press("Control+s")  # the person saves: the cell reaches the file that way
    deadline = time.monotonic() + 30
    while len(saved := nbformat.read(lab["root"] / name, as_version=4).cells) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [c.source for c in saved] == ["x = 1", "y = 2", CODE]
    wait_idle(page)

    line = call(page, lab, "undo", {"notebook": name})
    assert line.startswith("↶ undid") and "reload" not in line, line
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length === 2", timeout=30_000)

    # ask: the model's code, the same way (one place decides where cells go, for ask and run).
    model.script(Reply("```python\nasked = 'from the model'\nprint(asked)\n```"))
    line = call(page, lab, "ask", {"request": "say where this came from", "notebook": name})
    assert "1 cell added to the open notebook" in line and "reload" not in line, line
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length === 3", timeout=30_000)
    assert "from the model" in cells.nth(2).locator(".jp-OutputArea").inner_text()
