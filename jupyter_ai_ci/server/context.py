"""The server's side of a sidebar request's context: asks the notebook's kernel.

If the kernel cannot answer (busy with a long cell, or ``jupyter_ai_ci`` not
importable in its environment) the request goes on with the cells alone: a
slower or poorer context is better than a request that never starts.
"""

from __future__ import annotations

import ast
import asyncio
import json
from collections.abc import Sequence

from ..context import CellRecord, build_context
from .kernelcall import KernelCalls

KERNEL_TIMEOUT = 5.0


def expression(request: str, cells: Sequence[CellRecord], budget: int) -> str:
    payload = json.dumps({
        "request": request,
        "cells": [{"source": c.source, "output": c.output} for c in cells],
        "budget": budget,
    })
    return f"__import__('jupyter_ai_ci.kernel_context', fromlist=['_']).context_for({payload!r})"


async def kernel_context(calls: KernelCalls, request: str, cells: Sequence[CellRecord], budget: int,
                         timeout: float = KERNEL_TIMEOUT) -> tuple[str, str | None]:
    """The context text, and a note when it had to be built without the kernel."""
    try:
        value = await calls.expression(expression(request, cells, budget), timeout)
        if value.get("status") != "ok":
            raise RuntimeError(f"{value.get('ename')}: {value.get('evalue')}")
        text = ast.literal_eval(value["data"]["text/plain"])
        if not isinstance(text, str):
            raise TypeError(f"the kernel answered a {type(text).__name__}, not text")
        return text, None
    except asyncio.TimeoutError:
        note = "the kernel is busy, so the model was not told about its variables"
    except Exception as exc:  # noqa: BLE001 - any failure degrades to cells only
        note = f"the kernel could not describe its variables ({exc})"
    return build_context(request, [], cells, budget), note
