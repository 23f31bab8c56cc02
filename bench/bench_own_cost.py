"""The extension's own time per ``%%ask`` attempt in a real kernel, and how it grows with the work.

What a user waits for, per the issue (#30): a ``%%ask`` cell that runs ``x = 42`` minus a
plain cell running the same code, both timed in a real kernel over the messaging protocol
(jupyter_client, as JupyterLab does) from the request to the kernel's "idle".  The model is
the scripted HTTP server in a process of its own, answering at once, so what is left is
ours and the openai client's: the context, the run, the replay record, the display.

Four kernels run side by side, each in a folder of its own with the same three data files:

* *small*: 10 replay records in the folder's store, a 5-cell notebook (run in the kernel
  and saved as the session's ``.ipynb``);
* *large*: 1,000 replay records, a 500-cell notebook;
* *records* and *cells*: only one of the two grown (1,000 records and 5 cells, 10 records and
  500 cells), so the table shows which of them costs.

Replay is on, as users have it: each request is new text, so it misses, the model is asked
and a record is written, every time.  The records are made by the magic itself (in this
process, in the kernel's folder), so the bench works whatever the store's format.  The
kernels take turns, request by request, so a busy machine slows both alike; the figures are
medians, and only ratios are checked (milliseconds on a shared machine move by 2x).

Targets: own time <= 2x the plain cell (the small kernel); large / small <= 1.2x.  Exit 1
above either; --no-check only reports.  --profile N profiles N more requests in each
kernel with cProfile, inside the kernel, and prints the top functions.

    python bench/bench_own_cost.py [--repeats 40] [--no-check] [--profile 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from bench_loop_overhead import ServerProcess

from jupyter_ai_ci.executors.local_kernel import LocalKernel

RATIO_TARGET = 2.0
GROWTH_TARGET = 1.2
# replay records, notebook cells; "records" and "cells" grow one of the two, to show which costs
SIZES = {"small": (10, 5), "large": (1000, 500), "records": (1000, 5), "cells": (10, 500)}
_CSV = "id,region,units,unit_price,date\n" + "".join(
    f"{i},{'NSEW'[i % 4]},{i % 7},{1.5 + i % 3},2024-01-{1 + i % 28:02d}\n" for i in range(300))


def cell_source(i: int) -> str:
    """A notebook's cells: assignments, expressions with an output, prints."""
    return (f"v{i % 20} = {i} * 2", f"v{i % 20} + 1", f"print('row', v{i % 20})")[i % 3]


def prepare(folder: str, records: int, cells: int, base_url: str) -> str:
    """Data files, ``records`` replay records made by the magic, and a ``cells``-cell notebook
    file in ``folder``; returns the notebook's path."""
    for name in ("sales.csv", "stores.csv", "returns.csv"):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(_CSV)
    fill_records(folder, records, base_url)
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": i + 1, "outputs": [],
         "source": cell_source(i)} for i in range(cells)]}
    path = os.path.join(folder, "analysis.ipynb")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(notebook, f)
    return path


def fill_records(folder: str, records: int, base_url: str) -> None:
    """``records`` answered requests in ``folder``'s replay store, each made by ``%%ask`` in an
    in-process shell."""
    from IPython.core.interactiveshell import InteractiveShell

    from jupyter_ai_ci.testing import ScriptedOpenAIServer

    home = os.getcwd()
    os.chdir(folder)
    try:
        with ScriptedOpenAIServer() as server:  # in this process: one queue for all the records
            os.environ["OPENAI_BASE_URL"] = server.base_url
            server.script(*[f"```python\nfilled = {n}\n```" for n in range(records)])
            ip = InteractiveShell.instance()
            ip.run_line_magic("load_ext", "jupyter_ai_ci")
            with open(os.devnull, "w") as null, redirect_stdout(null), redirect_stderr(null):
                for n in range(records):
                    ip.run_cell(f"%%ask\nearlier request number {n}", store_history=False)  # type: ignore[no-untyped-call]
            ip.run_line_magic("unload_ext", "jupyter_ai_ci")
            assert not server.replies, f"{len(server.replies)} of {records} records were not made"
    finally:
        os.environ["OPENAI_BASE_URL"] = base_url
        os.chdir(home)


async def timed(client: Any, code: str, silent: bool = False) -> float:
    """Seconds from sending ``code`` to the kernel's idle after it."""
    started = time.perf_counter()
    msg_id = client.execute(code, store_history=not silent, silent=silent)
    while True:
        msg = await client.get_iopub_msg(timeout=120)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status" \
                and msg["content"]["execution_state"] == "idle":
            return time.perf_counter() - started


async def value(client: Any, expression: str) -> Any:
    """``expression`` evaluated in the kernel (its repr, read back)."""
    msg_id = client.execute("", silent=True, user_expressions={"v": expression})
    while True:
        reply = await client.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            found = reply["content"]["user_expressions"]["v"]
            assert found["status"] == "ok", found
            return eval(found["data"]["text/plain"])  # noqa: S307 -- our own kernel's repr of numbers


class Side:
    """One kernel and what was measured in it."""

    def __init__(self, name: str, kernel: LocalKernel) -> None:
        self.name, self.kernel = name, kernel
        self.own: list[float] = []  # the %%ask cell minus the plain cell, paired
        self.plain: list[float] = []
        self.inside: list[float] = []  # Timings.own, the run's own split (the rest: model, execute)

    async def request(self, server: ServerProcess, tag: str) -> None:
        client = self.kernel.client
        server.script(f"```python\nx = 42  # {tag}\n```")
        ask = await timed(client, f"%%ask\nset x, take {tag}")
        plain = await timed(client, f"x = 42  # {tag}")
        self.own.append(ask - plain)
        self.plain.append(plain)
        self.inside.append(await value(client, "get_ipython().magics_manager.registry['AskMagics'].last_timings.own"))


