"""A chart that contradicts its request (core/chartcheck.py): the rule, on many phrasings both ways.

The descriptions are the real describer's, from real Matplotlib figures and Plotly specs: the
rule reads the words ``notebook/figuretext.py`` writes, so a change there that breaks it fails here.
"""

from __future__ import annotations

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from jupyter_ai_ci.context.figures import describe
from jupyter_ai_ci.core.chartcheck import asked_axes, asked_order, contradiction
from jupyter_ai_ci.notebook.plotlyspec import describe_spec


def bars(values: list[float], horizontal: bool = False, xlabel: str = "", ylabel: str = "") -> str:
    fig = Figure()
    ax = fig.subplots()
    labels = [f"r{i}" for i in range(len(values))]
    (ax.barh if horizontal else ax.bar)(labels, values)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    FigureCanvasAgg(fig).draw()
    return describe(fig)


UP, DOWN, MIXED = bars([1, 2, 5]), bars([5, 2, 1]), bars([2, 5, 1])


@pytest.mark.parametrize("request_", [
    "bar chart of revenue by region, largest first",
    "Plot revenue per region with the biggest first",
    "bar plot of sales by month, highest sales first",
    "bars of counts from highest to lowest",
    "show the regions from largest to smallest",
    "revenue per product in descending order",
    "sort the bars descending and plot them",
    "plot df sorted by revenue, descending",
    "Bar chart, sorted in decreasing order",
    "categories ordered by count, decreasing",
    "countries with the most medals first",
    "revenue by month, largest first",
])
def test_asks_for_the_largest_first(request_: str) -> None:
    assert asked_order(request_) == "down"
    assert contradiction(request_, [UP]).startswith("the bars ascend from left to right, but the request asked "
                                                    "for largest first")
    assert contradiction(request_, [MIXED]).startswith("the bars are not sorted")
    assert contradiction(request_, [DOWN]) == ""


@pytest.mark.parametrize("request_", [
    "bar chart of revenue by region, smallest first",
    "plot the costs from lowest to highest",
    "bars in ascending order of revenue",
    "sort the values ascending then bar plot",
    "revenue per region in increasing order",
    "the fewest complaints first, as bars",
])
def test_asks_for_the_smallest_first(request_: str) -> None:
    assert asked_order(request_) == "up"
    assert contradiction(request_, [DOWN]) == ("the bars descend from left to right, "
                                               "but the request asked for smallest first")
    assert contradiction(request_, [UP]) == ""


@pytest.mark.parametrize("request_", [
    "bar chart of revenue by region",
    "plot sales per month",
    "Which month has the largest revenue? plot it",
    "show the top 5 regions as bars",
    "bar chart of the highest value per group",
    "sales are increasing: show it with bars",
    "plot the revenue, biggest regions highlighted in red",
    "order the columns of df and plot",  # "order" alone asks nothing of the bars
    "bar chart of revenue, sorted by month descending",  # an order by label: not the values'
    "bar chart of names in alphabetical order",
    "revenue by month in chronological order, as bars",
    "histogram of ages, sorted",
    "bar chart of revenue by region, no need to sort",
    "plot the unsorted values as bars",
    "do not sort the bars, largest first is not needed",
    "",
])
def test_a_request_that_asks_no_order_of_the_bars_is_never_flagged(request_: str) -> None:
    assert asked_order(request_) == ""
    assert contradiction(request_, [UP, DOWN, MIXED]) == ""


def test_sorted_without_a_direction_takes_either_way() -> None:
    request = "bar chart of the counts, sorted"
    assert asked_order(request) == "sorted"
    assert contradiction(request, [UP]) == "" and contradiction(request, [DOWN]) == ""
    assert contradiction(request, [MIXED]) == ("the bars are not sorted from left to right, "
                                               "but the request asked for them sorted")


def test_horizontal_bars_are_read_from_the_top() -> None:
    # barh draws the first value at the bottom: data sorted descending reads as ascending from the top.
    drawn = bars([5, 2, 1], horizontal=True)
    assert contradiction("horizontal bars, largest first", [drawn]) == (
        "the bars ascend from top to bottom, but the request asked for largest first")
    assert contradiction("horizontal bars, largest first", [bars([1, 2, 5], horizontal=True)]) == ""


