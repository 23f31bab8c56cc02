"""Context building: its time on a big kernel, and its tokens next to the
whole-history approach.

1. A kernel with 200 variables (30 DataFrames of 100,000 rows × 100 columns,
   large lists, nested dicts, arrays, strings, functions) and 500 executed
   cells with outputs; the same again with the 500 cells read from the
   notebook file named by JPY_SESSION_NAME.  Target: build <= 50 ms and
   tokens <= the budget.
2. A 200-cell notebook: tokens we send as a ratio to sending every cell with
   its output (the Chapyter way: the whole history in the prompt) and to every
   cell's code alone, counted the same way in the same run.  Target: <= 1/3.

The 30 DataFrames share one float64 block (80 MB) so the bench fits in
memory; describing a frame reads only its shape, columns, dtypes and head,
so sharing does not make it cheaper.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

REPEATS = 30
BUDGET = 3000


def _populate(ip: Any) -> None:
    import numpy as np
    import pandas as pd

    block = np.random.default_rng(0).random((100_000, 100))
    ns = ip.user_ns
    for i in range(30):
        ns[f"frame_{i}"] = pd.DataFrame(block, columns=[f"metric_{i}_{c}" for c in range(100)], copy=False)
    for i in range(50):
        ns[f"big_list_{i}"] = list(range(100_000))
    for i in range(60):
        ns[f"nested_{i}"] = {f"k{j}": {"inner": list(range(50)), "deep": {"x": j}} for j in range(1_000)}
    for i in range(20):
        ns[f"array_{i}"] = np.zeros((1_000, 1_000))
    for i in range(20):
        ns[f"text_{i}"] = "lorem ipsum " * 10_000
    for i in range(20):
        ip.run_cell(f"def helper_{i}(df, column='x', n=3):\n    '''Helper number {i}.'''\n    return df.head(n)",
                    store_history=False)


def _cells(n: int) -> list[tuple[str, str]]:
    """Cells typical of an analysis: code of a few lines and a printed result."""
    out = []
    for i in range(n):
        # Expressions, not assignments: the kernel keeps its 200 variables.
        f = f"frame_{i % 30}.iloc[:2000]"
        code = (f"# step {i}: mean by bucket\n{f}.groupby({f}['metric_{i % 30}_0'].round(1))"
                f"['metric_{i % 30}_1'].agg(['mean', 'count']).head(8)")
        output = "\n".join(f"{r / 10:.1f}  {0.5 + r / 100:.6f}  {100_000 + r * 7}" for r in range(8))
        out.append((code, "                mean   count\nmetric_0\n" + output))
    return out


def _notebook(cells: list[tuple[str, str]], path: Path) -> None:
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": str(i), "metadata": {}, "execution_count": i + 1, "source": code,
         "outputs": [{"output_type": "execute_result", "execution_count": i + 1, "metadata": {},
                     "data": {"text/plain": text}}]}
        for i, (code, text) in enumerate(cells)]}
    path.write_text(json.dumps(nb))


def _context(ip: Any, request: str) -> Any:
    """The context a %%ask run builds: the kernel snapshot (context, named variables, secrets)."""
    from jupyter_ai_ci.context.snapshot import Query, take

    return take(ip, Query(request, budget=BUDGET)).context


def _time(ip: Any, request: str) -> tuple[float, float, float, Any]:
    times, context = [], None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        context = _context(ip, request)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, min(times) * 1000, max(times) * 1000, context


def main() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from jupyter_ai_ci.tokens import count_tokens, counter_name

    ip: Any = InteractiveShell.instance()  # IPython is untyped
    ip.run_line_magic("load_ext", "jupyter_ai_ci")
    t0 = time.perf_counter()
    _populate(ip)
    with open(os.devnull, "w") as null, redirect_stdout(null):
        ip.run_cell("import pandas as pd, numpy as np", store_history=True)
        for code, _ in _cells(500):
            ip.run_cell(code, store_history=True)
    names = [n for n in ip.user_ns if not n.startswith("_") and n not in ("In", "Out", "exit", "quit")]
    print(f"kernel: {len(names)} names, {len(ip.user_ns['In']) - 1} cells in history "
          f"(set up in {time.perf_counter() - t0:.0f} s); tokens counted with {counter_name()}")

    request = "plot the mean of metric_3_1 by rounded metric_3_0 from frame_3"
    print(f"\n{'source of cells':<34} {'median ms':>9} {'range':>13} {'tokens':>7} {'budget':>7}")
    ms, low, high, context = _time(ip, request)
    worst = ms
    print(f"{'kernel history (In/Out)':<34} {ms:>9.1f} {low:>6.1f}-{high:<6.1f} {context.tokens:>7} {BUDGET:>7}")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "analysis.ipynb"
        _notebook(_cells(500), path)
        os.environ["JPY_SESSION_NAME"] = str(path)
        t0 = time.perf_counter()
        _context(ip, request)
        cold = (time.perf_counter() - t0) * 1000
        ms, low, high, context = _time(ip, request)
        worst = max(worst, ms)
        print(f"{'notebook file, 500 cells (cached)':<34} {ms:>9.1f} {low:>6.1f}-{high:<6.1f} {context.tokens:>7} "
              f"{BUDGET:>7}")
        print(f"{'notebook file, first read':<34} {cold:>9.1f}")

        print("\n200-cell notebook: tokens of the context vs the whole history")
        cells = _cells(200)
        _notebook(cells, path)
        context = _context(ip, request)
        whole = count_tokens("\n\n".join(f"{code}\n{out}" for code, out in cells))
        code_only = count_tokens("\n\n".join(code for code, _ in cells))
        print(f"  ours: {context.tokens} tokens (budget {BUDGET})")
        print(f"  Chapyter-style whole history, code + outputs: {whole} tokens -> ours is "
              f"{context.tokens / whole:.2f}x it")
        print(f"  whole history, code only:      {code_only} tokens -> ours is {context.tokens / code_only:.2f}x it")
        del os.environ["JPY_SESSION_NAME"]

    # What every cell pays for the assignment-order hook, with these 200 variables.
    from jupyter_ai_ci.context.tracker import tracker_for

    tracker = tracker_for(ip)
    result = ip.run_cell("frame_0.shape", store_history=False)
    hook = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        tracker.post_run_cell(result)
        hook.append(time.perf_counter() - t0)
    print(f"\npost_run_cell hook: {statistics.median(hook) * 1e6:.0f} µs per cell")
    print(f"\nbuild: worst median {worst:.1f} ms (target <= 50 ms); tokens <= budget; <= 1/3 of the whole history")


if __name__ == "__main__":
    main()