async def start(name: str, folder: str, notebook: str, cells: int, server: ServerProcess,
                code_from: str = "") -> Side:
    env = {"OPENAI_BASE_URL": server.base_url, "JPY_SESSION_NAME": notebook}
    if code_from:  # another checkout's jupyter_ai_ci in this kernel (--against)
        env["PYTHONPATH"] = code_from
    kernel = await LocalKernel.start("python3", cwd=folder, env=env)
    client = kernel.client
    await timed(client, "%load_ext jupyter_ai_ci")
    for i in range(cells):
        await timed(client, cell_source(i))
    side = Side(name, kernel)
    for n in range(3):  # imports the run and the SDK, opens the connection, reads the files
        await side.request(server, f"warm {n}")
    for seen in (side.own, side.plain, side.inside):
        seen.clear()
    return side


PROFILE = """
import cProfile, pstats, io
_ai_ci_profile = cProfile.Profile()
"""


async def profile(side: Side, server: ServerProcess, requests: int) -> str:
    """The top functions of ``requests`` requests in ``side``'s kernel, by own and by cumulative time."""
    client = side.kernel.client
    await timed(client, PROFILE, silent=True)
    for n in range(requests):
        server.script(f"```python\nx = 42  # profiled {n}\n```")
        await timed(client, f"_ai_ci_profile.enable()\nget_ipython().run_cell_magic('ask', '', 'set x, profiled {n}')"
                            "\n_ai_ci_profile.disable()")
    listing = ("(lambda s: ([pstats.Stats(_ai_ci_profile, stream=s).sort_stats(k).print_stats(*r) for k, r in "
               "(('tottime', (25,)), ('cumulative', ('jupyter_ai_ci', 45)))], s.getvalue())[1])(io.StringIO())")
    return f"---- profile of {requests} requests in the {side.name} kernel ----\n" + str(await value(client, listing))


async def measure(server: ServerProcess, repeats: int, profiled: int, against: str = "") -> dict[str, Side]:
    sides: dict[str, Side] = {}
    kernels = {**SIZES, **({"before": SIZES["small"]} if against else {})}
    with tempfile.TemporaryDirectory() as root:
        try:
            for name, (records, cells) in kernels.items():
                folder = os.path.join(root, name)
                os.mkdir(folder)
                notebook = prepare(folder, records, cells, server.base_url)
                sides[name] = await start(name, folder, notebook, cells, server,
                                          against if name == "before" else "")
            for n in range(repeats):  # turn about, request by request
                for side in sides.values():
                    await side.request(server, f"{side.name} {n}")
            for side in sides.values() if profiled else ():
                print(await profile(side, server, profiled))
        finally:
            for side in sides.values():
                await side.kernel.shutdown()
    return sides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=40, help="requests per kernel (default 40)")
    parser.add_argument("--no-check", action="store_true", help="report only; exit 0 whatever the ratios")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="profile N more requests in each kernel (cProfile, in the kernel)")
    parser.add_argument("--against", default="", metavar="DIR",
                        help="a fifth kernel, 'before', running the jupyter_ai_ci of the checkout DIR with the "
                             "small kernel's work, in turn with the others: a change's cost in one run")
    args = parser.parse_args(argv)
    with ServerProcess() as server:
        sides = asyncio.run(measure(server, args.repeats, args.profile, os.path.abspath(args.against)
                                    if args.against else ""))
    med = {name: {key: statistics.median(getattr(side, key)) * 1000 for key in ("own", "plain", "inside")}
           for name, side in sides.items()}
    print(f"in a real kernel, median of {args.repeats} requests per kernel, the model answering at once;")
    print("own = the %%ask cell minus the plain cell running the same code ('x = 42'), replay on")
    print(f"{'kernel':>8} {'records':>8} {'cells':>6} {'own ms':>8} {'plain ms':>9} {'ratio':>7} {'growth':>7} "
          f"{'in-run own ms':>14} {'growth':>7}")
    for name, (records, cells) in {**SIZES, **({"before": SIZES["small"]} if args.against else {})}.items():
        m, s = med[name], med["small"]
        print(f"{name:>8} {records:>8} {cells:>6} {m['own']:>8.2f} {m['plain']:>9.2f} "
              f"{m['own'] / m['plain']:>6.2f}x {m['own'] / s['own']:>6.2f}x {m['inside']:>14.2f} "
              f"{m['inside'] / s['inside']:>6.2f}x")
    ratio = med["small"]["own"] / med["small"]["plain"]
    growth = med["large"]["own"] / med["small"]["own"]
    ok_ratio, ok_growth = ratio <= RATIO_TARGET, growth <= GROWTH_TARGET
    print(f"own time per attempt: {ratio:.2f}x a plain cell (target <= {RATIO_TARGET:.1f}x): "
          f"{'ok' if ok_ratio else 'OVER TARGET'}")
    print(f"growth, 10 -> 1,000 records and 5 -> 500 cells: {growth:.2f}x "
          f"(in-run own {med['large']['inside'] / med['small']['inside']:.2f}x) (target <= {GROWTH_TARGET:.1f}x): "
          f"{'ok' if ok_growth else 'OVER TARGET'}")
    if args.against:
        b = med["before"]
        print(f"against {args.against}: own {med['small']['own']:.2f} vs {b['own']:.2f} ms "
              f"({med['small']['own'] / b['own']:.2f}x), in-run own {med['small']['inside']:.2f} vs "
              f"{b['inside']:.2f} ms; own / plain {ratio:.2f}x vs {b['own'] / b['plain']:.2f}x")
    return 0 if args.no_check or ok_ratio and ok_growth else 1


if __name__ == "__main__":
    sys.exit(main())
