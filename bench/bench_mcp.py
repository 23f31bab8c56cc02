"""``run`` of ``1 + 1`` through the MCP server (stdio, the SDK's own client) beside the same cell
sent to a kernel with jupyter_client, taken in turns in one run (issue #39: ≤ 1.5x).

The MCP figure is what an agent waits for: the call over stdio, the kernel's answer about its
names (the policy reads them), the checkpoint, the cell, the commit, the undo note and the cell
saved into the notebook.  The plain figure is one execute request to a kernel of its own.  The
third is the same tool's work without MCP (``Tools.run`` called in this process on a kernel of its
own): what the protocol and the stdio hop add, apart from the transaction's round trips.

And ``ask`` through MCP beside ``%%ask`` in a kernel (jupyter_client), the scripted model in a
process of its own answering at once, in turns: ask's own time over %%ask's (target ≤ 50 ms).

    python bench/bench_mcp.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_loop_overhead import ServerProcess
from bench_real_kernel import timed
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.drivers.headless import KernelOptions
from jupyter_ai_ci.drivers.mcp.notebooks import Notebooks
from jupyter_ai_ci.drivers.mcp.tools import Tools
from jupyter_ai_ci.executors.local_kernel import LocalKernel
from jupyter_ai_ci.notebook.document import load_or_create, save


class _Quiet:
    async def report_progress(self, *args: object) -> None:
        pass


async def measure(repeats: int) -> tuple[list[float], list[float], list[float]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    save(load_or_create(folder / "a.ipynb", "python3"), folder / "a.ipynb")
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ), cwd=str(folder),
                                   args=["-m", "jupyter_ai_ci.drivers.cli", "mcp", "--root-dir", str(folder)])
    kernel = await LocalKernel.start(cwd=str(folder))
    save(load_or_create(folder / "b.ipynb", "python3"), folder / "b.ipynb")
    direct = Notebooks(folder, AICISettings(), KernelOptions())
    tools = Tools(direct)
    mcp_times: list[float] = []
    plain: list[float] = []
    inproc: list[float] = []
    try:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(3):  # warm: the kernel started, modules imported, the notebook read once
                await session.call_tool("run", {"code": "1 + 1", "notebook": "a.ipynb"})
                await timed(kernel.client, "1 + 1")
                await tools.run("1 + 1", "b.ipynb", _Quiet())
            for _ in range(repeats):
                started = time.perf_counter()
                result = await session.call_tool("run", {"code": "1 + 1", "notebook": "a.ipynb"})
                mcp_times.append(time.perf_counter() - started)
                assert result.structured_content and result.structured_content["status"] == "committed"
                plain.append(await timed(kernel.client, "1 + 1"))
                started = time.perf_counter()
                await tools.run("1 + 1", "b.ipynb", _Quiet())
                inproc.append(time.perf_counter() - started)
    finally:
        await kernel.shutdown()
        await direct.close()
    return mcp_times, plain, inproc


async def measure_ask(server: ServerProcess, repeats: int) -> tuple[list[float], list[float]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-mcp-ask-"))
    save(load_or_create(folder / "a.ipynb", "python3"), folder / "a.ipynb")
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url}
    env.pop("OPENAI_API_KEY", None)
    params = StdioServerParameters(command=sys.executable, env=env, cwd=str(folder),
                                   args=["-m", "jupyter_ai_ci.drivers.cli", "mcp", "--root-dir", str(folder),
                                         "--AICISettings.replay=False"])
    kernel = await LocalKernel.start("python3", env={"OPENAI_BASE_URL": server.base_url})
    asks: list[float] = []
    magics: list[float] = []
    try:
        await timed(kernel.client, "%load_ext jupyter_ai_ci\n%config AskMagics.replay = False")
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for n in range(repeats + 2):  # two to warm: imports, the connection, the kernel
                server.script(f"```python\nx = 42  # {n}\n```")
                started = time.perf_counter()
                # A new request each time: the notebook's cells for a request it holds would answer it.
                result = await session.call_tool("ask", {"request": f"set x ({n})", "notebook": "a.ipynb"})
                took = time.perf_counter() - started
                assert result.structured_content and result.structured_content["status"] == "done", result.content
                server.script(f"```python\nx = 42  # {n}\n```")
                magic = await timed(kernel.client, f"%%ask\nset x ({n})")
                if n >= 2:
                    asks.append(took)
                    magics.append(magic)
    finally:
        await kernel.shutdown()
    return asks, magics


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    mcp_times, plain, inproc = asyncio.run(measure(args.repeats))
    m, p, d = statistics.median(mcp_times), statistics.median(plain), statistics.median(inproc)
    print(f"run('1 + 1') through MCP (stdio): median {m * 1e3:.1f} ms")
    print(f"the same cell through jupyter_client: median {p * 1e3:.1f} ms")
    print(f"the same tool without MCP (in this process): median {d * 1e3:.1f} ms")
    print(f"MCP / jupyter_client: {m / p:.1f}x (the issue's target ≤ 1.5x); MCP / the tool without it: {m / d:.2f}x")
    with ServerProcess() as server:
        asks, magics = asyncio.run(measure_ask(server, args.repeats))
    a, g = statistics.median(asks), statistics.median(magics)
    print(f"ask through MCP: median {a * 1e3:.1f} ms; %%ask in a kernel: median {g * 1e3:.1f} ms; "
          f"ask's own time over %%ask's: {(a - g) * 1e3:+.1f} ms (target ≤ 50 ms)")


if __name__ == "__main__":
    main()
