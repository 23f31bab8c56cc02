"""``%%ask`` and the JupyterLab link, in a real kernel: the test plays the frontend.

With the labextension's mark on the kernel, the cells go out on a comm (one
comm, several cells with their outputs and provenance); without it, the
``set_next_input`` fallback is used and no comm is opened.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_ai_ci.notebook.comm import MARKER, PROTOCOL, TARGET
from jupyter_ai_ci.testing import ScriptedOpenAIServer

from .kernel_helpers import run_cell, start_kernel

TWO_BLOCKS = "```python\na = 6\nprint('a is', a)\n```\n```python\nb = a * 7\nb\n```\n"
ANNOUNCE = f"get_ipython().{MARKER} = {{'protocol': {PROTOCOL}, 'frontend': 'test'}}"


@pytest.fixture
def kernel(_server: ScriptedOpenAIServer) -> Iterator[Any]:
    km, kc = start_kernel({"OPENAI_BASE_URL": _server.base_url, "OPENAI_API_KEY": "",
                           "JUPYTER_AI_CI_MODEL": "scripted-model"})
    try:
        assert run_cell(kc, "%load_ext jupyter_ai_ci").status == "ok"
        # No replay records in the test's working directory.
        assert run_cell(kc, "%config AskMagics.replay = False").status == "ok"
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def ask_cell(kc: Any, code: str, cell_id: str) -> Any:
    """Run a cell the way JupyterLab does: its id in the request's metadata."""
    from .kernel_helpers import CellRun

    messages: list[dict[str, Any]] = []
    msg = kc.session.msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                             "user_expressions": {}, "allow_stdin": False,
                                             "stop_on_error": True}, metadata={"cellId": cell_id})
    kc.shell_channel.send(msg)
    while True:
        reply = kc.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            break
    while True:
        out = kc.get_iopub_msg(timeout=10)
        if out["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        messages.append(out)
        if out["msg_type"] == "status" and out["content"]["execution_state"] == "idle":
            break
    return CellRun(reply, messages)


def test_with_the_frontend_mark_cells_go_out_on_a_comm(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    assert run_cell(kernel, ANNOUNCE).status == "ok"
    # IPython keeps no history for a line with "paste" in it, yet counts it: the history's length
    # is not the cell's number (the cells would show the one before).
    assert run_cell(kernel, "%time paste_df = 1").status == "ok"
    model_server.script(TWO_BLOCKS)
    run = ask_cell(kernel, "%%ask\nset a and b", "ask-cell-1")
    assert run.status == "ok", run.reply
    assert run.next_inputs == []
    # Each inserted cell shows the %%ask cell's own number: it ran in that execution.
    (started,) = run.of_type("execute_input")
    (opened,) = run.of_type("comm_open")
    assert [c["execution_count"] for c in opened["content"]["data"]["cells"]] == [
        started["content"]["execution_count"]] * 2
    assert opened["content"]["target_name"] == TARGET
    data = opened["content"]["data"]
    assert data["type"] == "insert" and data["ask_cell_id"] == "ask-cell-1"
    first, second = data["cells"]
    assert first["source"] == "a = 6\nprint('a is', a)"
    assert first["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "a is 6\n"}]
    assert second["outputs"][0]["output_type"] == "execute_result"
    assert second["outputs"][0]["data"]["text/plain"] == "42"
    meta = first["metadata"]["jupyter_ai_ci"]
    assert meta["ask_cell_id"] == "ask-cell-1" and meta["model"] == "scripted-model"
    assert meta["attempts"] == 1 and meta["request"] == "set a and b"
    assert run.of_type("comm_close"), "the insertion comm is closed at once, not leaked"
    assert "2 new cells below" in run.shown


def test_without_the_mark_it_falls_back_to_set_next_input(kernel: Any,
                                                          model_server: ScriptedOpenAIServer) -> None:
    model_server.script(TWO_BLOCKS)
    run = ask_cell(kernel, "%%ask\nset a and b", "ask-cell-2")
    assert run.status == "ok", run.reply
    assert run.of_type("comm_open") == []
    assert run.next_inputs == ["a = 6\nprint('a is', a)\n\nb = a * 7\nb"]
