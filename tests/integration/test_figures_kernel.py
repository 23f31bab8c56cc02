"""Figures the model can read (issue #40), end to end: a real kernel, the scripted HTTP model.

The figure is drawn by the model's code with the kernel's own inline backend; its description
is made in the kernel, travels in the output's metadata, and is what the model is told -- by
the magic (in the kernel) and by the command line (over the messaging protocol).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_ai_ci.notebook.figuretext import FIGURE_KEY
from jupyter_ai_ci.notebook.reader import png_size
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer
from jupyter_ai_ci.testing.replies import image_parts

from .kernel_helpers import ask_kernel, run_cell

pytestmark = pytest.mark.timeout(180)

BARS = ("import matplotlib.pyplot as plt\n"
        "plt.bar(['jan', 'feb', 'mar'], [4, 9, 2])\n"
        "plt.title('Sales by month')\n"
        "plt.ylabel('sales')\n"
        "plt.show()")
DESCRIBED = "3 bars left to right: jan=4, feb=9, mar=2; not sorted; largest feb=9, smallest mar=2"


def py(code: str) -> str:
    return f"Here you go.\n```python\n{code}\n```\n"


@pytest.fixture(scope="module")
def kernel(_server: ScriptedOpenAIServer) -> Iterator[Any]:
    with ask_kernel(_server.base_url) as kc:
        yield kc


def test_a_question_about_a_chart_is_answered_from_its_description(kernel: Any,
                                                                   model_server: ScriptedOpenAIServer) -> None:
    # Only a figure, nothing printed: before #40 no answer was asked (the model could not see it).
    model_server.script(py(BARS), Reply("February peaks, at 9.", require=DESCRIBED))
    run = run_cell(kernel, "%%ask\nwhich month peaks? plot sales by month")
    assert run.status == "ok", run.reply
    assert model_server.misses == [] and len(model_server.requests) == 2
    answer = model_server.request_texts()[1]
    assert "[displayed image/png <Figure size" in answer  # said as before, the description after it
    assert "Matplotlib figure: 1 axes\naxes 1: bars\ntitle 'Sales by month'; y label 'sales'" in answer
    assert "February peaks, at 9." in run.shown
    # The figure's output carries its description: any executor reading it gets the same words.
    figures = [m["content"] for m in run.of_type("display_data") if "image/png" in m["content"]["data"]]
    assert figures and DESCRIBED in figures[0]["metadata"][FIGURE_KEY]


def test_the_users_own_figure_gets_no_plotting_import_and_keeps_its_output(kernel: Any) -> None:
    run = run_cell(kernel, "import sys\nprint(sorted(m for m in ('plotly', 'seaborn') if m in sys.modules))")
    assert run.stdout.strip() == "[]"
    # A figure that fails to render: its text is still shown, and what it holds still said.
    run = run_cell(kernel, "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
                           "ax.plot([1, 2, 3], label='x')\nax.set_title('$\\\\frac{$')\nplt.show()")
    shown = [m["content"] for m in run.of_type("display_data")]
    assert shown and all("image/png" not in d["data"] for d in shown)
    words = shown[0]["metadata"][FIGURE_KEY]
    assert "line 'x': 3 points" in words and "(the figure did not render: no image was made)" in words


def test_the_command_line_tells_the_model_what_the_chart_shows(tmp_path: Path,
                                                                model_server: ScriptedOpenAIServer) -> None:
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "a.ipynb")
    model_server.script(py(BARS), Reply("February.", require=DESCRIBED))
    proc = subprocess.run([sys.executable, "-m", "jupyter_ai_ci.drivers.cli", "run", "a.ipynb",
                           "--prompt", "which month peaks? plot sales by month"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=150, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert model_server.misses == [] and len(model_server.requests) == 2
    cells = nbformat.read(tmp_path / "a.ipynb", as_version=4).cells
    assert any(DESCRIBED in o.get("metadata", {}).get(FIGURE_KEY, "") for c in cells for o in c.get("outputs", []))


BIG = BARS.replace("import matplotlib.pyplot as plt\n",
                   "import matplotlib.pyplot as plt\nplt.figure(figsize=(16, 12), dpi=100)\n")  # 1600 px wide


def pictures_sent(body: dict[str, Any]) -> list[tuple[int, int]]:
    """The sizes of the PNG pictures a request carried."""
    sizes = []
    for url in image_parts(body):
        assert url.startswith("data:image/png;base64,")
        sizes.append(png_size(url.split(",", 1)[1]))
    return sizes  # type: ignore[return-value]


def test_a_vision_model_on_this_machine_sees_the_picture_scaled_down(kernel: Any,
                                                                     model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py(BIG), Reply("February.", require=DESCRIBED))
    run = run_cell(kernel, "%%ask --model gpt-4o\nwhich month peaks? plot sales by month")
    assert run.status == "ok", run.reply
    first, answer = model_server.requests
    assert pictures_sent(first) == []
    (size,) = pictures_sent(answer)  # with its description too: the words go to every model
    assert max(size) == 1024 and min(size) > 500
    # A model of no family that takes images: never a picture, the description only.
    model_server.script(py(BIG), Reply("February.", require=DESCRIBED))
    assert run_cell(kernel, "%%ask\nwhich month peaks? plot the sales").status == "ok"
    assert [pictures_sent(r) for r in model_server.requests] == [[], []]
    # Turned off for a vision model.
    model_server.script(py(BIG), Reply("February.", require=DESCRIBED))
    run_cell(kernel, "%config AskMagics.vision = 'off'")
    try:
        assert run_cell(kernel, "%%ask --model gpt-4o\nwhich month peaks? chart the sales").status == "ok"
    finally:
        run_cell(kernel, "%config AskMagics.vision = 'auto'")
    assert [pictures_sent(r) for r in model_server.requests] == [[], []]


def test_auto_follows_what_the_endpoints_model_list_says_the_model_takes(model_server: ScriptedOpenAIServer) -> None:
    # A new kernel: the list is read by its first request, as a person's first %%ask reads it.
    model_server.models = {"object": "list", "data": [
        {"id": "acme/charts-1", "architecture": {"input_modalities": ["text", "image"]}},  # no family's name
        {"id": "acme/gpt-4o-text", "architecture": {"input_modalities": ["text"]}},  # a vision family's name
    ]}
    with ask_kernel(model_server.base_url) as kc:
        model_server.script(py(BARS), Reply("February.", require=DESCRIBED))
        assert run_cell(kc, "%%ask --model acme/charts-1\nwhich month peaks? plot sales by month").status == "ok"
        assert [len(pictures_sent(r)) for r in model_server.requests] == [0, 1]
        assert [g for g in model_server.gets if g.endswith("/models")] == ["/v1/models"]
        model_server.script(py(BARS), Reply("February.", require=DESCRIBED))
        assert run_cell(kc, "%%ask --model acme/gpt-4o-text\nwhich month peaks? draw the sales").status == "ok"
        assert [len(pictures_sent(r)) for r in model_server.requests] == [0, 0]  # the description only
        assert not [g for g in model_server.gets if g.endswith("/models")]  # read once a process


def test_a_model_that_refuses_pictures_is_asked_again_without_them_and_remembered(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.refuse_images = True
    model_server.script(py(BARS), Reply("February.", require=DESCRIBED))
    run = run_cell(kernel, "%%ask --model gpt-4.1-mini\nwhich month peaks? draw sales by month")
    assert run.status == "ok", run.reply
    assert "February." in run.shown
    assert [len(pictures_sent(r)) for r in model_server.requests] == [0, 1, 0]  # refused, then without
    model_server.script(py(BARS), Reply("February.", require=DESCRIBED))
    assert run_cell(kernel, "%%ask --model gpt-4.1-mini\nwhich month peaks? plot it").status == "ok"
    assert [len(pictures_sent(r)) for r in model_server.requests] == [0, 0]  # not tried again


SORTED = ("import matplotlib.pyplot as plt\n"
          "sales = {{'jan': 4, 'feb': 9, 'mar': 2}}\n"
          "months = sorted(sales, key=sales.get, reverse={down})\n"
          "plt.bar(months, [sales[m] for m in months])\n"
          "plt.show()")
MISMATCH = "the bars ascend from left to right, but the request asked for largest first"


def test_a_chart_that_contradicts_the_request_is_a_failed_attempt_fixed_with_that_sentence(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py(SORTED.format(down=False) + "\nfirst_try = 1"),
                        Reply(py(SORTED.format(down=True)), require=MISMATCH))
    run = run_cell(kernel, "%%ask\nbar chart of sales by month, largest first")
    assert run.status == "ok", run.reply
    assert model_server.misses == [] and len(model_server.requests) == 2
    fix = model_server.request_texts()[1]
    # The sentence leads the fix request, with what the failed attempt's chart showed.
    assert f"The code ran, but the chart it drew does not match the request: {MISMATCH}." in fix
    assert "The figures it drew show:" in fix and "mar=2, jan=4, feb=9; ascending" in fix
    assert "✓" in run.shown and "2 attempts" in run.shown
    # The unfolded attempt says what the model was told of its figure: the line, then its words.
    assert "What the model was told about the figure: Matplotlib figure: 1 axes …" in run.shown
    assert "picture" not in run.shown  # a text model: words only
    told = run.html.split("What the model was told about the figure:", 1)[1]
    assert "mar=2, jan=4, feb=9; ascending" in told.split("</details>", 1)[0]
    # The attempt that drew the wrong chart was undone as any failed one is.
    assert run_cell(kernel, "print('first_try' in dir())").stdout.strip() == "False"


def test_a_chart_still_wrong_when_the_retries_are_spent_fails_the_request(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py(SORTED.format(down=False)), py(SORTED.format(down=False).replace("jan", "Jan")))
    run = run_cell(kernel, "%%ask --retries 1\nplot a bar chart of sales by month, largest first")
    assert run.status == "error" and len(model_server.requests) == 2, run.shown
    assert f"ChartMismatch: {MISMATCH}" in run.shown
    # Not asked for an order: the same chart is a success in one attempt.
    model_server.script(py(SORTED.format(down=False)))
    run = run_cell(kernel, "%%ask\nbar chart of the monthly sales")
    assert run.status == "ok" and len(model_server.requests) == 1


def test_a_vision_model_sees_the_failed_attempts_picture_in_the_fix_request(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py(SORTED.format(down=False)), Reply(py(SORTED.format(down=True)), require=MISMATCH))
    run = run_cell(kernel, "%%ask --model gpt-4o\nbar chart of sales per month, largest first")
    assert run.status == "ok", run.reply
    first, fix = model_server.requests
    assert pictures_sent(first) == [] and len(pictures_sent(fix)) == 1
    assert "(the model was sent the figure's picture)" in run.shown


PHOTO = ("import io\nfrom PIL import Image as Picture\nfrom IPython.display import Image, display\n"
         "buf = io.BytesIO()\nPicture.new('RGB', (640, 480), 'white').save(buf, format='PNG')\n"
         "display(Image(data=buf.getvalue()))")


def test_a_displayed_png_that_is_no_chart_is_said_by_its_size_and_shown_only_to_a_vision_model(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    # A model that cannot see it: no answer is asked from a picture it cannot read.
    model_server.script(py(PHOTO))
    run = run_cell(kernel, "%%ask\nwhat does the picture show? display it")
    assert run.status == "ok", run.reply
    assert len(model_server.requests) == 1
    # A model that sees: asked for the answer with the picture, and its size in words.
    model_server.script(py(PHOTO), Reply("A white rectangle.", require="an image 640×480 px, not a chart"))
    run = run_cell(kernel, "%%ask --model gpt-4o\nwhat does the picture show? display it")
    assert run.status == "ok", run.reply
    assert model_server.misses == []
    first, answer = model_server.requests
    assert pictures_sent(first) == [] and pictures_sent(answer) == [(640, 480)]


def test_the_context_says_what_the_users_own_figures_show(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    # A chart the person drew in a cell of their own, before asking about it.
    assert run_cell(kernel, BARS.replace("Sales by month", "Own sales")).status == "ok"
    model_server.script(Reply(py("print('ok')"), require="title 'Own sales'"))
    run = run_cell(kernel, "%%ask\nredraw my chart above with the bars largest first")
    assert run.status == "ok", run.reply
    assert model_server.misses == []
    context = model_server.request_texts()[0]
    assert DESCRIBED in context and "[image/png image" in context
