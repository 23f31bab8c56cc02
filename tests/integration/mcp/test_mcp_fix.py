"""``fix`` over stdio with the ``mcp`` SDK's client: the tried fix of a failed cell, with its diff,
held until the agent accepts (the kernel keeps it, the cell holds it) or rejects it (rolled back)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402

from jupyter_ai_ci.drivers.server.fix import FIX_METADATA_KEY  # noqa: E402
from jupyter_ai_ci.testing import ScriptedOpenAIServer  # noqa: E402

from .test_mcp_stdio import call, py  # noqa: E402


def failed_notebook(path: Path) -> str:
    """A notebook whose cell raised NameError (as saved by the person's frontend); the cell's id."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("total = sum(valuez)\nprint(total)", execution_count=3, outputs=[
        nbformat.v4.new_output("error", ename="NameError", evalue="name 'valuez' is not defined",
                               traceback=["\x1b[0;31mNameError\x1b[0m: name 'valuez' is not defined"])])
    nb.cells = [nbformat.v4.new_code_cell("values = [1, 2, 3]"), cell]
    nbformat.write(nb, path)
    return str(cell.id)


def test_a_fix_is_offered_with_its_diff_held_and_accepted(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    cell_id = failed_notebook(tmp_path / "a.ipynb")
    model_server.script(py("total = sum(values)\nprint(total)"))

    async def steps(s: ClientSession) -> list[Any]:
        await s.call_tool("run", {"code": "values = [1, 2, 3]", "notebook": "a.ipynb"})
        offered = await s.call_tool("fix", {"notebook": "a.ipynb"})
        waiting = await s.call_tool("run", {"code": "print(total)", "notebook": "a.ipynb"})
        accepted = await s.call_tool("fix", {"notebook": "a.ipynb", "decision": "accept"})
        kept = await s.call_tool("run", {"code": "print(total)", "notebook": "a.ipynb"})
        again = await s.call_tool("fix", {"notebook": "a.ipynb", "decision": "accept"})
        return [offered, waiting, accepted, kept, again]

    offered, waiting, accepted, kept, again = call(tmp_path, steps)
    fix = offered.structured_content
    assert fix["status"] == "offered" and fix["cell"] == cell_id and fix["label"] == "In [3]", offered.content
    assert "-total = sum(valuez)" in fix["diff"] and "+total = sum(values)" in fix["diff"]
    assert fix["outputs"].strip() == "6" and "decision='accept'" in offered.content[0].text
    assert "In [3]" in model_server.requests[0]["messages"][-1]["content"]  # the model saw the failed cell
    assert waiting.is_error and "waits for your decision" in waiting.content[0].text
    assert accepted.structured_content["status"] == "accepted", accepted.content[0].text
    assert "6" in kept.structured_content["outputs"]  # the kernel kept what the fix did
    assert again.is_error and "no fix waits" in again.content[0].text
    cell = next(c for c in nbformat.read(tmp_path / "a.ipynb", as_version=4).cells if c.id == cell_id)
    assert cell.source == "total = sum(values)\nprint(total)"
    assert [o.get("text") for o in cell.outputs] == ["6\n"]  # the error output went with the old code
    assert cell.metadata[FIX_METADATA_KEY]["fixes"]["source"] == "total = sum(valuez)\nprint(total)"


def test_a_rejected_fix_is_rolled_back_and_the_cell_kept(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    failed_notebook(tmp_path / "a.ipynb")
    model_server.script(py("total = sum(values)\nvalues.append(4)\nprint(total)"))

    async def steps(s: ClientSession) -> list[Any]:
        await s.call_tool("run", {"code": "values = [1, 2, 3]", "notebook": "a.ipynb"})
        before_run = (tmp_path / "a.ipynb").read_text()
        offered = await s.call_tool("fix", {"notebook": "a.ipynb"})
        rejected = await s.call_tool("fix", {"notebook": "a.ipynb", "decision": "reject"})
        assert (tmp_path / "a.ipynb").read_text() == before_run  # neither the offer nor the reject wrote
        after = await s.call_tool("run", {"code": "print('total' in globals(), values)", "notebook": "a.ipynb"})
        unknown = await s.call_tool("fix", {"notebook": "a.ipynb", "cell": "no-such-cell"})
        wrong = await s.call_tool("fix", {"notebook": "a.ipynb", "decision": "maybe"})
        return [offered, rejected, after, unknown, wrong]

    offered, rejected, after, unknown, wrong = call(tmp_path, steps)
    assert offered.structured_content["status"] == "offered", offered.content[0].text
    assert rejected.structured_content["status"] == "rejected"
    assert "rolled back" in rejected.content[0].text and "In [3] is as it was" in rejected.content[0].text
    assert "False [1, 2, 3]" in after.structured_content["outputs"]  # no total, values not appended to
    assert unknown.is_error and "no code cell with the id 'no-such-cell'" in unknown.content[0].text
    assert wrong.is_error and "decision" in wrong.content[0].text  # the SDK's schema error
    cells = nbformat.read(tmp_path / "a.ipynb", as_version=4).cells
    assert cells[1].source == "total = sum(valuez)\nprint(total)" and cells[1].outputs[0].output_type == "error"
