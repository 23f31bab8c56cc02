"""Three ways to keep replay records, measured before one was chosen (docs/reproducibility.md):

- ``files``: one JSON file per record, written beside it and renamed over it (no lock);
- ``sqlite``: one SQLite database in WAL mode (``synchronous=NORMAL``, a busy timeout);
- ``jsonl``: one append-only JSON-lines file under ``flock``; a read scans it (last line wins).

    python bench/compare_replay_stores.py

For each: put and get of one record (median µs) in a store of 10 and of 1,000 records, and
4 processes × 250 puts at once into one store (records kept, wall time).  Records are of
the real size (~1 kB).  The product's own store is measured by ``bench_replay_store.py``.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BODY = {"request": "plot revenue by month", "replies": ["```python\n" + "x = 1\n" * 80 + "```"], "sig": "0" * 64}
REPEAT = 200


class Files:
    def __init__(self, root: Path) -> None:
        self.root = root / "store"
        self.root.mkdir(exist_ok=True)

    def put(self, key: str, value: dict[str, Any]) -> None:
        tmp = self.root / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(value))
        os.replace(tmp, self.root / f"{key}.json")

    def get(self, key: str) -> Any:
        return json.loads((self.root / f"{key}.json").read_text())

    def count(self) -> int:
        return len(list(self.root.glob("*.json")))


class Sqlite:
    def __init__(self, root: Path) -> None:
        self.db = sqlite3.connect(root / "store.sqlite", timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS r (key TEXT PRIMARY KEY, value TEXT)")

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.db.execute("INSERT OR REPLACE INTO r VALUES (?, ?)", (key, json.dumps(value)))

    def get(self, key: str) -> Any:
        return json.loads(self.db.execute("SELECT value FROM r WHERE key = ?", (key,)).fetchone()[0])

    def count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM r").fetchone()[0])


class Jsonl:
    def __init__(self, root: Path) -> None:
        self.path = root / "store.jsonl"

    def put(self, key: str, value: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write(json.dumps({"key": key, **value}) + "\n")

    def _all(self) -> dict[str, Any]:
        with open(self.path, encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_SH)
            return {r["key"]: r for r in map(json.loads, f)}

    def get(self, key: str) -> Any:
        return self._all()[key]

    def count(self) -> int:
        return len(self._all())


KINDS: dict[str, Any] = {"files": Files, "sqlite": Sqlite, "jsonl": Jsonl}


def median_us(fn: Any) -> float:
    times = []
    for i in range(REPEAT):
        t0 = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def costs(kind: str, size: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as d:
        store = KINDS[kind](Path(d))
        for i in range(size):
            store.put(f"{i:032x}", BODY)
        put = median_us(lambda i: store.put(f"new{i:029x}", BODY))
        get = median_us(lambda i: store.get(f"{i % size:032x}"))
        return put, get


def _writer(kind: str, root: str, n: int, start: int) -> None:
    store = KINDS[kind](Path(root))
    for i in range(start, start + n):
        store.put(f"{i:032x}", BODY)


def concurrent(kind: str, writers: int = 4, each: int = 250) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as d:
        KINDS[kind](Path(d))  # made once, as a first run would
        t0 = time.perf_counter()
        procs = [multiprocessing.Process(target=_writer, args=(kind, d, each, w * each)) for w in range(writers)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        return KINDS[kind](Path(d)).count(), time.perf_counter() - t0


def main() -> None:
    print(f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, {REPEAT} puts/gets per figure")
    print(f"{'store':8} {'put@10':>9} {'put@1000':>9} {'get@10':>9} {'get@1000':>9}  {'4x250 kept':>10} {'wall':>7}")
    for kind in KINDS:
        p10, g10 = costs(kind, 10)
        p1k, g1k = costs(kind, 1000)
        kept, wall = concurrent(kind)
        print(f"{kind:8} {p10:8.0f}µ {p1k:8.0f}µ {g10:8.0f}µ {g1k:8.0f}µ  {kept:>6}/1000 {wall:6.2f}s")


if __name__ == "__main__":
    main()
