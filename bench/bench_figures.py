"""Describing a figure (issue #40): its time next to drawing the same figure's PNG, and its tokens.

For each figure kind -- bars, a line of 100,000 points, a scatter of 100,000 points, 20
subplots, seaborn bars, a Plotly line of 100,000 points -- the median of ``REPEATS`` runs of
the description (``context/figures.describe``, what the kernel adds to a figure's display) and,
for Matplotlib, of rendering the PNG the inline backend makes anyway: the description's cost
as a share of the display it rides on.  Targets: <= 20 ms and <= 300 prompt tokens a figure.

    python -m bench.bench_figures
"""

from __future__ import annotations

import io
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

REPEATS = 15


def _median_ms(work: Callable[[], Any]) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _figures() -> dict[str, Any]:
    import numpy as np
    import pandas as pd
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rng = np.random.default_rng(0)
    made: dict[str, Any] = {}
    fig = Figure()
    fig.subplots().bar([f"r{i}" for i in range(12)], rng.random(12))
    made["12 bars"] = fig
    fig = Figure()
    x = np.linspace(0, 100, 100_000)
    fig.subplots().plot(x, np.sin(x))
    made["line, 100,000 points"] = fig
    fig = Figure()
    fig.subplots().scatter(rng.random(100_000), rng.random(100_000), s=1)
    made["scatter, 100,000 points"] = fig
    fig = Figure()
    for ax in fig.subplots(4, 5).flat:
        ax.bar(["a", "b", "c"], rng.random(3))
    made["20 subplots"] = fig
    try:
        import seaborn as sns

        fig = Figure()
        frame = pd.DataFrame({"k": rng.choice(list("abcdef"), 1000), "v": rng.random(1000)})
        sns.barplot(data=frame, x="k", y="v", ax=fig.subplots())
        made["seaborn bars"] = fig
    except ImportError:
        pass
    for figure in made.values():
        FigureCanvasAgg(figure).draw()  # type: ignore[no-untyped-call]  # as displayed: drawn for its PNG before it is described
    try:
        import plotly.express as px

        made["Plotly line, 100,000 points"] = px.line(x=np.arange(100_000), y=np.sin(np.arange(100_000) / 100))
    except ImportError:
        pass
    return made


def main() -> None:
    from jupyter_ai_ci.context.figures import describe
    from jupyter_ai_ci.tokens import count_tokens, counter_name

    print(f"{'figure':32} {'describe ms':>12} {'PNG ms':>8} {'share':>6} {'tokens':>7}")
    for name, figure in _figures().items():
        described = _median_ms(partial(describe, figure))
        png = 0.0
        if hasattr(figure, "savefig"):
            png = _median_ms(partial(figure.savefig, io.BytesIO(), format="png"))
        share = f"{described / png:.0%}" if png else "—"
        print(f"{name:32} {described:12.2f} {png:8.1f} {share:>6} {count_tokens(describe(figure)):7d}")
    print(f"(median of {REPEATS}; tokens: {counter_name()})")


if __name__ == "__main__":
    main()