def test_only_bars_are_checked_and_grouped_bars_are_not() -> None:
    fig = Figure()
    ax = fig.subplots()
    ax.plot([1, 2, 3], [3, 2, 1])
    FigureCanvasAgg(fig).draw()
    assert contradiction("line of sales, largest first", [describe(fig)]) == ""
    fig = Figure()
    ax = fig.subplots()
    ax.bar([0, 1, 2], [1, 2, 3], width=0.4, label="2023")
    ax.bar([0.4, 1.4, 2.4], [3, 1, 2], width=0.4, label="2024")
    FigureCanvasAgg(fig).draw()
    assert contradiction("grouped bars, largest first", [describe(fig)]) == ""
    # A second axes of single bars is still checked.
    fig = Figure()
    left, right = fig.subplots(1, 2)
    left.plot([1, 2], [1, 2])
    right.bar(["a", "b", "c"], [1, 2, 3])
    FigureCanvasAgg(fig).draw()
    assert contradiction("bars, largest first", [describe(fig)]).startswith("the bars ascend")
    assert contradiction("bars, largest first", []) == ""


def test_plotly_bars_are_checked_alike() -> None:
    spec = {"data": [{"type": "bar", "x": ["a", "b", "c"], "y": [1, 4, 9]}], "layout": {}}
    assert contradiction("bars, highest first", [describe_spec(spec)]).startswith("the bars ascend from left to right")
    spec["data"][0]["y"] = [9, 4, 1]
    assert contradiction("bars, highest first", [describe_spec(spec)]) == ""


@pytest.mark.parametrize("request_, axes", [
    ("plot revenue with region on the x axis and revenue on the y-axis", {"x": "region", "y": "revenue"}),
    ("scatter: x=height, y=weight", {"x": "height", "y": "weight"}),
    ("x axis: 'unit price', y axis: total_sales", {"x": "unit price", "y": "total sales"}),
    ("bar chart of revenue by region", {}),
    ("plot it on the x axis", {}),
])
def test_the_names_a_request_puts_on_the_axes(request_: str, axes: dict[str, str]) -> None:
    assert asked_axes(request_) == axes


def test_swapped_axes_are_flagged_and_another_label_is_not() -> None:
    request = "bar chart with region on the x axis and revenue on the y axis"
    swapped = bars([1, 2, 3], xlabel="revenue", ylabel="region")
    assert contradiction(request, [swapped]) == ("the x axis is labelled 'revenue', but the request asked for "
                                                 "'region' on the x axis and 'revenue' on the y axis")
    assert contradiction(request, [bars([1, 2, 3], xlabel="Region", ylabel="revenue")]) == ""
    assert contradiction(request, [bars([1, 2, 3], xlabel="Regions of Europe", ylabel="count")]) == ""
    assert contradiction(request, [bars([1, 2, 3])]) == ""  # no labels: nothing to contradict
    # One axis named: a label with another name is not reliable enough to fail an attempt.
    assert contradiction("region on the x axis", [swapped]) == ""


def test_the_loop_fails_a_contradicting_chart_and_asks_anew_with_the_sentence_when_fixing_from_start() -> None:
    from jupyter_ai_ci.core.loop import LoopSettings, agent_loop
    from jupyter_ai_ci.events import ExecutionResult
    from jupyter_ai_ci.model.client import ScriptedClient
    from jupyter_ai_ci.run.drive import drive

    class Drawing:
        """Runs nothing: the code 'up' draws ascending bars, any other descending ones."""

        def execute(self, code: str) -> ExecutionResult:
            return ExecutionResult(figures=(UP if "up" in code else DOWN,))

    model = ScriptedClient(["```python\nup\n```", "```python\ndown\n```"])
    loop = agent_loop("bars, largest first", "ctx", LoopSettings(fix_from_start=True))
    outcome = drive(loop, model, Drawing())  # type: ignore[arg-type]
    assert outcome.status == "success" and len(outcome.attempts) == 2
    assert outcome.attempts[0].error is not None and outcome.attempts[0].error.ename == "ChartMismatch"
    asked = model.requests[1][-1].content  # the request anew, the failure said in words
    assert asked.startswith("ctx\n## Request\nbars, largest first\n\nNote: an earlier attempt at this request drew a "
                            "chart that does not match it: the bars ascend from left to right, but the request "
                            "asked for largest first.")
    assert "The figures it drew show:" in asked and "r0=1, r1=2, r2=5; ascending" in asked
