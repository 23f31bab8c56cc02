"""Pure parts of the headless runner: traceback line numbers, notebook writing, terminal progress."""

from __future__ import annotations

import io
from pathlib import Path

import nbformat
import pytest

from jupyter_ai_ci.drivers.terminal import TerminalReporter
from jupyter_ai_ci.events import CallModel, Cell, ExecutionResult, Notice
from jupyter_ai_ci.executors.kernel import traceback_lineno
from jupyter_ai_ci.notebook.document import NotebookSink, cell_records, load_or_create, output_text, save
from jupyter_ai_ci.notebook.sinks import METADATA_KEY

NESTED = """\
ZeroDivisionError                         Traceback (most recent call last)
Cell In[3], line 5
      3 def g():
----> 5 f()

Cell In[2], line 9, in helper()
----> 9   1/0

Cell In[3], line 2, in f()
----> 2   g()

Cell In[3], line 4, in g()
----> 4   1/0
"""


def test_traceback_lineno_is_the_deepest_line_of_the_cell_that_ran() -> None:
    assert traceback_lineno(NESTED) == 4
    assert traceback_lineno("  Cell In[7], line 1\n    x = (\n        ^\nSyntaxError: incomplete input") == 1
    assert traceback_lineno("KeyboardInterrupt") is None


def test_sink_appends_request_code_and_answer_and_saves_a_valid_notebook(tmp_path: Path) -> None:
    path = tmp_path / "n.ipynb"
    nb = load_or_create(path, "python3")
    result = ExecutionResult(outputs=({"output_type": "stream", "name": "stdout", "text": "hi\n"},
                                      {"output_type": "execute_result", "data": {"text/plain": "3"},
                                       "metadata": {}, "execution_count": 7}))
    sink = NotebookSink(nb, lambda r: 7 if r is result else None)
    where = sink.insert([Cell("print('hi')\n3", 1, result)], {"request": "say hi\nthen 3", "model": "m"},
                        answer="Done.")
    assert where == "1 code cell appended"
    save(nb, path)
    back = nbformat.read(path, as_version=4)
    request, code, answer = back.cells
    assert request.source.endswith("> say hi\n> then 3")
    assert code.execution_count == 7 and code.metadata[METADATA_KEY] == {"request": "say hi\nthen 3",
                                                                        "model": "m", "step": 1}
    assert answer.cell_type == "markdown" and answer.source == "Done."
    assert cell_records(back)[0].output == "hi\n3"
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


def test_an_invalid_notebook_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "n.ipynb"
    path.write_text("original")
    nb = load_or_create(tmp_path / "new.ipynb", "python3")
    nb.cells.append({"cell_type": "code", "id": "c1", "source": "x"})  # no outputs, no metadata: invalid
    with pytest.raises(nbformat.ValidationError):
        save(nb, path)
    assert path.read_text() == "original"
    assert [p.name for p in tmp_path.iterdir()] == ["n.ipynb"]


def test_output_text_describes_rich_outputs_by_kind() -> None:
    outputs = [{"output_type": "display_data", "data": {"image/png": "AAAA", "text/plain": "<Figure>"}},
               {"output_type": "error", "ename": "E", "evalue": "v", "traceback": []}]
    assert output_text(outputs) == "[image/png image shown]\nE: v"


def test_terminal_reporter_labels_lines_and_streams_only_when_asked() -> None:
    stream = io.StringIO()
    quiet = TerminalReporter("[a.ipynb] ", stream, show_text=False)
    quiet.model_text("secret text")
    quiet.notice(Notice("retrying", "attempt 1 failed"))
    quiet.notice(Notice("no-code", "the model answered without code"))  # the result line says it
    assert stream.getvalue() == "[a.ipynb] ✗ attempt 1 failed\n"
    loud = TerminalReporter("", stream, show_text=True, model="qwen2.5-coder")
    loud.model_text("streamed")
    assert stream.getvalue().endswith("streamed")
    loud.model_started(CallModel((), "fix"))  # the model by its name, as the magic shows it
    assert stream.getvalue().endswith("── qwen2.5-coder: fixing ──\n")
    loud.model_started(CallModel((), "again"))  # a reply in words, asked again: no fix was asked for
    assert stream.getvalue().endswith("── qwen2.5-coder: asked again for code ──\n")


def test_a_saved_figure_is_said_in_the_words_of_its_description() -> None:
    from jupyter_ai_ci.notebook.figuretext import FIGURE_KEY
    from jupyter_ai_ci.notebook.plotlyspec import PLOTLY_MIME

    described = {"output_type": "display_data", "metadata": {FIGURE_KEY: "Matplotlib figure: 1 axes\naxes 1: bars"},
                 "data": {"image/png": "AAAA", "text/plain": "<Figure size 640x480 with 1 Axes>"}}
    spec = {"data": [{"type": "bar", "x": ["a", "b"], "y": [2, 1]}], "layout": {}}
    plotly = {"output_type": "display_data", "metadata": {}, "data": {PLOTLY_MIME: spec}}
    text = output_text([described, plotly])
    assert text.startswith("[image/png image shown]\nMatplotlib figure: 1 axes\naxes 1: bars\nPlotly figure")
    assert "2 bars left to right: a=2, b=1; descending" in text
    # The notebook's cells as the command line and the MCP server give them to the context.
    nb = load_or_create(Path("unused.ipynb"), "python3")
    nb.cells.append(nbformat.v4.new_code_cell("plt.bar(...)", outputs=[nbformat.from_dict(described)]))
    assert "axes 1: bars" in cell_records(nb)[0].output


def test_every_kind_of_model_call_has_its_label() -> None:
    from typing import get_args

    from jupyter_ai_ci.events import PURPOSE_LABELS
    from jupyter_ai_ci.events.actions import Purpose

    assert set(PURPOSE_LABELS) == set(get_args(Purpose))  # a new purpose without one would raise KeyError
