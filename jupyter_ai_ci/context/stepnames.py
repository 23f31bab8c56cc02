"""What the kernel's names stand for after a step, asked between the steps of a request.

The snapshot names the kernel's risky bindings once, before step 1 (safety/kernelnames.py).
Step 1's code may then bind one by any means -- ``run, n = subprocess.run, 0``, ``for run in
[subprocess.run]``, ``globals()['run'] = subprocess.run``, a helper that returns it -- and
step 2 call it bare.  Reading step 1's code cannot follow every such way; the kernel can: the
loop asks (``KernelNames``) and the scan of step 2 reads what the names are.  The magic reads
its own namespace; the panel and the command line evaluate ``expression()`` in the kernel as a
silent user expression, as for the kernel's secrets (context/kernelsecrets.py).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from jupyter_ai_ci import inkernel
from jupyter_ai_ci.safety.kernelnames import risky_bindings


def expression() -> str:
    """The user expression that names the kernel's risky bindings (jupyter_ai_ci installed there)."""
    return inkernel.call("jupyter_ai_ci.context.stepnames", "")


def kernel_side(payload: str) -> str:
    """Runs inside the kernel: ``risky_bindings`` of its namespace, as JSON."""
    from IPython.core.getipython import get_ipython

    shell: Any = get_ipython()  # type: ignore[no-untyped-call]
    return json.dumps([list(pair) for pair in risky_bindings(shell.user_ns if shell is not None else {}, shell)])


def from_reply(user_expression: Mapping[str, Any]) -> tuple[tuple[str, str], ...] | None:
    """The pairs from a ``user_expressions`` entry; None when the kernel could not answer (the
    loop then reads the step's code alone)."""
    try:
        if user_expression.get("status") != "ok":
            return None
        data = json.loads(ast.literal_eval(user_expression["data"]["text/plain"]))
        if not isinstance(data, list):
            return None
        return tuple((str(p[0]), str(p[1])) for p in data if isinstance(p, list) and len(p) == 2)
    except (ValueError, SyntaxError, KeyError, TypeError, AttributeError):
        return None
