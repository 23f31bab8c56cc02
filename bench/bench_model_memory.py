"""Memory of the managed local model with 1, 2 and 3 notebooks: one server per person and model,
beside another checkout's code (``--against DIR``, e.g. a checkout from before the shared server,
where every kernel started its own).

Each notebook is a real kernel (jupyter_client) that runs ``%load_ext jupyter_ai_ci`` and one
``%%ask --retries 0`` with no endpoint configured (so the packaged model answers); after each
notebook the resident memory of the model's processes (llama.cpp servers and their keepers) is
summed.  RSS counts the model file's pages in every process that maps them; PSS shares them out,
so it is what the machine really holds.  Every run has a runtime folder of its own, so no other
server on the machine is counted or used.

    python bench/bench_model_memory.py [--notebooks 3] [--against /path/to/checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel

from jupyter_ai_ci.model import llama_server, runtime

HERE = str(Path(__file__).resolve().parent.parent)
ASK = "%%ask --retries 0 --candidates 1\nCompute 6 * 7 and print it."  # one request, as in every run before 'auto'


def model_processes(folder: str) -> list[int]:
    """The llama.cpp servers and keepers started with this runtime folder."""
    mark = f"JUPYTER_RUNTIME_DIR={folder}".encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
            if args[1:3] in ([b"-m", b"llama_cpp.server"], [b"-m", b"jupyter_ai_ci.model.keeper"]) and \
                    mark in (proc / "environ").read_bytes().split(b"\0") and runtime.running(int(proc.name)):
                found.append(int(proc.name))
        except (OSError, IndexError):
            continue
    return found


def memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of ``pid`` in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        fields[name] = float(value.split()[0]) / 1024
    return fields.get("Rss", 0.0), fields.get("Pss", 0.0)


def run_cell(kc: Any, code: str, timeout: float = 900) -> str:
    reply = kc.execute_interactive(code, timeout=timeout, output_hook=lambda msg: None)
    return str(reply["content"]["status"])


def measure(code: str, notebooks: int) -> list[dict[str, Any]]:
    """Memory after 1 .. ``notebooks`` notebooks each asked once, with ``code``'s jupyter_ai_ci."""
    folder = tempfile.mkdtemp(prefix="aici-mem-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_") and k != "JUPYTER_AI_CI_MODEL"}
    env.update(PYTHONPATH=code, JUPYTER_RUNTIME_DIR=folder)
    kernels, rows = [], []
    try:
        for n in range(1, notebooks + 1):
            cwd = tempfile.mkdtemp(prefix="aici-mem-nb-", dir=folder)
            km, kc = start_new_kernel(kernel_name="python3", env=env, cwd=cwd, startup_timeout=60)
            kernels.append((km, kc))
            run_cell(kc, "%load_ext jupyter_ai_ci")
            status = run_cell(kc, ASK)
            pids = model_processes(folder)
            sizes = [memory_mb(p) for p in pids]
            rows.append({"notebooks": n, "status": status, "processes": len(pids),
                         "rss_mb": round(sum(r for r, _ in sizes)), "pss_mb": round(sum(p for _, p in sizes))})
            print(json.dumps({"code": code, **rows[-1]}), file=sys.stderr, flush=True)
    finally:
        for km, kc in kernels:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
        for file in Path(folder).glob(f"{runtime.PREFIX}*.json"):  # the shared server outlives its kernels
            entry = runtime.Entry(**json.loads(file.read_text()))
            llama_server.LocalServer.found(entry).stop()
        shutil.rmtree(folder, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notebooks", type=int, default=3)
    parser.add_argument("--against", default="", metavar="DIR", help="another checkout to measure beside this one")
    args = parser.parse_args(argv)
    sides = {"this": measure(HERE, args.notebooks)}
    if args.against:
        sides["against"] = measure(os.path.abspath(args.against), args.notebooks)
    print(f"{'notebooks':>9} " + " ".join(f"{side + ' ' + what:>22}" for side in sides for what in
                                          ("processes", "RSS MB", "PSS MB")))
    for i in range(args.notebooks):
        cells = []
        for rows in sides.values():
            row = rows[i]
            cells += [f"{row['processes']:>22}", f"{row['rss_mb']:>22}", f"{row['pss_mb']:>22}"]
        print(f"{i + 1:>9} " + " ".join(cells))
    for side, rows in sides.items():
        print(f"{side}: {args.notebooks} notebooks hold {rows[-1]['pss_mb'] / rows[0]['pss_mb']:.2f}x one's (PSS), "
              f"{rows[-1]['rss_mb'] / rows[0]['rss_mb']:.2f}x (RSS)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
