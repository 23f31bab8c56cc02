"""The server's side of a sidebar request's context: asks the notebook's kernel.

If the kernel cannot answer (busy with a long cell, or ``jupyter_ai_ci`` not
importable in its environment) the request goes on with the cells alone: a
slower or poorer context is better than a request that never starts.
"""

from __future__ import annotations

import ast
import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any

from ..context import CellRecord, build_context

KERNEL_TIMEOUT = 5.0


def expression(request: str, cells: Sequence[CellRecord], budget: int) -> str:
    payload = json.dumps({
        "request": request,
        "cells": [{"source": c.source, "output": c.output} for c in cells],
        "budget": budget,
    })
    return f"__import__('jupyter_ai_ci.kernel_context', fromlist=['_']).context_for({payload!r})"


async def kernel_context(kernel_manager: Any, kernel_id: str, request: str,
                         cells: Sequence[CellRecord], budget: int,
                         timeout: float = KERNEL_TIMEOUT) -> tuple[str, str | None]:
    """The context text, and a note when it had to be built without the kernel."""
    try:
        text = await asyncio.wait_for(
            _ask_kernel(kernel_manager, kernel_id, expression(request, cells, budget)), timeout
        )
        return text, None
    except asyncio.TimeoutError:
        note = "the kernel is busy, so the model was not told about its variables"
    except Exception as exc:  # noqa: BLE001 - any failure degrades to cells only
        note = f"the kernel could not describe its variables ({exc})"
    return build_context(request, [], cells, budget), note


async def _ask_kernel(kernel_manager: Any, kernel_id: str, expr: str) -> str:
    client = kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        msg_id = client.execute("", silent=True, store_history=False, user_expressions={"ctx": expr})
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            reply = await client.get_shell_msg(timeout=None)
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                break
        value = reply["content"]["user_expressions"]["ctx"]
        if value.get("status") != "ok":
            raise RuntimeError(f"{value.get('ename')}: {value.get('evalue')}")
        text = ast.literal_eval(value["data"]["text/plain"])
        if not isinstance(text, str):
            raise TypeError(f"the kernel answered a {type(text).__name__}, not text")
        return text
    finally:
        client.stop_channels()
