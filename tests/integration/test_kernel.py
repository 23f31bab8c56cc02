"""End to end in a real kernel (jupyter_client) against the scripted HTTP model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

from .kernel_helpers import ask_kernel, run_cell


@pytest.fixture(scope="module")
def kernel(_server: ScriptedOpenAIServer) -> Iterator[Any]:
    with ask_kernel(_server.base_url) as kc:
        yield kc


def py(code: str) -> str:
    return f"Here is the code.\n```python\n{code}\n```\n"


def test_first_reply_raises_fix_served_only_with_traceback(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    assert run_cell(kernel, "import pandas as pd\n"
                            "sales = pd.DataFrame({'region': list('nsn'), 'revenue': [10, 20, 30]})").status == "ok"
    model_server.script(
        py("per_region = sales.groupby('region')['revenue'].sum()\nratio = int(per_region['n']) / 0\nprint(ratio)"),
        Reply(py("per_region = sales.groupby('region')['revenue'].sum()\nprint(per_region.to_dict())"),
              require="ZeroDivisionError"),
    )
    run = run_cell(kernel, "%%ask\nRevenue per region of sales")
    assert run.status == "ok", run.reply
    assert model_server.misses == []
    assert "<p>Here is the code.</p>" in run.html  # the model's text, rendered
    assert "✗ attempt 1 · ZeroDivisionError: division by zero (line 2)" in run.shown
    assert "{'n': 40, 's': 20}" in run.stdout
    assert run.next_inputs == ["per_region = sales.groupby('region')['revenue'].sum()\nprint(per_region.to_dict())"]
    # The variables are in the kernel.
    check = run_cell(kernel, "print(per_region.to_dict())")
    assert check.stdout.strip() == "{'n': 40, 's': 20}"
    # What was sent: the DataFrame's schema, then the failing code with its traceback.
    first, fix = model_server.request_texts()
    assert "sales: pandas.DataFrame 3 rows × 2 columns [region:" in first
    assert "ZeroDivisionError" in fix and "ratio = int(per_region['n']) / 0" in fix and "\x1b[" not in fix


def test_give_up_ends_the_cell_in_an_error_and_the_kernel_lives(kernel: Any,
                                                                 model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py("a = undefined_one"), py("a = undefined_two"))
    run = run_cell(kernel, "%%ask --retries 1\nset a")
    assert run.status == "error"
    assert run.reply["content"]["ename"] == "RetriesExhausted"
    assert "2 attempts" in run.reply["content"]["evalue"]
    assert "NameError: name 'undefined_two' is not defined" in run.reply["content"]["evalue"]
    errors = run.of_type("error")
    assert errors and errors[-1]["content"]["traceback"] == [f"RetriesExhausted: {run.reply['content']['evalue']}"]
    # The kernel lives: its value, not printed text (an old ipykernel's stdout flush raced its
    # idle status on a loaded machine, and this line once read '' in CI).
    alive = run_cell(kernel, "1 + 1")
    assert alive.reply["content"]["status"] == "ok"
    assert [m["content"]["data"]["text/plain"] for m in alive.of_type("execute_result")] == ["2"]


def test_rich_outputs_are_shown_and_described(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.title('line')"))
    run = run_cell(kernel, "%%ask\nplot a line")
    assert run.status == "ok", run.reply
    images = [m for m in run.of_type("display_data") if "image/png" in m["content"]["data"]]
    assert images, [m["msg_type"] for m in run.messages]


def test_question_mark_line_is_a_request(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script("A kernel runs your code.")
    run = run_cell(kernel, "%ask what is a kernel?")
    assert run.status == "ok"
    assert "what is a kernel?" in model_server.request_texts()[0]
    assert "A kernel runs your code." in run.shown


def test_model_error_is_one_line(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(Reply(status=503), Reply(status=503), Reply(status=503), Reply(status=503))
    run = run_cell(kernel, "%config AskMagics.max_request_retries = 0\n%ask anything")
    assert run.status == "error"
    assert run.reply["content"]["ename"] == "ModelServerError"
    assert run.of_type("error")[-1]["content"]["traceback"][0].startswith("ModelServerError: ")
    assert "503" in run.reply["content"]["evalue"]
    assert "✗ stopped: the error below says why" in run.shown  # the progress does not stay "writing code"
