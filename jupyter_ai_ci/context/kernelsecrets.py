"""The secrets a kernel holds now, asked for after each step a run executes there.

The snapshot finds the secrets held before the run; generated code may load one
(``api_secret = open(vault).read()``) and print it.  A failed attempt is rolled
back before its fix request is sent, so the variable is gone by then: the run asks
right after each step instead, and keeps every value it was told of until it ends
(security review, #30).  The magic reads its own namespace; the sidebar and the
command line evaluate ``expression()`` in the kernel as a silent user expression.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Mapping
from typing import Any

from jupyter_ai_ci import inkernel
from jupyter_ai_ci.context.privacy import secret_values


def expression() -> str:
    """The user expression that lists the kernel's secrets (a kernel with jupyter_ai_ci installed)."""
    return inkernel.call("jupyter_ai_ci.context.kernelsecrets", "")


def kernel_side(payload: str) -> str:
    """Runs inside the kernel: ``secret_values`` of its namespace and environment, as JSON."""
    from IPython.core.getipython import get_ipython

    shell: Any = get_ipython()  # type: ignore[no-untyped-call]
    return json.dumps(list(secret_values(shell.user_ns if shell is not None else {}, os.environ)))


def from_reply(user_expression: Mapping[str, Any]) -> tuple[str, ...]:
    """The values from a ``user_expressions`` entry; none when the kernel could not answer
    (jupyter_ai_ci missing there: the patterns and the values known before still mask)."""
    try:
        if user_expression.get("status") != "ok":
            return ()
        data = json.loads(ast.literal_eval(user_expression["data"]["text/plain"]))
        return tuple(str(x) for x in data) if isinstance(data, list) else ()
    except (ValueError, SyntaxError, KeyError, TypeError, AttributeError):
        return ()
