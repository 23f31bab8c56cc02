"""Chart tasks (issue #40): requests whose Figure is checked for what a chart must get right.

Each checker reads the Figure's summary (``answer._figure``): the bars' order as read (left to
right, or top to bottom when they lie down), which column is on which axis (tick labels, the
means of a scatter's x and y), the title and axis labels, the number of series.  A chart that
runs but ignores "largest first" or swaps the axes fails here, as it would for the person who
asked.  ``--suite charts`` runs these with the main suite's plot tasks (bench/success_rate.py).
"""

from __future__ import annotations

from typing import Any

from .suite import EMP, PD, REVENUE, SALES, SENS
from .tasks import Checker, Task, bars_match, close, line_matches

PLT = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
FIGURE = " answer: the matplotlib Figure."
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _axes(answer: Any) -> list[dict[str, Any]]:
    figure = answer.get("figure") if isinstance(answer, dict) else None
    return [ax for ax in figure if isinstance(ax, dict)] if isinstance(figure, list) else []


def _read(ax: dict[str, Any]) -> list[float]:
    """The bars' sizes in the order a reader meets them: left to right, or top to bottom."""
    rects = ax.get("rects") or []
    lying = len(rects) > 1 and len({round(r[0], 6) for r in rects}) == 1 and len({round(r[1], 6) for r in rects}) > 1
    if lying:
        return [r[2] for r in sorted(rects, key=lambda r: -(r[1] + r[3] / 2))]
    return [r[3] for r in sorted(rects, key=lambda r: r[0] + r[2] / 2)]


def all_of(*checks: Checker) -> Checker:
    return lambda got, want: all(check(got, want) for check in checks)


def ordered(down: bool) -> Checker:
    """The bars are the expected ones, read largest first (``down``) or smallest first."""
    def check(got: Any, want: Any) -> bool:
        axes = [ax for ax in _axes(got) if ax.get("rects")]
        if len(axes) != 1:
            return False
        sizes = _read(axes[0])
        return bars_match(got, want) and sizes == sorted(sizes, reverse=down)
    return check


def named(field: str) -> Checker:
    """The first axes' ``field`` (title, xlabel, ylabel) says what the reference's says."""
    def check(got: Any, want: Any) -> bool:
        got_axes, want_axes = _axes(got), _axes(want)
        return bool(got_axes and want_axes) and (
            str(got_axes[0].get(field, "")).strip().lower() == str(want_axes[0][field]).strip().lower())
    return check


def ticks(axis: str) -> Checker:
    """The bars stand on the reference's categories, in its order (``axis``: "xticks"/"yticks")."""
    def check(got: Any, want: Any) -> bool:
        got_axes, want_axes = _axes(got), _axes(want)
        shown = [t for t in (got_axes[0].get(axis) or []) if t] if got_axes else []
        return bool(want_axes) and shown == [t for t in want_axes[0][axis] if t]
    return check


def in_order(got: Any, want: Any) -> bool:
    """The bars' sizes, as read, are the reference's, in its order."""
    got_axes, want_axes = _axes(got), _axes(want)
    return bool(got_axes and want_axes) and close(_read(got_axes[0]), _read(want_axes[0]), rel=1e-2, abs_=0.5)


def series(lines: int = 0, groups: int = 0) -> Checker:
    """As many lines (or groups of bars) as the reference, named alike in the legend."""
    def check(got: Any, want: Any) -> bool:
        got_axes, want_axes = _axes(got), _axes(want)
        if not got_axes or not want_axes:
            return False
        ax = got_axes[0]
        counted = len(ax["lines"]) == lines if lines else ax.get("bar_groups") == groups
        return counted and sorted(ax.get("legend") or []) == sorted(want_axes[0]["legend"])
    return check


def scattered(got: Any, want: Any) -> bool:
    """One set of points, its x and y the reference's columns (their means tell which is which)."""
    got_axes, want_axes = _axes(got), _axes(want)
    if not got_axes or not want_axes or len(got_axes[0].get("points") or []) != 1:
        return False
    (mine,), (theirs,) = got_axes[0]["points"], want_axes[0]["points"]
    return bool(close(mine, theirs, rel=1e-3, abs_=1e-3))


