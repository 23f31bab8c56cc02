"""``jupyter ai-ci mcp`` over stdio, driven by the ``mcp`` SDK's own client: a real server
process, real kernels, the scripted model."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import nbformat
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from jupyter_ai_ci.notebook.sinks import METADATA_KEY  # noqa: E402
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer  # noqa: E402


def py(code: str) -> str:
    return f"Here you go.\n```python\n{code}\n```\n"


def notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


@asynccontextmanager
async def connected(root: Path, *args: str, **client: Any) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "jupyter_ai_ci.drivers.cli", "mcp", "--root-dir", str(root), *args],
                                   env=dict(os.environ), cwd=str(root))
    async with stdio_client(params) as (read, write), ClientSession(read, write, **client) as session:
        await session.initialize()
        yield session


def call(root: Path, steps: Callable[[ClientSession], Any], *args: str, **client: Any) -> Any:
    async def go() -> Any:
        async with connected(root, *args, **client) as session:
            return await steps(session)
    return asyncio.run(asyncio.wait_for(go(), 240))


def test_tools_are_listed_with_schemas_and_annotations(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    listed = call(tmp_path, lambda s: s.list_tools())
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {"ask", "run", "context", "fix", "undo"}
    assert tools["context"].annotations.read_only_hint is True
    assert tools["run"].annotations.destructive_hint is False
    assert tools["run"].input_schema["required"] == ["code", "notebook"]
    assert tools["ask"].input_schema["properties"]["retries"]["anyOf"][0]["minimum"] == 0
    assert "status" in tools["run"].output_schema["properties"]


def test_run_commits_rolls_back_and_undo_takes_it_back(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    nb_path = notebook(tmp_path / "a.ipynb", "# the agent's notebook")

    async def steps(s: ClientSession) -> list[Any]:
        await s.call_tool("run", {"code": "x = 1", "notebook": "a.ipynb"})  # a new kernel: nothing ran yet
        ok = await s.call_tool("run", {"code": "x = 41\ny = x + 1\nprint('y is', y)", "notebook": "a.ipynb"})
        bad = await s.call_tool("run", {"code": "x = 999\nopen('made.txt', 'w').write('half')\n1/0",
                                        "notebook": "a.ipynb"})
        after = await s.call_tool("run", {"code": "print(x, y)", "notebook": "a.ipynb"})
        back = await s.call_tool("undo", {"notebook": "a.ipynb", "n": 2})
        last = await s.call_tool("run", {"code": "print(x, 'y' in globals())", "notebook": "a.ipynb"})
        return [ok, bad, after, back, last]

    ok, bad, after, back, last = call(tmp_path, steps)
    assert ok.content[0].text.startswith("✓ committed") and not ok.is_error
    assert ok.structured_content["status"] == "committed" and "y is 42" in ok.structured_content["outputs"]
    assert bad.is_error and bad.structured_content["status"] == "rolled back"
    assert "ZeroDivisionError" in bad.content[0].text and "ZeroDivisionError" in bad.structured_content["error"]
    assert not (tmp_path / "made.txt").exists()  # the file the failed code wrote is gone too
    assert "41 42" in after.structured_content["outputs"]  # x is 41 again, not 999
    assert back.structured_content["ok"], back.content[0].text
    assert "↶ undid the last 2 requests" in back.content[0].text
    assert "1 False" in last.structured_content["outputs"]  # before the first run: x = 1, no y
    cells = nbformat.read(nb_path, as_version=4).cells
    # The undone runs' cells left the notebook; the last run's cell is there, marked as the agent's.
    sources = [c.source for c in cells if c.cell_type == "code"]
    assert sources == ["# the agent's notebook", "x = 1", "print(x, 'y' in globals())"]
    assert cells[-1].metadata[METADATA_KEY]["agent_code"] is True


def test_ask_is_the_run_of_ask_with_rollback_and_cells(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    notebook(tmp_path / "b.ipynb")
    model_server.script(py("total = sum(range(5))\nboom = {}['k']"),
                        # Slower than the heartbeat: the agent hears what the model is asked for meanwhile.
                        Reply(py("total = sum(range(5))\nprint(total)"), require="KeyError", delay=4.5))
    progress: list[str] = []

    async def steps(s: ClientSession) -> Any:
        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append(message or "")
        return await s.call_tool("ask", {"request": "add up 0..4", "notebook": "b.ipynb"},
                                 progress_callback=on_progress)

    result = call(tmp_path, steps)
    data = result.structured_content
    assert data["status"] == "done", result.content[0].text
    assert result.content[0].text.startswith("✓ done in 2 attempts")
    assert [a["error"].split(":")[0] for a in data["attempts"]] == ["KeyError", ""]
    assert data["outputs"].strip() == "10" and "print(total)" in data["code"]
    assert data["prompt_tokens"] > 0 and len(data["cells"]) >= 2
    assert any("attempt 1" in p for p in progress)  # the attempts were reported as they ran
    assert any(p.startswith("asking the model: fixing (") for p in progress), progress  # as the magic says it
    nb = nbformat.read(tmp_path / "b.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert len(code) == 1 and code[0].metadata[METADATA_KEY]["source"] == "mcp"


def test_bad_notebooks_are_refused_in_one_line(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    root = tmp_path / "root"
    root.mkdir()
    notebook(tmp_path / "outside.ipynb")
    notebook(root / "analysis.ipynb")
    (root / "inside.ipynb").symlink_to(tmp_path / "outside.ipynb")  # a link in the root, out of it

    async def steps(s: ClientSession) -> list[Any]:
        return [await s.call_tool("run", {"code": "1", "notebook": nb}) for nb in
                ("../outside.ipynb", str(tmp_path / "outside.ipynb"), "analysys.ipynb", "data.csv", "inside.ipynb")]

    outside, absolute, typo, csv, link = call(root, steps)
    assert all(r.is_error for r in (outside, absolute, typo, csv, link))
    assert "outside the server's root" in link.content[0].text
    assert "outside the server's root" in outside.content[0].text
    assert "outside the server's root" in absolute.content[0].text
    assert "did you mean analysis.ipynb?" in typo.content[0].text
    assert "expected a notebook" in csv.content[0].text


def test_malformed_arguments_get_the_sdks_schema_error(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    notebook(tmp_path / "a.ipynb")

    async def steps(s: ClientSession) -> list[Any]:
        return [await s.call_tool("run", {"notebook": "a.ipynb"}),
                await s.call_tool("undo", {"notebook": "a.ipynb", "n": "lots"})]

    missing, wrong = call(tmp_path, steps)
    assert missing.is_error and "code" in missing.content[0].text
    assert wrong.is_error and "n" in wrong.content[0].text


def test_risky_code_is_refused_without_elicitation_and_asked_with_it(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    notebook(tmp_path / "a.ipynb")
    code = "import subprocess\nsubprocess.run(['true'])\nprint('ran')"
    asked: list[str] = []

    async def refuse(s: ClientSession) -> Any:
        return await s.call_tool("run", {"code": code, "notebook": "a.ipynb"})

    refused = call(tmp_path, refuse)
    assert refused.is_error and refused.structured_content["status"] == "refused"
    assert "--yes" in refused.content[0].text and "c.AICISettings.allow" in refused.content[0].text

    from mcp.types import ElicitResult

    async def answer(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"run_it": True})

    ran = call(tmp_path, refuse, elicitation_callback=answer)
    assert ran.structured_content["status"] == "committed", ran.content[0].text
    assert "ran" in ran.structured_content["outputs"] and "subprocess" in asked[0]


def test_secrets_in_the_kernel_are_masked_in_every_result(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    notebook(tmp_path / "a.ipynb")
    secret = "sk-live-" + "Q7w" * 10

    async def steps(s: ClientSession) -> list[Any]:
        made = await s.call_tool("run", {"code": f"API_TOKEN = {secret!r}", "notebook": "a.ipynb"})
        shown = await s.call_tool("run", {"code": "print(API_TOKEN)", "notebook": "a.ipynb"})
        raised = await s.call_tool("run", {"code": "raise ValueError(API_TOKEN)", "notebook": "a.ipynb"})
        return [made, shown, raised]

    for result in call(tmp_path, steps):
        assert secret not in str(result.structured_content) and secret not in result.content[0].text


def test_an_asks_result_masks_what_the_kernel_holds(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    notebook(tmp_path / "a.ipynb")
    secret = "sk-live-" + "Zx4" * 10
    model_server.script(py("print('the token is', API_TOKEN)"))

    async def steps(s: ClientSession) -> Any:
        await s.call_tool("run", {"code": f"API_TOKEN = {secret!r}", "notebook": "a.ipynb"})
        return await s.call_tool("ask", {"request": "show the token", "notebook": "a.ipynb"})

    result = call(tmp_path, steps)
    assert result.structured_content["status"] == "done", result.content[0].text
    assert "the token is" in result.structured_content["outputs"]
    assert secret not in json.dumps(result.structured_content) and secret not in result.content[0].text
    assert secret not in json.dumps(model_server.requests)  # nor in what the model was sent


CHART = "import matplotlib.pyplot as plt\nplt.bar(['jan', 'feb', 'mar'], [4, 9, 2])\nplt.show()"


def test_a_picture_to_a_hosted_endpoint_is_asked_about_once_through_the_client(
        tmp_path: Path, model_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The endpoint is a hosted name (the scripted model is its HTTP proxy) and the model takes
    images: the person is asked through the client's elicitation, once for the server's life."""
    from mcp.types import ElicitResult

    from jupyter_ai_ci.testing.replies import image_parts

    proxy = model_server.base_url.removesuffix("/v1")
    for name, value in (("OPENAI_BASE_URL", "http://hosted.example/v1"), ("JUPYTER_AI_CI_MODEL", "gpt-4o"),
                        ("HTTP_PROXY", proxy), ("http_proxy", proxy), ("NO_PROXY", ""), ("no_proxy", "")):
        monkeypatch.setenv(name, value)
    notebook(tmp_path / "a.ipynb")
    asked: list[str] = []

    async def answer(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"send_them": True})

    async def steps(s: ClientSession) -> list[Any]:
        model_server.script(py(CHART), Reply("February.", require="3 bars left to right"))
        first = await s.call_tool("ask", {"request": "which month peaks? plot sales by month", "notebook": "a.ipynb"})
        sent = [len(image_parts(r)) for r in model_server.requests]
        model_server.script(py(CHART), Reply("March.", require="3 bars left to right"))
        second = await s.call_tool("ask", {"request": "which month is lowest? plot it", "notebook": "a.ipynb"})
        return [first, sent, second, [len(image_parts(r)) for r in model_server.requests]]

    first, sent, second, sent_again = call(tmp_path, steps, elicitation_callback=answer)
    assert not first.is_error and not second.is_error, first.content[0].text
    assert sent == [0, 1] and sent_again == [0, 1]
    assert len(asked) == 1 and "a figure's picture would go to hosted.example" in asked[0]

    # A client that cannot ask: the words go alone, and the agent is told why as the run goes.
    told: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        told.append(message or "")

    async def without(s: ClientSession) -> Any:
        model_server.script(py(CHART), Reply("February.", require="3 bars left to right"))
        return await s.call_tool("ask", {"request": "which month peaks? plot sales by month", "notebook": "b.ipynb"},
                                 progress_callback=progress)

    notebook(tmp_path / "b.ipynb")
    result = call(tmp_path, without)
    assert not result.is_error and [len(image_parts(r)) for r in model_server.requests] == [0, 0]
    assert any("figures go to hosted.example in words only (this MCP client cannot ask you" in t for t in told), told
