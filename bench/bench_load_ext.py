"""Cost of ``%load_ext jupyter_ai_ci``, as a ratio to IPython's own ``%load_ext autoreload``.

Milliseconds depend on the machine and on what else it is doing; a ratio to a
bundled IPython extension measured in the same run much less so.  Each
measurement is a fresh interpreter that imports IPython and makes a shell
(not timed), then times ``%load_ext <extension>`` alone.  The extensions take
turns, run after run, so a machine that gets busier slows them alike.

Target: jupyter_ai_ci <= 1.0x autoreload.  Exit status 1 above it; --no-check
only reports.  Also shown, not checked: the first cell run after the load
(jupyter_ai_ci's kernel tracker, started by the load, records every cell:
context/tracker.py), and the median of the next 60 cells, each one new, beside
the same cells with no extension loaded: what loading costs every cell after.

    python bench/bench_load_ext.py [--runs 9] [--no-check]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

BASELINE = "autoreload"
EXTENSIONS = (BASELINE, "storemagic", "jupyter_ai_ci")
NONE = "(none)"  # no extension: what the first cell costs anyway
TARGET = 1.0

PROBE = """
import json, sys, time
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
name = sys.argv[1]
before = set(sys.modules)
t0 = time.perf_counter()
if name != "(none)":
    ip.run_line_magic("load_ext", name)
t1 = time.perf_counter()
modules = len(set(sys.modules) - before)
t2 = time.perf_counter()
ip.run_cell("x = 1", store_history=True)
t3 = time.perf_counter()
cells = []
for i in range(60):  # cells after the first, each new (a notebook's cells differ): the tracker's steady cost
    source = f"y{i} = [x, {i}]; y{i}[0] = {i}"
    t4 = time.perf_counter()
    ip.run_cell(source, store_history=True)
    cells.append(time.perf_counter() - t4)
cells.sort()
print(json.dumps({"load": t1 - t0, "first_cell": t3 - t2, "cell": cells[len(cells) // 2], "modules": modules}))
"""


def measure(name: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", PROBE, name], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="fresh interpreters per extension (default 9)")
    parser.add_argument("--no-check", action="store_true", help="report only; exit 0 whatever the ratio")
    args = parser.parse_args(argv)

    names = (*EXTENSIONS, NONE)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for _ in range(args.runs):
        for name in names:
            runs[name].append(measure(name))

    def median_ms(name: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[name]) * 1000

    base = median_ms(BASELINE, "load")
    print(f"%load_ext in a fresh shell: median of {args.runs} interpreters each; ratio to %load_ext {BASELINE}")
    print(f"{'extension':<15} {'load ms':>8} {'ratio':>7} {'modules':>8} {'first cell ms':>14} "
          f"{'next cells ms':>14} {'vs none':>8}")
    plain = median_ms(NONE, "cell")
    for name in names:
        load = median_ms(name, "load")
        ratio = f"{load / base:6.2f}x" if name != NONE else "      -"
        modules = statistics.median(r["modules"] for r in runs[name])
        cell = median_ms(name, "cell")
        print(f"{name:<15} {load:>8.2f} {ratio:>7} {modules:>8.0f} {median_ms(name, 'first_cell'):>14.2f} "
              f"{cell:>14.3f} {cell / plain:>7.2f}x")
    ours = median_ms("jupyter_ai_ci", "load") / base
    verdict = "ok" if ours <= TARGET else "OVER TARGET"
    print(f"jupyter_ai_ci: {ours:.2f}x {BASELINE} (target <= {TARGET:.1f}x): {verdict}")
    return 0 if args.no_check or ours <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
