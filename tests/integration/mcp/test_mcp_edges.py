"""The MCP server under the issue's bad input: a cancelled call, two calls on one notebook at once,
a kernel that dies mid-call, a huge output — with the SDK's own client over stdio."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import nbformat
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402

from jupyter_ai_ci.testing import ScriptedOpenAIServer  # noqa: E402

from .test_mcp_stdio import call, notebook  # noqa: E402


def test_a_cancelled_call_interrupts_the_kernel_and_rolls_the_attempt_back(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    notebook(tmp_path / "a.ipynb")

    async def steps(s: ClientSession) -> Any:
        with pytest.raises((asyncio.TimeoutError, TimeoutError)):
            await asyncio.wait_for(s.call_tool("run", {"code": "import time\nx = 5\ntime.sleep(60)",
                                                       "notebook": "a.ipynb"}), 4)
        loop = asyncio.get_running_loop()
        started = loop.time()
        after = await s.call_tool("run", {"code": "print('x' in globals())", "notebook": "a.ipynb"})
        return after, loop.time() - started

    after, seconds = call(tmp_path, steps)
    assert after.structured_content["status"] == "committed", after.content[0].text
    assert after.structured_content["outputs"].strip() == "False"  # the cancelled attempt's x was undone
    assert seconds < 30  # the sleep was interrupted, not waited out
    assert [c.source for c in nbformat.read(tmp_path / "a.ipynb", as_version=4).cells] == ["print('x' in globals())"]


def test_two_calls_on_one_notebook_take_turns_and_the_second_is_told(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    notebook(tmp_path / "a.ipynb")
    said: list[str] = []

    async def steps(s: ClientSession) -> Any:
        async def heard(done: float, total: float | None, message: str | None) -> None:
            said.append(message or "")
        first = asyncio.create_task(s.call_tool(
            "run", {"code": "import time\ntime.sleep(3)\norder = ['first']", "notebook": "a.ipynb"}))
        await asyncio.sleep(1.0)
        second = await s.call_tool("run", {"code": "order.append('second')\nprint(order)", "notebook": "a.ipynb"},
                                   progress_callback=heard)
        return await first, second

    first, second = call(tmp_path, steps)
    assert first.structured_content["status"] == "committed"
    assert "['first', 'second']" in second.structured_content["outputs"]  # never interleaved
    assert any("waiting: another call is running in a.ipynb" in m for m in said), said


def test_a_kernel_that_dies_mid_call_is_one_line_and_the_next_call_gets_a_new_one(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    nb = notebook(tmp_path / "a.ipynb", "# mine")
    before = nb.read_bytes()

    async def steps(s: ClientSession) -> Any:
        died = await s.call_tool("run", {"code": "import os\nos._exit(1)", "notebook": "a.ipynb"})
        again = await s.call_tool("run", {"code": "print('alive')", "notebook": "a.ipynb"})
        return died, again

    died, again = call(tmp_path, steps, "--yes")
    assert died.is_error and len(died.content[0].text.splitlines()) == 1
    assert "died" in died.content[0].text, died.content[0].text
    assert "alive" in again.structured_content["outputs"]
    cells = nbformat.read(nb, as_version=4).cells
    assert [c.source for c in cells] == ["# mine", "print('alive')"] and before  # nothing written half


def test_a_huge_output_comes_back_cut_with_a_note(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    notebook(tmp_path / "a.ipynb")

    async def steps(s: ClientSession) -> Any:
        return await s.call_tool("run", {"code": "print('x' * 2_000_000)", "notebook": "a.ipynb"})

    result = call(tmp_path, steps)
    outputs = result.structured_content["outputs"]
    assert result.structured_content["status"] == "committed"
    assert len(outputs) < 20_000 and "characters cut" in outputs, outputs[-300:]
