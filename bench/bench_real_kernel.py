"""A whole ``%%ask`` request in a real kernel, beside a plain cell in the same kernel.

What a Jupyter user waits for: each cell is sent over the kernel's messaging
protocol (jupyter_client, as JupyterLab does) and timed from the request to the
kernel's "idle".  The model is the scripted HTTP server in a process of its own,
answering at once, so what is left beyond the plain cell is the extension's work
*and* the openai client's (the request, the reply), the rendered progress
display and the comm messages.  ``bench_loop_overhead.py`` splits that work in
an in-process shell; this is the figure as a user meets it.  Not checked: the
issue's target is defined on the in-process split.

    python bench/bench_real_kernel.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from typing import Any

from bench_loop_overhead import ServerProcess

from jupyter_ai_ci.executors.local_kernel import LocalKernel


async def timed(client: Any, code: str) -> float:
    """Seconds from sending ``code`` to the kernel's idle after it."""
    started = time.perf_counter()
    msg_id = client.execute(code, store_history=True)
    while True:
        msg = await client.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status" \
                and msg["content"]["execution_state"] == "idle":
            return time.perf_counter() - started


async def measure(server: ServerProcess, repeats: int) -> tuple[list[float], list[float]]:
    kernel = await LocalKernel.start("python3", env={"OPENAI_BASE_URL": server.base_url})
    try:
        client = kernel.client
        # Every request is new text, so replay would answer it anyway; off, so the model is asked.
        await timed(client, "%load_ext jupyter_ai_ci\n%config AskMagics.replay = False")
        server.script("```python\nx = 42\n```")
        await timed(client, "%%ask\nwarm up")  # imports the run and the SDK, opens the connection
        asks, plains = [], []
        for n in range(repeats):  # turn about, so a busier machine slows both alike
            server.script(f"```python\nx = 42  # {n}\n```")
            asks.append(await timed(client, "%%ask\nset x"))
            plains.append(await timed(client, f"x = 42  # {n}"))
        return asks, plains
    finally:
        await kernel.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=30, help="requests and plain cells (default 30)")
    args = parser.parse_args(argv)
    with ServerProcess() as server:
        asks, plains = asyncio.run(measure(server, args.repeats))
    ask, plain = statistics.median(asks) * 1000, statistics.median(plains) * 1000
    print(f"in a real kernel, median of {args.repeats}, the model answering at once:")
    print(f"  %%ask request (one attempt): {ask:.1f} ms   plain cell 'x = 42': {plain:.2f} ms")
    print(f"  the request beyond the plain cell: {ask - plain:.1f} ms = {(ask - plain) / plain:.2f}x a plain cell")
    return 0


if __name__ == "__main__":
    sys.exit(main())
