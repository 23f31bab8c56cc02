"""A fix held open (run/held.py) in a kernel reached over the messaging protocol, as the MCP tools
hold one in the kernel of a notebook's session: the person's cells may run before the agent decides,
and a reject puts back only what the fix's code changed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from jupyter_ai_ci.executors.kernel import KernelExecutor
from jupyter_ai_ci.executors.local_kernel import LocalKernel
from jupyter_ai_ci.run.held import HeldAttempt


def test_a_rejected_fix_keeps_what_the_persons_cells_did_meanwhile(tmp_path: Path) -> None:
    async def go() -> str:
        kernel = await LocalKernel.start(cwd=str(tmp_path))
        try:
            executor = KernelExecutor(kernel)
            await executor.run("total = 1\nmine = 'before'")
            held = HeldAttempt(executor)
            await executor.acheckpoint(["total = 99"])
            await executor.aexecute("total = 99")
            await held.acommit()  # held: the offer waits for the agent
            await executor.run("mine = 'the person ran a cell meanwhile'")
            assert (await held.areject()).supported
            value = await executor.evaluate("(total, mine)")
            return str(value.get("data", {}).get("text/plain"))
        finally:
            await kernel.shutdown()

    assert asyncio.run(asyncio.wait_for(go(), 120)) == "(1, 'the person ran a cell meanwhile')"
