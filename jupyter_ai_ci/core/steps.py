"""What one step of a ``--steps N`` request hands the next.

The model writes a step, the run executes it, and the model is shown its output and asked for
the next (``prompts.NEXT_STEP``), until the last step or until it ends in prose.  Between two
steps the run learns what this step's code bound: ``from subprocess import run`` makes the next
step's ``run(...)`` a process, whatever name it goes by, so the policy must know the binding
before the next step is scanned (``safety/kernelnames.py``).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import replace
from typing import Any

from jupyter_ai_ci.core import prompts
from jupyter_ai_ci.core.fixes import describe_result
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.events import Action, ExecutionResult, KernelNames
from jupyter_ai_ci.safety import policy
from jupyter_ai_ci.safety.kernelnames import bound_by
from jupyter_ai_ci.text import head_tail


def next_step(code: Sequence[str], results: Sequence[ExecutionResult], step: int,
              settings: LoopSettings) -> Generator[Action, Any, tuple[LoopSettings, str]]:
    """The settings for the next step (the policy told what ``code`` bound) and what the model is
    asked next.  The names are asked of the kernel, and read from the code too (a driver that
    cannot ask); the kernel's word wins."""
    live = yield KernelNames(step)
    trees, _ = policy.parse_blocks(tuple(code))
    named = bound_by(trees, settings.policy.bindings)
    if isinstance(live, tuple):
        named = tuple({**dict(named), **dict(live)}.items())
    settings = replace(settings, policy=replace(settings.policy, bindings=named))
    output = "\n".join(describe_result(r, settings.max_output_chars) for r in results)
    return settings, prompts.NEXT_STEP.format(output=head_tail(output, settings.max_output_chars), step=step + 1,
                                              steps=settings.steps)
