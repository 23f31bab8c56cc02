"""What a transactional attempt costs: snapshot + restore of a 1,000,000-row
DataFrame (and a numpy array, a list), next to a plain ``copy()`` baseline.

    python bench/bench_snapshot.py

pandas >= 3 copies on write, so the snapshot is a shallow copy that pandas
protects, and the real copy happens only for the columns an attempt writes.
The "write" rows include that cost: the attempt doubles one column.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from jupyter_ai_ci.safety.transaction import Transaction

ROWS = 1_000_000
REPEAT = 7


def best(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"x": np.arange(ROWS), "y": rng.random(ROWS),
                         "region": rng.choice(["north", "south", "east"], ROWS)})


def main() -> None:
    ns: dict[str, object] = {"df": frame(), "arr": np.arange(ROWS, dtype=float), "rows": list(range(ROWS))}
    t = Transaction(ns)
    cases = {
        "df": ("df['x'] *= 2", lambda: ns["df"].copy()),  # type: ignore[attr-defined]
        "arr": ("arr *= 2", lambda: ns["arr"].copy()),  # type: ignore[attr-defined]
        "rows": ("rows.append(1)", lambda: list(ns["rows"])),  # type: ignore[call-overload]
    }
    print(f"{'object':<8}{'baseline copy':>16}{'snapshot':>12}{'restore':>12}{'write+restore':>16}")
    for name, (code, baseline) in cases.items():
        copy_s = best(baseline)

        def snapshot(code: str = code) -> None:
            t.begin([code])
            t.commit()

        snap_s = best(snapshot)

        def cycle(code: str = code) -> tuple[float, float]:
            t.begin([code])
            exec(code, ns)  # noqa: S102 -- the attempt being undone
            t0 = time.perf_counter()
            t.rollback()
            return time.perf_counter() - t0, 0.0

        restore_s = statistics.median(cycle()[0] for _ in range(REPEAT))
        whole_s = best(cycle)
        print(f"{name:<8}{copy_s * 1e3:>13.2f} ms{snap_s * 1e3:>9.2f} ms{restore_s * 1e3:>9.2f} ms"
              f"{whole_s * 1e3:>13.2f} ms")
    assert ns["df"]["x"].iloc[1] == 1  # type: ignore[index]  # every write was undone


if __name__ == "__main__":
    main()
