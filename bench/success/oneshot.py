"""The one-shot baseline: one request, no notebook context, no retry, its code run once.

What a user gets by pasting a question into a chat and its code into a cell: the figure the
loop's (and the candidates') worth is measured against, in the same run, with the same model and
kernel.  The code of the reply's python blocks runs in order and stops at the first error.
DABench (dabench_run.py) and the task suites (harness.py) ask it the same way, each with its own
system prompt: DABench grades what is printed, the suites read the variable ``answer``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from jupyter_ai_ci.events import ExecutionResult, Message, Usage
from jupyter_ai_ci.text import python_blocks

SUITE_SYSTEM = "Write Python code that does what the request asks. Put it in one ```python block."


@dataclass
class OneShot:
    text: str  # the reply
    status: str  # "ran", "raised" or "no-code"
    results: list[ExecutionResult] = field(default_factory=list)  # each block's, up to the first that raised
    error: str = ""
    usage: Usage = field(default_factory=Usage)
    model_seconds: float = 0.0


async def one_shot(client: Any, executor: Any, system: str, request: str) -> OneShot:
    """Ask ``request`` once under ``system`` (``client``: an AsyncModelClient) and run its code
    once with ``executor`` (a KernelExecutor)."""
    started = time.perf_counter()
    reply = await client.acomplete([Message("system", system), Message("user", request)])
    out = OneShot(reply.text, "ran", usage=reply.usage, model_seconds=round(time.perf_counter() - started, 3))
    blocks = python_blocks(reply.text)
    if not blocks:
        out.status = "no-code"
    for code in blocks:
        result = await executor.run(code, store_history=False)
        out.results.append(result)
        if result.error is not None:
            out.status, out.error = "raised", result.error.one_line()
            break
    return out
