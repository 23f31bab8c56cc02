"""Run All twice, headless: the second run makes no model request."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

SECRET = "sk-test-0123456789abcdefghijklmnop"


def notebook(requests: list[str]) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.cells = [new_code_cell("%load_ext jupyter_ai_ci"),
                new_code_cell("import pandas as pd\n"
                              "sales = pd.DataFrame({'region': list('nsn'), 'revenue': [1, 2, 3]})")]
    nb.cells += [new_code_cell(f"%%ask\n{r}") for r in requests]
    return nb


def execute(nb: nbformat.NotebookNode, folder: Path) -> nbformat.NotebookNode:
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def printed(nb: nbformat.NotebookNode) -> list[str]:
    """What each %%ask cell's code printed (outputs appear under the cell without the labextension)."""
    return ["".join(o.get("text", "") for o in c.outputs if o.output_type == "stream" and o.name == "stdout")
            for c in nb.cells[2:]]


def texts(nb: nbformat.NotebookNode) -> list[str]:
    """What a text/plain reader sees: the run's display (nbclient applied its updates), then the prints."""
    shown = ["\n".join(o.data.get("text/plain", "") for o in c.outputs if o.output_type == "display_data")
             for c in nb.cells[2:]]
    return [f"{s}\n{p}" for s, p in zip(shown, printed(nb), strict=True)]


@pytest.fixture
def keyed(model_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedOpenAIServer:
    model_server.api_key = SECRET
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return model_server


def test_second_run_makes_no_request_and_a_changed_request_regenerates_only_itself(
        keyed: ScriptedOpenAIServer, tmp_path: Path) -> None:
    requests = ["total revenue of sales", "count rows of sales", "mean revenue of sales"]
    keyed.script(
        "```python\ntotal = sales.revenue.sum() / zero\n```",
        Reply("```python\ntotal = sales.revenue.sum()\nprint('total', total)\n```", require="NameError"),
        "```python\nprint('rows', len(sales))\n```",
        "```python\nprint('mean', sales.revenue.mean())\n```",
    )
    first = execute(notebook(requests), tmp_path)
    assert len(keyed.requests) == 4 and keyed.misses == []
    first_texts = texts(first)
    assert "total 6" in first_texts[0] and "rows 3" in first_texts[1] and "mean 2.0" in first_texts[2]
    # nbclient adds no cell (it ignores set_next_input): the line says where the code is instead.
    assert len(first.cells) == 5 and all("the code is in this output (a headless run adds no cell)" in t
                                          and "new cell below" not in t for t in first_texts)

    keyed.script()  # any request now would fail the run
    second = execute(notebook(requests), tmp_path)
    assert keyed.requests == []
    second_texts = texts(second)
    for after in second_texts:
        assert "replayed — generated" in after and "2 attempts" in second_texts[0]
        assert "replayed, no model call" in after
    # The same code ran and printed the same results (the first run's failed attempt printed nothing).
    assert printed(first) == printed(second)

    keyed.script("```python\nprint('median', sales.revenue.median())\n```")
    third = execute(notebook([requests[0], requests[1], "median revenue of sales"]), tmp_path)
    assert len(keyed.requests) == 1 and "median revenue of sales" in keyed.request_texts()[0]
    assert "replayed" in texts(third)[0] and "replayed" in texts(third)[1] and "median 2.0" in texts(third)[2]

    record_file = "\n".join(p.read_text() for p in (tmp_path / ".jupyter-ai-ci-replay").glob("*.json"))
    assert "total revenue of sales" in record_file and SECRET not in record_file
    assert "127.0.0.1" in record_file  # the endpoint host is recorded, never the key


def test_regenerate_and_changed_data_schema_call_the_model(keyed: ScriptedOpenAIServer, tmp_path: Path) -> None:
    keyed.script("```python\nprint(sales.shape)\n```", "```python\nprint(sales.shape)\n```",
                 "```python\nprint(sales.shape)\n```")
    nb = notebook(["shape of sales"])
    execute(nb, tmp_path)
    nb.cells[-1].source = "%%ask --regenerate\nshape of sales"
    execute(nb, tmp_path)
    assert len(keyed.requests) == 2
    nb.cells[-1].source = "%%ask\nshape of sales"
    nb.cells[1].source += "\nsales['units'] = 1"  # the named variable's columns changed
    execute(nb, tmp_path)
    assert len(keyed.requests) == 3
