"""Does the managed local model's server grow with use?  Its resident memory after prompts of
growing length, with llama-cpp-python's ``logits_all`` as it defaults (on: every position's logits
kept, in an ``n_ctx`` x vocabulary array) and as the server is started now (off), in one run.

Each way is a server of its own (its own runtime folder, so no other server on the machine is
used or counted), asked prompts of about 500, 2,000 and 4,000 tokens, each new from its
first token (nothing read from the cache), for 16 tokens at temperature 0.  After each, the
server's RSS and PSS; the replies of the two ways are compared, and their prompt speed.  A few
minutes on 2 cores.

    python bench/bench_server_growth.py [--sizes 500,2000,4000]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench.bench_model_memory import memory_mb
from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model import llama_server, local
from jupyter_ai_ci.model.endpoint import Endpoint


class Default(llama_server.LocalServer):
    """The server as llama-cpp-python starts it unless told: logits kept for every position."""

    def launch_args(self) -> list[str]:
        args = super().launch_args()
        return args[:args.index("--logits_all")] + args[args.index("--logits_all") + 2:]


def prompt(tokens: int, seed: int) -> list[Message]:
    # About 7 tokens a row; the first row differs from every other prompt's, so none is cached.
    rows = "\n".join(f"{seed}-{i}, region {['north', 'south', 'east'][i % 3]}, {i * 7 % 50} units"
                     for i in range(tokens // 7))
    return [Message("user", f"Rows of orders.csv:\n{rows}\nHow many rows are there? Answer with a number.")]


def measure(kind: type[llama_server.LocalServer], path: Path, sizes: list[int]) -> list[dict[str, object]]:
    folder = tempfile.mkdtemp(prefix="aici-growth-")
    os.environ["JUPYTER_RUNTIME_DIR"] = folder
    server = kind(path)
    rows: list[dict[str, object]] = []
    try:
        server.start()
        endpoint = local.localized(Endpoint.from_settings(AICISettings(), model="local"), path)
        client = server.client(replace(endpoint, max_tokens=16))
        rss, pss = memory_mb(server.pid)
        rows.append({"tokens": 0, "rss": rss, "pss": pss, "seconds": 0.0, "reply": ""})
        for n, size in enumerate(sizes):
            started = time.perf_counter()
            reply = client.complete(prompt(size, n))
            rss, pss = memory_mb(server.pid)
            rows.append({"tokens": reply.usage.prompt_tokens, "rss": rss, "pss": pss,
                         "seconds": time.perf_counter() - started, "reply": reply.text})
            print(f"  {kind.__name__}: {rows[-1]['tokens']} prompt tokens, RSS {rss:,.0f} MB", file=sys.stderr)
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="500,2000,4000")
    args = parser.parse_args(argv)
    bundled = local.bundled_model()
    if bundled is None:
        sys.exit("the [local] extra's model is not installed")
    path = local.materialize(bundled, lambda text: None)
    sizes = [int(s) for s in args.sizes.split(",")]
    off = measure(llama_server.LocalServer, path, sizes)
    on = measure(Default, path, sizes)
    ways = {"logits_all on (default)": on, "logits_all off (now)": off}
    print(f"{'prompt tokens':>13} {'on: RSS MB':>11} {'off: RSS MB':>12} {'on: PSS MB':>11} {'off: PSS MB':>12}"
          f" {'on: s':>7} {'off: s':>7}  same reply")
    for a, b in zip(on, off, strict=True):
        same = "" if not a["tokens"] else ("yes" if a["reply"] == b["reply"] else "NO")
        print(f"{a['tokens']:>13} {a['rss']:>11,.0f} {b['rss']:>12,.0f} {a['pss']:>11,.0f} {b['pss']:>12,.0f}"
              f" {a['seconds']:>7.1f} {b['seconds']:>7.1f}  {same}")
    for name, rows in ways.items():
        grew = rows[-1]["rss"] - rows[0]["rss"]  # type: ignore[operator]
        print(f"{name}: grew {grew:,.0f} MB from start to the longest prompt; "
              f"replies' hashes {[hashlib.sha1(str(r['reply']).encode()).hexdigest()[:6] for r in rows[1:]]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
