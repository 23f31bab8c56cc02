"""%ask_usage's table: columns stay in line whatever the request."""

from __future__ import annotations

from jupyter_ai_ci.core.usage import UsageLog, render
from jupyter_ai_ci.events import Outcome, Usage


def test_replayed_rows_stay_in_their_columns() -> None:
    # Found by a newcomer: " (replayed)" after a 40-character label pushed the model and the
    # numbers under the wrong headers.
    log = UsageLog()
    log.add("Plot the total revenue per region of the sales table", "qwen", Outcome("success", usage=Usage(900, 40)),
            replayed=False)
    log.add("Plot the total revenue per region of the sales table", "qwen", Outcome("success"), replayed=True)
    log.add("short", "qwen", Outcome("success"), replayed=True)
    header, *rows = render(log, {}).splitlines()[:-2]  # not the session row, the prices hint
    start = header.index("model")
    assert [row[start:start + 4] for row in rows] == ["qwen"] * 3, rows
    assert "(replayed)" in rows[1] and "…" in rows[1] and "short (replayed)" in rows[2]
