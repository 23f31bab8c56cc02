"""The context end to end: a real kernel (jupyter_client), the scripted HTTP
model, and assertions on what the requests carried."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer
from jupyter_ai_ci.tokens import count_tokens

from .kernel_helpers import ask_kernel, run_cell


@pytest.fixture(scope="module")
def _kernel(_server: ScriptedOpenAIServer) -> Iterator[Any]:
    with ask_kernel(_server.base_url) as kc:
        yield kc


@pytest.fixture
def kernel(_kernel: Any, model_server: ScriptedOpenAIServer) -> Any:
    """The module's kernel with an empty namespace and no earlier exchange."""
    assert run_cell(_kernel, "%reset -f\nimport os\nos.environ.pop('JPY_SESSION_NAME', None)\n"
                             "get_ipython().history_manager.reset(new_session=True)\n"
                             # Numbered as in a fresh kernel: the next cell is In [1] again.
                             "get_ipython().execution_count = 0\n"
                             "get_ipython().magics_manager.registry['AskMagics'].conversation.clear()").status == "ok"
    return _kernel


def ok(kc: Any, code: str) -> None:
    run = run_cell(kc, code)
    assert run.status == "ok", run.reply


def user_text(server: ScriptedOpenAIServer, index: int = -1) -> str:
    return str([m for m in server.requests[index]["messages"] if m["role"] == "user"][-1]["content"])


def section(text: str, title: str) -> str:
    return text.split(f"### {title}")[1].split("###")[0].split("## Request")[0]


def test_the_request_names_the_variables_and_columns_the_task_needs(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    ok(kernel, "import pandas as pd\n"
               "sales = pd.DataFrame({'region': ['n', 's', None], 'revenue': [10.0, 20.5, None],\n"
               "                      'month': pd.to_datetime(['2024-01-05', '2024-02-01', '2024-02-03'])})\n"
               "people = pd.DataFrame({'name': ['ann'], 'age': [31]})\n"
               "threshold = 15")
    model_server.script("```python\nby_region = sales.groupby('region')['revenue'].mean()\nby_region\n```")
    ok(kernel, "%%ask\nAverage revenue per region above the threshold")
    text = user_text(model_server)
    named = section(text, "Variables the request is about")
    assert "sales: pandas.DataFrame 3 rows × 3 columns [region:" in named
    assert "revenue:float64" in named and "month:datetime64" in named
    assert "nulls: {'region': 1, 'revenue': 1}" in named and "20.5" in named  # a few rows
    assert "threshold: int = 15" in named
    assert "people: pandas.DataFrame 1 rows × 2 columns [name, age]" in section(text, "Other variables")


def test_shown_figures_and_displays_are_named_not_inlined(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    ok(kernel, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.title('trend')\nplt.show()")
    ok(kernel, "from IPython.display import display\ndisplay({'a': 1})")
    shown = run_cell(kernel, "%ask --show-context what does the trend show?").stdout
    cells = shown.split("### Recent cells (in the order they ran)")[1]
    assert "plt.title('trend')" in cells and "[image/png image " in cells and " shown]" in cells
    assert "iVBOR" not in shown  # no base64 image data
    assert "{'a': 1}" in cells


def test_huge_and_hostile_objects_are_described_safely(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    ok(kernel, "import numpy as np, pandas as pd\n"
               "class Hostile:\n"
               "    def __repr__(self): raise RuntimeError('no repr')\n"
               "    def __len__(self): raise RuntimeError('no len')\n"
               "    def __getattr__(self, name): raise RuntimeError('no ' + name)\n"
               "bad = Hostile()\n"
               "huge = np.zeros(10**8)\n"
               "wide = pd.DataFrame(np.zeros((1_000_000, 20)), columns=[f'c{i}' for i in range(20)])\n"
               "deep = {'a': [list(range(10**6))] * 1000}")
    model_server.script("```python\nprint(huge.shape, wide.shape)\n```")
    run = run_cell(kernel, "%%ask\nshape of huge and wide; is bad usable? look at deep")
    assert run.status == "ok", run.reply
    assert "(100000000,) (1000000, 20)" in run.stdout
    named = section(user_text(model_server), "Variables the request is about")
    assert "huge: numpy.ndarray shape=(100000000,) dtype=float64 first values: [0.0, 0.0, 0.0, 0.0, 0.0]" in named
    assert "wide: pandas.DataFrame 1000000 rows × 20 columns [c0:float64" in named
    assert "nulls: not counted (large)" in named
    assert "bad: Hostile" in named and "deep: dict len=1 {'a': list(len=1000)}" in named


def test_secrets_never_appear_in_any_request(kernel: Any, model_server: ScriptedOpenAIServer,
                                             tmp_path: Path) -> None:
    secrets = ["sk-live-abcdefghijklmnopqrstuvwxyz", "correct horse battery", "plain-token-value-42",
               "ghp_abcdefghijklmnopqrstuvwxyz0123456789"]
    # The saved notebook has the secret printed in an output, as notebooks often do.
    notebook = tmp_path / "secrets.ipynb"
    notebook.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "print(db_password)",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "correct horse battery\n"}]}]}))
    ok(kernel, f"import os\nos.environ['JPY_SESSION_NAME'] = {str(notebook)!r}\n"
               f"api_key = {secrets[0]!r}\n"
               f"db_password = {secrets[1]!r}\n"
               f"os.environ['MY_SERVICE_TOKEN'] = {secrets[2]!r}\n"
               f"note = 'token for ci: {secrets[3]}'\n"
               f"settings = {{'user': 'ann', 'api_token': {secrets[2]!r}}}")
    ok(kernel, "print(db_password, os.environ['MY_SERVICE_TOKEN'])\nnote")
    # The model's code prints secrets and fails: its output goes back in the fix request.
    model_server.script("```python\nprint(db_password, os.environ['MY_SERVICE_TOKEN'], api_key)\n1/0\n```",
                        "```python\nresult = len(note)\n```", "fine")
    ok(kernel, "%%ask\nuse api_key, db_password, note and settings")
    ok(kernel, "%%ask\nand again")
    assert len(model_server.requests) == 3 and "ZeroDivisionError" in str(model_server.requests[1])
    sent = json.dumps(model_server.requests)
    for secret in secrets:
        assert secret not in sent
    assert "api_key: str (value hidden" in sent and "print(db_password)" in sent


