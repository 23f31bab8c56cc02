"""The loop for code someone else wrote: an agent's ``run`` (drivers/mcp), with no model.

One attempt through the same checks as the model's code (syntax, the policy's scan, approval),
inside the same transaction: committed when it ran cleanly, rolled back when it raised.  No
retries: nobody is there to write a fix.  Like the loop, it does no I/O.
"""

from __future__ import annotations

from jupyter_ai_ci.core.attempt import run_attempt
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.events import Cell, LoopGen, Outcome


def given_code(code: str, settings: LoopSettings) -> LoopGen:
    """``success`` with the code as the one cell, ``failed`` (rolled back) or ``refused``."""
    attempt = yield from run_attempt((code,), 1, 1, settings, set())
    if isinstance(attempt, str):  # refused by the policy, or nobody approved it
        return Outcome("refused", reason=attempt)
    if not attempt.ok:
        return Outcome("failed", attempts=(attempt,))
    return Outcome("success", cells=(Cell(code, 1, attempt.results[-1]),), attempts=(attempt,))
