"""Figures described from the live object (issue #40): Matplotlib, seaborn, pandas, Plotly.

Real figures drawn with the real libraries (Agg canvases of their own, no pyplot state), read
by ``context/figures.py``; Plotly specs as a live figure gives them and as ``fig.show()``
publishes them (packed arrays), read by ``notebook/plotlyspec.py``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from jupyter_ai_ci.context.figures import describe
from jupyter_ai_ci.notebook.figuretext import FIGURE_KEY, MAX_TOKENS, fit
from jupyter_ai_ci.notebook.plotlyspec import PLOTLY_MIME, describe_spec, values
from jupyter_ai_ci.notebook.reader import figure_words
from jupyter_ai_ci.tokens import count_tokens


def drawn(fig: Figure) -> str:
    """As the inline backend has it when the description is taken: drawn for its PNG."""
    FigureCanvasAgg(fig).draw()
    text = describe(fig)
    assert count_tokens(text) <= MAX_TOKENS, text
    return text


def test_bars_say_labels_values_order_and_extremes() -> None:
    fig = Figure()
    ax = fig.subplots()
    ax.bar(["north", "south", "east", "west"], [3, 9, 4, 12])
    ax.set_title("Revenue by region")
    ax.set_ylabel("revenue")
    text = drawn(fig)
    assert "axes 1: bars" in text
    assert "title 'Revenue by region'" in text and "y label 'revenue'" in text
    assert "x ticks 'north' … 'west' (4)" in text
    assert "4 bars left to right: north=3, south=9, east=4, west=12; not sorted" in text
    assert "largest west=12, smallest north=3" in text


def test_bar_order_is_the_drawn_order_ascending_or_descending() -> None:
    fig = Figure()
    left, right = fig.subplots(1, 2)
    left.bar(["a", "b", "c"], [1, 2, 5])
    right.barh(["a", "b", "c"], [1, 2, 5])  # y runs upwards: read top to bottom, c first
    text = drawn(fig)
    assert "3 bars left to right: a=1, b=2, c=5; ascending" in text
    assert "3 bars top to bottom: c=5, b=2, a=1; descending" in text
    right.invert_yaxis()  # now a is on top
    assert "3 bars top to bottom: a=1, b=2, c=5; ascending" in drawn(fig)


def test_a_line_of_100000_points_is_counted_and_ranged_never_listed() -> None:
    fig = Figure()
    ax = fig.subplots()
    x = np.linspace(0, 10, 100_000)
    ax.plot(x, np.sin(x / 4), label="sin")
    ax.plot(x, 2 * np.cos(x), label="cos")
    ax.legend()
    ax.set_xlabel("t")
    text = drawn(fig)
    assert "legend: 'sin', 'cos'" in text
    assert "line 'sin': 100000 points, x 0…10, y 0…1, highest at x=6.283" in text
    assert "line 'cos': 100000 points, x 0…10, y -2…2" in text
    assert len(text) < 600


def test_scatter_says_points_and_ranges() -> None:
    fig = Figure()
    ax = fig.subplots()
    ax.scatter([1, 2, 3, 4], [10, 40, 20, 30], label="obs")
    assert "points 'obs': 4 points, x 1…4, y 10…40" in drawn(fig)


def test_20_subplots_describe_the_first_few_then_count() -> None:
    fig = Figure()
    for i, ax in enumerate(fig.subplots(4, 5).flat):
        ax.plot([0, 1], [i, i + 1])
    text = drawn(fig)
    assert text.startswith("Matplotlib figure: 20 axes")
    assert "axes 4: lines" in text and "axes 5:" not in text
    assert "… and 16 more axes, not described" in text


def test_pandas_plot_and_seaborn_are_read_as_the_matplotlib_they_draw() -> None:
    fig = Figure()
    ax = fig.subplots()
    pd.Series([5, 3, 1], index=["x", "y", "z"]).plot.bar(ax=ax, title="by key")
    text = drawn(fig)
    assert "title 'by key'" in text and "3 bars left to right: x=5, y=3, z=1; descending" in text
    sns = pytest.importorskip("seaborn")
    fig = Figure()
    ax = fig.subplots()
    sns.barplot(data=pd.DataFrame({"k": list("abcab"), "v": [1, 2, 3, 4, 5]}), x="k", y="v", ax=ax)
    text = drawn(fig)
    assert "x label 'k'; y label 'v'" in text
    assert "3 bars left to right: a=2.5, b=3.5, c=3; not sorted; largest b=3.5" in text
    assert "3 error bars" in text  # seaborn's confidence whiskers: counted, not taken for lines


def test_a_figure_the_describer_cannot_read_says_so_in_one_line() -> None:
    fig = Figure()
    ax = fig.subplots()
    ax.plot([1, 2])
    ax.get_lines = lambda: 1 / 0  # type: ignore[method-assign]
    assert describe(fig) == "Figure: not described (ZeroDivisionError: division by zero)"


def test_an_animation_is_not_described() -> None:
    from matplotlib.animation import FuncAnimation

    fig = Figure()
    FigureCanvasAgg(fig)
    animation = FuncAnimation(fig, lambda i: [], frames=2)
    assert describe(animation) == "an animation: not described"
    animation._draw_was_started = True  # no warning that it never ran


def test_anything_else_is_no_figure() -> None:
    assert describe(pd.DataFrame({"a": [1]})) == "" and describe(3) == ""


def test_plotly_figures_from_the_object_and_from_the_published_spec() -> None:
    px = pytest.importorskip("plotly.express")
    pio = pytest.importorskip("plotly.io")
    fig = px.bar(x=["a", "b", "c"], y=[3, 1, 2], title="P", labels={"x": "region", "y": "sales"})
    text = describe(fig)
    assert text.startswith("Plotly figure 'P': 1 trace")
    assert "x label 'region'; y label 'sales'" in text
    assert "3 bars left to right: a=3, b=1, c=2; not sorted; largest a=3, smallest b=1" in text
    fig.update_xaxes(categoryorder="total descending")  # drawn sorted, whatever the data's order
    assert "a=3, c=2, b=1; descending" in describe(fig)
    # What fig.show() publishes: JSON with packed numeric arrays.
    line = px.line(x=np.arange(100_000), y=np.sin(np.arange(100_000) / 40_000.0), title="wave")
    spec = json.loads(pio.to_json(line))
    text = describe_spec(spec)
    assert "line: 100000 points, x 0…1e+05, y 0…1, highest at x=6.283e+04" in text
    assert figure_words({PLOTLY_MIME: spec, "text/html": "<div>"}, {}) == text
    scatter = px.scatter(x=[1, 2, 3], y=[4, 6, 5])
    assert "points: 3 points, x 1…3, y 4…6" in describe(scatter)


def test_packed_arrays_are_read_without_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    packed = {"dtype": "f8", "bdata": "AAAAAAAA8D8AAAAAAAAAQA=="}  # [1.0, 2.0]
    assert list(values(packed)) == [1.0, 2.0]
    monkeypatch.delitem(sys.modules, "numpy")
    assert values(packed) == [1.0, 2.0]
    spec = {"data": [{"type": "bar", "x": ["a", "b"], "y": packed}], "layout": {}}
    assert "2 bars left to right: a=1, b=2; ascending" in describe_spec(spec)


def test_what_an_output_is_said_to_show() -> None:
    assert figure_words({"image/png": "…"}, {FIGURE_KEY: "Matplotlib figure: 1 axes"}) == "Matplotlib figure: 1 axes"
    # A PNG file shown (IPython.display.Image): its size; the picture itself goes to vision models only.
    import base64
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (640, 480), "white").save(out, format="PNG")
    png = base64.b64encode(out.getvalue()).decode()
    shown = {"image/png": png, "text/plain": "<IPython.core.display.Image object>"}
    assert figure_words(shown, {}) == "an image 640×480 px, not a chart"
    assert figure_words({"image/png": "…"}, {}) == "an image, not a chart"  # unreadable: no size
    assert figure_words({"image/jpeg": "…"}, {}) == "an image, not a chart"
    # A Matplotlib figure from a kernel that does not describe figures: a chart all the same, unsaid.
    assert figure_words({"image/png": png, "text/plain": "<Figure size 640x480 with 1 Axes>"}, {}) == ""
    widget: dict[str, Any] = {"application/vnd.jupyter.widget-view+json": {"model_id": "x"}}
    assert figure_words(widget, None) == "an interactive widget: not described"
    assert len(figure_words({}, {FIGURE_KEY: "x" * 10_000})) == 3000  # a browser's output is bounded


def test_a_description_is_cut_at_its_token_budget() -> None:
    text = fit([f"line {i} " + "word " * 20 for i in range(100)])
    assert count_tokens(text) <= MAX_TOKENS
    assert text.endswith("more lines left out")
    assert fit(["x" * 5000]).startswith("x" * 100) and count_tokens(fit(["x" * 5000])) <= MAX_TOKENS


def test_the_browser_s_outputs_carry_the_same_words() -> None:
    from jupyter_ai_ci.executors.frontend import result_from_reply

    shown = {"output_type": "display_data", "data": {"image/png": "…", "text/plain": "<Figure>"},
             "metadata": {FIGURE_KEY: "Matplotlib figure: 1 axes"}}
    result = result_from_reply({"outputs": [shown, {**shown, "output_type": "execute_result"}]}, 4000)
    assert result.figures == ("Matplotlib figure: 1 axes", "Matplotlib figure: 1 axes")
    assert result.displays == ("image/png <Figure>",)
