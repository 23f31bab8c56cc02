"""Runs inside a kernel, asked by the server: the notebook context of a sidebar request.

The variables live in the kernel, so the context is built there, with the same
``build_context`` the magic uses; the cells come from the frontend in the payload.
The server calls ``context_for`` through a silent ``user_expressions`` request.
"""

from __future__ import annotations

import json
from typing import Any

from .context import CellRecord, build_context, user_variables


def context_for(payload: str) -> str:
    """``payload``: JSON ``{"request", "cells": [{"source", "output"}], "budget"}``."""
    from IPython.core.getipython import get_ipython

    data: dict[str, Any] = json.loads(payload)
    shell: Any = get_ipython()  # type: ignore[no-untyped-call]
    variables = user_variables(shell.user_ns, shell.user_ns_hidden) if shell is not None else []
    cells = [CellRecord(str(c.get("source", "")), str(c.get("output", ""))) for c in data.get("cells", [])]
    return build_context(str(data.get("request", "")), variables, cells, int(data.get("budget", 3000)))
