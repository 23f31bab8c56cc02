"""The context at scale, in a real IPython shell: a 2 GB DataFrame is described without
being copied or scanned, and a big kernel's context stays within every budget.  (Its
time is measured as a ratio in bench/bench_context.py, not here.)"""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from jupyter_ai_ci.context.snapshot import Query, take
from jupyter_ai_ci.testing import ScriptedOpenAIServer

ROWS, COLUMNS = 2_700_000, 100  # float64: 2.16 GB


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_a_2gb_dataframe_is_described_without_copying_it(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pandas")
    # np.zeros maps zeroed pages lazily: the frame holds 2 GB that nothing has touched yet,
    # so a copy, a full-column computation (isna, describe) or a to_numpy shows up in
    # tracemalloc (numpy reports its buffers to it) and in the resident size.
    ip.run_cell("import numpy as np, pandas as pd\n"
                f"big = pd.DataFrame(np.zeros(({ROWS}, {COLUMNS})), copy=False,\n"
                f"                   columns=[f'col_{{i}}' for i in range({COLUMNS})])", store_history=True)
    frame = ip.user_ns["big"]
    assert frame.memory_usage(index=False).sum() > 2 * 10**9
    capsys.readouterr()
    rss = rss_bytes()
    tracemalloc.start()
    try:
        ip.run_cell("%ask --show-context summarise big by col_3", store_history=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    grown = rss_bytes() - rss
    out = capsys.readouterr().out
    assert f"big: pandas.DataFrame {ROWS} rows × {COLUMNS} columns [col_0:float64" in out
    assert "nulls: not counted (large)" in out
    assert peak < 50 * 2**20, f"describing the frame allocated {peak / 2**20:.0f} MB"
    assert grown < 200 * 2**20, f"the process grew by {grown / 2**20:.0f} MB"
    assert not model_server.requests


@pytest.mark.parametrize("budget", [400, 3000, 8000])
def test_a_big_kernel_never_exceeds_the_budget(ip: Any, model_server: ScriptedOpenAIServer, budget: int) -> None:
    pytest.importorskip("pandas")
    import numpy as np
    import pandas as pd

    block = np.random.default_rng(0).random((1_000, 100))
    ns = ip.user_ns
    for i in range(30):
        ns[f"frame_{i}"] = pd.DataFrame(block, columns=[f"m{i}_{c}" for c in range(100)], copy=False)
    for i in range(170):
        ns[f"value_{i}"] = {"k": list(range(i))} if i % 2 else "text " * i
    for i in range(500):
        ip.run_cell(f"frame_{i % 30}['m{i % 30}_1'].head(2)  # step {i}", store_history=True)
    for request in ("plot m3_1 against m3_2 from frame_3", "what changed in value_7?", "explain"):
        context = take(ip, Query(request, budget=budget)).context
        assert 0 < context.tokens <= budget
        assert "frame_" in context.text
