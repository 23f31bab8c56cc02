"""What a replay record costs as the store grows: put + get of one record in a store of 10
and of 1,000 records, through ``ReplayStore`` (signing and the signature check included).

    python bench/bench_replay_store.py

The ratio 1,000 : 10 is the figure (target ≤ 1.2x: a put never rewrites the other records).
Before the store kept one file per record, each put rewrote every record: an in-process
``%%ask`` took 15.8 ms with 10 records and 34.4 ms with 400.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from jupyter_ai_ci.notebook import signing
from jupyter_ai_ci.notebook.replay import Record, ReplayStore

REPEAT = 300
ROUNDS = 5  # sizes take turns, so a busy minute hits both


def record(key: str) -> Record:
    code = "```python\n" + "df['x'] = df['y'] * 2\n" * 20 + "```"  # about the size of a real record
    return Record(key, "double y into x", "gpt-4o-mini", "api.openai.com", (code,), 1, 812, 64, 1,
                  "2026-11-26T00:00:00Z")


def put_get(store: ReplayStore, round_: int) -> float:
    """Median seconds of one put and one get of a new record."""
    times = []
    for i in range(REPEAT):
        key = f"n{round_:03d}{i:028x}"
        t0 = time.perf_counter()
        store.put(record(key))
        found = store.get(key)
        times.append(time.perf_counter() - t0)
        assert found is not None and found.unverified == ""
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        os.environ.setdefault(signing.KEY_ENV, str(Path(d) / "replay.key"))
        stores = {}
        for size in (10, 1000):
            stores[size] = ReplayStore(Path(d) / f"s{size}")
            for i in range(size):
                stores[size].put(record(f"{i:032x}"))
        runs: dict[int, list[float]] = {10: [], 1000: []}
        for r in range(ROUNDS):
            for size, store in stores.items():
                runs[size].append(put_get(store, r))
                for f in store.path.glob(f"n{r:03d}*.json"):  # back to its size for the next round
                    f.unlink()
    small, large = statistics.median(runs[10]), statistics.median(runs[1000])
    print(f"put + get, store of   10 records: {small * 1e6:7.0f} µs (median of {ROUNDS} rounds x {REPEAT})")
    print(f"put + get, store of 1000 records: {large * 1e6:7.0f} µs")
    print(f"ratio 1000 : 10 = {large / small:.2f}x (target <= 1.2x)")


if __name__ == "__main__":
    main()
