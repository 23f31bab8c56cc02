"""Run All applies each generated step exactly once (docs/reproducibility.md).

A real kernel, spoken to as the frontends speak to it: JupyterLab sends each cell's
id in the execute_request metadata and, with our labextension, announces which
generated cells the notebook holds (``layout``); nbclient sends neither.  The step
under test is in place (``X = [x * 2 ...]`` applied twice gives [4, 8, 12]).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from jupyter_ai_ci.testing import ScriptedOpenAIServer

from .kernel_helpers import CellRun, start_kernel

REQUEST = "double every element of X in place"
CODE = "X[:] = [x * 2 for x in X]"
REPLY = f"```python\n{CODE}\n```\n"
ASK = f"%%ask\n{REQUEST}"


def send(kc: BlockingKernelClient, code: str, cell_id: str | None = None, silent: bool = False,
         timeout: float = 60) -> CellRun:
    """One execute_request, with the cell id in its metadata as JupyterLab sends it."""
    content = {"code": code, "silent": silent, "store_history": not silent, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": True}
    msg = kc.session.msg("execute_request", content, metadata={"cellId": cell_id} if cell_id else {})
    kc.shell_channel.send(msg)
    messages: list[dict[str, Any]] = []
    while True:
        m = kc.get_iopub_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
        messages.append(m)
    # Only this request's reply: jupyter_client 8.6 can leave wait_for_ready's
    # kernel_info_reply on the shell channel, which would pair every cell with the wrong reply.
    while True:
        reply = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            return CellRun(reply, messages)


def announce(kc: BlockingKernelClient, layout: dict[str, Any]) -> None:
    """What the labextension sends (labextension/src/comm.ts): a silent execute request."""
    info = json.dumps({"protocol": 1, "frontend": "jupyterlab", "layout": layout})
    code = f"get_ipython().jupyter_ai_ci_frontend = __import__('json').loads({json.dumps(info)})"
    assert send(kc, code, silent=True).status == "ok"


def x(kc: BlockingKernelClient) -> list[int]:
    run = send(kc, "print(X)")
    return json.loads(run.stdout.strip())  # type: ignore[no-any-return]


def inserted(run: CellRun) -> list[dict[str, Any]]:
    """The cells a %%ask cell asked the labextension to insert (the comm's open message)."""
    return [c for m in run.of_type("comm_open") for c in m["content"]["data"].get("cells", [])]


class Kernel(BlockingKernelClient):
    manager: KernelManager


@pytest.fixture
def kernel(model_server: ScriptedOpenAIServer, tmp_path: Path) -> Iterator[Kernel]:
    km, kc = start_kernel({"OPENAI_BASE_URL": model_server.base_url, "OPENAI_API_KEY": "",
                           "JUPYTER_AI_CI_MODEL": "scripted-model"}, cwd=str(tmp_path))
    kc.manager = km  # type: ignore[attr-defined]
    try:
        assert send(kc, "%load_ext jupyter_ai_ci").status == "ok"
        yield kc  # type: ignore[misc]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def lab_first_run(kc: BlockingKernelClient, model: ScriptedOpenAIServer) -> str:
    """X = [1, 2, 3], then %%ask in JupyterLab with the extension: the generated cell's id."""
    model.script(REPLY)
    announce(kc, {})
    send(kc, "X = [1, 2, 3]", "c-x")
    run = send(kc, ASK, "c-ask")
    assert run.status == "ok", (run.stderr, run.reply["content"])
    cells = inserted(run)
    assert [c["source"] for c in cells] == [CODE]
    assert x(kc) == [2, 4, 6]
    return str(cells[0]["id"])


def restart_and_run_all(kc: BlockingKernelClient, layout: dict[str, Any], cells: list[tuple[str, str]]
                        ) -> list[CellRun]:
    """A restarted kernel (the replay file stays), the extension's announcement, then
    every cell in order with its id, %load_ext first."""
    kc.manager.restart_kernel(now=True)  # type: ignore[attr-defined]
    kc.wait_for_ready(timeout=60)
    announce(kc, layout)
    return [send(kc, code, cell_id) for cell_id, code in [("c-load", "%load_ext jupyter_ai_ci"), *cells]][1:]


def test_lab_run_all_runs_the_generated_cell_not_the_ask_cell(kernel: BlockingKernelClient,
                                                              model_server: ScriptedOpenAIServer) -> None:
    gen = lab_first_run(kernel, model_server)
    # Running the generated cell by hand right after: %%ask already applied it.
    again = send(kernel, CODE, gen)
    assert "already ran this code" in again.stdout and x(kernel) == [2, 4, 6]

    runs = restart_and_run_all(kernel, {"c-ask": {"cells": [gen], "request": REQUEST}},
                               [("c-x", "X = [1, 2, 3]"), ("c-ask", ASK), (gen, CODE)])
    assert all(r.status == "ok" for r in runs)
    assert runs[1].shown.count("replayed by the generated cell below") == 1 and not inserted(runs[1])  # once
    assert x(kernel) == [2, 4, 6]
    assert len(model_server.requests) == 1  # the first run only


def test_an_edited_generated_cell_is_the_code(kernel: BlockingKernelClient,
                                              model_server: ScriptedOpenAIServer) -> None:
    gen = lab_first_run(kernel, model_server)
    edited = "X[:] = [x * 3 for x in X]"
    restart_and_run_all(kernel, {"c-ask": {"cells": [gen], "request": REQUEST}},
                        [("c-x", "X = [1, 2, 3]"), ("c-ask", ASK), (gen, edited)])
    assert x(kernel) == [3, 6, 9]


def test_a_moved_generated_cell_still_runs_once(kernel: BlockingKernelClient,
                                                model_server: ScriptedOpenAIServer) -> None:
    gen = lab_first_run(kernel, model_server)
    # Moved above its %%ask cell: it runs where it is, and %%ask does not run it again.
    restart_and_run_all(kernel, {"c-ask": {"cells": [gen], "request": REQUEST}},
                        [("c-x", "X = [1, 2, 3]"), (gen, CODE), ("c-ask", ASK)])
    assert x(kernel) == [2, 4, 6]


def test_deleted_generated_cells_are_replayed_by_the_ask_cell_and_inserted_again(
        kernel: BlockingKernelClient, model_server: ScriptedOpenAIServer) -> None:
    lab_first_run(kernel, model_server)
    runs = restart_and_run_all(kernel, {}, [("c-x", "X = [1, 2, 3]"), ("c-ask", ASK)])
    assert [c["source"] for c in inserted(runs[1])] == [CODE]
    assert x(kernel) == [2, 4, 6] and len(model_server.requests) == 1


def test_only_the_ask_cell_run_points_at_its_cells(kernel: BlockingKernelClient,
                                                   model_server: ScriptedOpenAIServer) -> None:
    gen = lab_first_run(kernel, model_server)
    announce(kernel, {"c-ask": {"cells": [gen], "request": REQUEST}})
    run = send(kernel, ASK, "c-ask")
    assert "this cell runs nothing" in run.shown
    assert x(kernel) == [2, 4, 6]  # not doubled again


def test_a_changed_request_replaces_its_cells_and_the_queued_old_ones_do_not_run(
        kernel: BlockingKernelClient, model_server: ScriptedOpenAIServer) -> None:
    gen = lab_first_run(kernel, model_server)
    model_server.script("```python\nX[:] = [x + 10 for x in X]\n```\n")
    # Run All was clicked after the prompt changed: the old generated cell is already queued.
    runs = restart_and_run_all(kernel, {"c-ask": {"cells": [gen], "request": REQUEST}},
                               [("c-x", "X = [1, 2, 3]"), ("c-ask", "%%ask\nadd ten to every element of X"),
                                (gen, CODE)])
    assert [c["source"] for c in inserted(runs[1])] == ["X[:] = [x + 10 for x in X]"]
    assert "replaced this cell" in runs[2].stdout
    assert x(kernel) == [11, 12, 13]


def test_without_the_extension_the_identical_generated_cell_after_ask_is_skipped(
        kernel: BlockingKernelClient, model_server: ScriptedOpenAIServer) -> None:
    # VS Code and others: no announcement, so no layout; set_next_input puts the code below.
    model_server.script(REPLY)
    send(kernel, "X = [1, 2, 3]")
    first = send(kernel, ASK)
    assert first.next_inputs == [CODE]
    assert "already ran this code" in send(kernel, CODE).stdout
    assert x(kernel) == [2, 4, 6]
    # A cell of the user's own with the same text, later, is the user's: it runs.
    send(kernel, "X[:] = [x * 2 for x in X]")
    assert x(kernel) == [4, 8, 12]


def nb_with_generated_cell(folder: Path) -> Path:
    """The notebook JupyterLab saves after the first run: %%ask, then its generated cell."""
    nb = new_notebook()
    ask = new_code_cell(ASK)
    gen = new_code_cell(CODE, metadata={"jupyter_ai_ci": {"request": REQUEST, "ask_cell_id": ask.id}})
    nb.cells = [new_code_cell("%load_ext jupyter_ai_ci"), new_code_cell("X = [1, 2, 3]"), ask, gen,
                new_code_cell("print(X)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / "doubled.ipynb"
    nbformat.write(nb, path)
    return path


def test_nbclient_and_nbconvert_give_the_same_values_with_no_request(
        model_server: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    for key, value in {"OPENAI_BASE_URL": model_server.base_url, "OPENAI_API_KEY": "",
                       "JUPYTER_AI_CI_MODEL": "scripted-model"}.items():
        monkeypatch.setenv(key, value)
    model_server.script(REPLY)
    path = nb_with_generated_cell(tmp_path)
    # The first run makes the replay record (the notebook came from another machine without it).
    for attempt in range(3):
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=120, kernel_name="python3",
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
        assert nb.cells[-1].outputs[0]["text"].strip() == "[2, 4, 6]", attempt
        assert "already ran this code" in nb.cells[3].outputs[0]["text"]
    assert len(model_server.requests) == 1

    out = tmp_path / "converted.ipynb"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                    str(path), "--output", str(out)], check=True, capture_output=True, cwd=tmp_path)
    assert nbformat.read(out, as_version=4).cells[-1].outputs[0]["text"].strip() == "[2, 4, 6]"
    assert len(model_server.requests) == 1


def test_the_cli_run_again_on_a_notebook_it_extended_changes_nothing(
        model_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    import subprocess
    import sys

    nb = new_notebook()
    nb.cells = [new_code_cell("X = [1, 2, 3]")]
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    cli = [sys.executable, "-m", "jupyter_ai_ci.drivers.cli", "run", "x.ipynb", "--run-existing",
           "--prompt", REQUEST]
    model_server.script(REPLY, "```python\nX[:] = [x * 5 for x in X]\n```\n")

    def cli_run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cli, *extra], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)

    assert cli_run().returncode == 0
    after_first = path.read_bytes()
    second = cli_run()
    assert second.returncode == 0 and "already done: 1 cell" in second.stdout, second.stdout + second.stderr
    assert path.read_bytes() == after_first and len(model_server.requests) == 1

    # --regenerate replaces the cells (and their request heading), never adds to them.
    assert cli_run("--regenerate").returncode == 0
    cells = nbformat.read(path, as_version=4).cells
    assert [c.source for c in cells if c.cell_type == "code"] == ["X = [1, 2, 3]", "X[:] = [x * 5 for x in X]"]
    assert sum(c.cell_type == "markdown" for c in cells) == 1


QUESTION = "What is the sum of X?"
SUM = "print(sum(X))"


def test_run_all_shows_a_question_s_answer_and_replays_a_request_whose_cell_was_deleted(
        kernel: BlockingKernelClient, model_server: ScriptedOpenAIServer) -> None:
    """Found by hand: after Run All a question's cell showed only "replayed by …", its answer in
    words gone; and with a later request's generated cell deleted, that request asked the model
    again (its replay key holds the earlier requests, and a held run was not remembered)."""
    model_server.script(f"```python\n{SUM}\n```\n", "The sum of X is 6.", REPLY)
    announce(kernel, {})
    send(kernel, "X = [1, 2, 3]", "c-x")
    question = send(kernel, f"%%ask\n{QUESTION}", "c-q")
    assert "The sum of X is 6." in question.shown, question.shown
    gen_q = str(inserted(question)[0]["id"])
    assert inserted(send(kernel, ASK, "c-ask"))
    assert x(kernel) == [2, 4, 6] and len(model_server.requests) == 3

    # The question's generated cell is kept; the request's was deleted before Run All.
    runs = restart_and_run_all(kernel, {"c-q": {"cells": [gen_q], "request": QUESTION}},
                               [("c-x", "X = [1, 2, 3]"), ("c-q", f"%%ask\n{QUESTION}"), (gen_q, SUM),
                                ("c-ask", ASK)])
    assert all(r.status == "ok" for r in runs), [r.stderr for r in runs]
    assert "replayed by the generated cell below" in runs[1].shown
    assert "The sum of X is 6." in runs[1].shown  # the answer in words, from the replay record
    assert runs[2].stdout.strip() == "6"
    assert [c["source"] for c in inserted(runs[3])] == [CODE]  # replayed, and inserted again
    assert x(kernel) == [2, 4, 6]
    assert len(model_server.requests) == 3  # no model call in the Run All
