"""Time of `%load_ext jupyter_ai_ci` in a fresh interpreter, next to IPython alone.

Each run is a new interpreter: it imports IPython, makes a shell, then times
the `%load_ext` call alone.  Target: <= 0.15 s over the bare IPython import
(the extension must import nothing heavy; the openai SDK alone costs ~0.4 s).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

RUNS = 7
PROBE = """
import json, sys, time
t0 = time.perf_counter()
import IPython
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
t1 = time.perf_counter()
before = set(sys.modules)
ip.run_line_magic('load_ext', 'jupyter_ai_ci')
t2 = time.perf_counter()
new = sorted(m for m in set(sys.modules) - before if '.' not in m)
print(json.dumps({"ipython": t1 - t0, "load_ext": t2 - t1, "new": new}))
"""


def main() -> None:
    runs = [json.loads(subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                                      check=True).stdout) for _ in range(RUNS)]
    ipython = statistics.median(r["ipython"] for r in runs)
    load = statistics.median(r["load_ext"] for r in runs)
    print(f"median of {RUNS} fresh interpreters")
    print(f"  import IPython + shell (baseline)   {ipython * 1000:8.1f} ms")
    print(f"  %load_ext jupyter_ai_ci on top      {load * 1000:8.1f} ms   (target <= 150 ms)")
    print(f"  top-level modules it imported: {', '.join(runs[0]['new'])}")


if __name__ == "__main__":
    main()
