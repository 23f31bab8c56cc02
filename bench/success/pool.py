"""Items through ``jobs`` workers at once, each with its own kernel: the suites' and DABench's loop.

A worker is made and started once (a kernel, and in scripted mode a server of its own), takes
items off one queue until it is empty, and is stopped whatever happens; results come back in
the order of the items.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from jupyter_ai_ci.drivers.headless import stop_on_sigterm

Item = TypeVar("Item")
Result = TypeVar("Result")


class Startable(Protocol):
    async def start(self, shared: Any) -> None: ...
    async def stop(self) -> None: ...


async def run_pool(items: Sequence[Item], jobs: int, shared: Any, make: Callable[[], Startable],
                   call: Callable[[Any, Item], Awaitable[Result]],
                   progress: Callable[[Result, int, int], None] | None = None) -> list[Result]:
    """``call(worker, item)`` for every item, ``jobs`` workers at a time (SIGTERM stops them cleanly)."""
    stop_on_sigterm()
    queue: asyncio.Queue[tuple[int, Item]] = asyncio.Queue()
    for pair in enumerate(items):
        queue.put_nowait(pair)
    results: dict[int, Result] = {}

    async def work() -> None:
        worker = make()
        try:
            await worker.start(shared)
            while not queue.empty():
                index, item = queue.get_nowait()
                results[index] = await call(worker, item)
                if progress:
                    progress(results[index], len(results), len(items))
        finally:
            await worker.stop()

    await asyncio.gather(*(work() for _ in range(min(jobs, len(items)))))
    return [results[i] for i in range(len(items))]