def test_follow_ups_carry_the_previous_exchange(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    ok(kernel, "import pandas as pd\nsales = pd.DataFrame({'month': [1, 1, 2], 'revenue': [1.0, 2.0, 4.0]})")
    model_server.script("```python\nmonthly = sales.groupby('month')['revenue'].sum()\nmonthly\n```",
                        "```python\nmonthly.plot()\n```")
    ok(kernel, "%%ask\ntotal revenue per month of sales")
    ok(kernel, "%%ask\nnow plot it")
    first, second = (r["messages"] for r in model_server.requests)
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[:2] == first  # the earlier request exactly as it was sent (context/since.py)
    assert second[1]["content"].endswith("## Request\ntotal revenue per month of sales")
    assert "monthly = sales.groupby('month')['revenue'].sum()" in second[2]["content"]
    # "it" is the previous answer's variable: described in full.
    assert "monthly: pandas.Series shape=(2,) dtype=float64 name='revenue' first values: [3.0, 4.0]" in \
        section(second[3]["content"], "Variables the request is about")
    model_server.script("ok")
    ok(kernel, "%%ask --new\nsomething else")
    assert [m["role"] for m in model_server.requests[-1]["messages"]] == ["system", "user"]


def test_budget_holds_on_a_thousand_cell_notebook(kernel: Any, model_server: ScriptedOpenAIServer,
                                                  tmp_path: Path) -> None:
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": i + 1,
              "source": f"part_{i} = load_part({i})\npart_{i}.describe()",
              "outputs": [{"output_type": "stream", "name": "stdout", "text": f"rows {i}\n" * 40}]}
             for i in range(1000)]
    cells.insert(500, {"cell_type": "markdown", "metadata": {}, "source": "## Half way"})
    notebook = tmp_path / "long.ipynb"
    notebook.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    ok(kernel, f"import os\nos.environ['JPY_SESSION_NAME'] = {notebook.name!r}\nos.chdir({str(tmp_path)!r})")
    for budget in (3000, 800):
        model_server.script("ok")
        ok(kernel, f"%config AskMagics.max_context_tokens = {budget}")
        ok(kernel, "%ask --regenerate what next?")  # the same request again: no replay
        context = user_text(model_server).partition("## Request")[0].rstrip()
        assert count_tokens(context) <= budget
        assert "part_999 = load_part(999)" in context and "rows 999" in context  # newest cell, from the file
        assert "more not shown" in context
    shown = run_cell(kernel, "%ask --show-context what next?")
    assert shown.stdout.startswith("· context: ") and " of 800 tokens" in shown.stdout.splitlines()[0]
    ok(kernel, "%config AskMagics.max_context_tokens = 3000")