CHARTS: list[Task] = [
    Task("chart_region_desc", "chart", f"{REVENUE} Draw a bar chart of total revenue per region with matplotlib, "
         "the largest bar first (left to right, descending)." + FIGURE,
         SALES + PLT + "r = s.groupby('region')['revenue'].sum().sort_values(ascending=False)\n"
         "ax.bar(r.index, r.values)\nanswer = fig", ordered(down=True)),
    Task("chart_product_barh", "chart", "Draw a horizontal bar chart of total units per product in sales.csv "
         "with matplotlib, the largest bar at the top." + FIGURE,
         PD + PLT + "u = pd.read_csv('sales.csv').groupby('product')['units'].sum().sort_values()\n"
         "ax.barh(u.index, u.values)\nanswer = fig", ordered(down=True)),
    Task("chart_dept_asc", "chart", "Draw a bar chart of the headcount per dept in employees.csv with "
         "matplotlib, smallest first (ascending, left to right)." + FIGURE,
         EMP + PLT + "h = e['dept'].value_counts().sort_values()\nax.bar(h.index, h.values)\nanswer = fig",
         ordered(down=False)),
    Task("chart_units_month", "chart", "Plot total units per month of 2024 in sales.csv as a line with "
         "matplotlib, months in order, titled 'Units per month', the x axis labelled 'month' and the y axis "
         "labelled 'units'." + FIGURE,
         PD + PLT + "s = pd.read_csv('sales.csv')\nm = s.groupby(s['date'].str[:7])['units'].sum().sort_index()\n"
         "ax.plot(m.index, m.values)\nax.set_title('Units per month')\nax.set_xlabel('month')\n"
         "ax.set_ylabel('units')\nanswer = fig",
         all_of(line_matches, named("title"), named("xlabel"), named("ylabel"))),
    Task("chart_age_salary", "chart", "Scatter plot of employees.csv with age on the x axis and salary on the y "
         "axis, with matplotlib." + FIGURE,
         EMP + PLT + "ax.scatter(e['age'], e['salary'])\nax.set_xlabel('age')\nax.set_ylabel('salary')\n"
         "answer = fig", scattered),
    Task("chart_sensor_lines", "chart", "With matplotlib, one line per sensor of the daily mean temperature in "
         "sensors.csv (days in order), all on one axes, with a legend naming each sensor (S1, S2, S3)." + FIGURE,
         SENS + PLT + "d = t.groupby([t['timestamp'].dt.date, 'sensor'])['temperature'].mean().unstack()\n"
         "for name in d.columns:\n    ax.plot(d.index, d[name], label=name)\nax.legend()\nanswer = fig",
         series(lines=3)),
    Task("chart_region_product", "chart", "Grouped bar chart of total units per region in sales.csv with "
         "matplotlib: the regions on the x axis, one series of bars per product, a legend naming the "
         "products." + FIGURE,
         PD + "import matplotlib.pyplot as plt\ns = pd.read_csv('sales.csv')\n"
         "p = s.pivot_table(index='region', columns='product', values='units', aggfunc='sum', fill_value=0)\n"
         "ax = p.plot.bar()\nanswer = ax.get_figure()", all_of(series(groups=5), bars_match)),
    Task("chart_weekday_orders", "chart", "Bar chart of the number of orders per weekday in sales.csv with "
         "matplotlib, the weekdays in calendar order from Monday to Sunday, named on the x axis." + FIGURE,
         PD + PLT + "s = pd.read_csv('sales.csv', parse_dates=['date'])\n"
         f"n = s['date'].dt.day_name().value_counts().reindex({WEEKDAYS!r})\n"
         "ax.bar(n.index, n.values)\nanswer = fig", all_of(ticks("xticks"), in_order)),
    Task("chart_segment_desc", "chart", f"{REVENUE} Join sales.csv with customers_raw.csv (drop duplicate "
         "customer rows first) on customer_id, and draw a bar chart of total revenue per segment with "
         "matplotlib, largest first, titled 'Revenue by segment'." + FIGURE,
         SALES + "c = pd.read_csv('customers_raw.csv').drop_duplicates()\n" + PLT
         + "r = s.merge(c, on='customer_id').groupby('segment')['revenue'].sum().sort_values(ascending=False)\n"
         "ax.bar(r.index, r.values)\nax.set_title('Revenue by segment')\nanswer = fig",
         all_of(ordered(down=True), named("title"))),
    Task("chart_conversion", "chart", "Bar chart of the conversion rate (mean of converted) per group in "
         "ab_test.csv with matplotlib: the groups on the x axis in alphabetical order, the y axis labelled "
         "'conversion rate'." + FIGURE,
         PD + PLT + "ab = pd.read_csv('ab_test.csv')\nr = ab.groupby('group')['converted'].mean()\n"
         "ax.bar(r.index, r.values)\nax.set_ylabel('conversion rate')\nanswer = fig",
         all_of(ticks("xticks"), named("ylabel"), bars_match)),
]
