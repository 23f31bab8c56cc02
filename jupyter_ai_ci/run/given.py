"""Code an agent wrote, run as the model's code is: the policy, approval, the transaction,
masking — everything but the model (the MCP server's ``run``; one place, for every driver).

The kernel is asked what its names stand for first (``run = subprocess.run`` bound in an earlier
cell is still a shell), as a request's snapshot does; what it prints is masked with every secret
the kernel holds before and after, as a request to the model would be.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_ai_ci.context.privacy import longest_first, mask_secrets, secret_values
from jupyter_ai_ci.context.snapshot import Query
from jupyter_ai_ci.core.given import given_code
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.errors import ModelError, UsageProblem
from jupyter_ai_ci.events import Message, ModelReply, Outcome
from jupyter_ai_ci.model.client import TextCallback
from jupyter_ai_ci.executors import AsyncExecutor
from jupyter_ai_ci.run.drive import Approver, AsyncApprover, adrive
from jupyter_ai_ci.run.report import Reporter, Timings
from jupyter_ai_ci.run.flow import RemoteKernel
from jupyter_ai_ci.run.rules import check_size, judged_in, policy_of
from jupyter_ai_ci.run.session import Session
from jupyter_ai_ci.safety.approval import GrantAll


class _NoModel:
    """``run`` asks no model; the loop it drives never calls one (a call would be a bug)."""

    async def acomplete(self, messages: Sequence[Message], on_text: TextCallback | None = None,
                        temperature: float | None = None, n: int = 1) -> ModelReply:
        raise ModelError("running given code asks no model")


@dataclass(frozen=True)
class Given:
    outcome: Outcome
    secrets: tuple[str, ...]  # every secret the kernel and this process hold: mask what you show

    def masked(self, text: str) -> str:
        return mask_secrets(text, self.secrets)


async def run_given(session: Session, code: str, executor: AsyncExecutor, kernel: RemoteKernel,
                    approver: Approver | AsyncApprover | None = None, reporter: Reporter | None = None,
                    yes: bool = False, timings: Timings | None = None) -> Given:
    """Run ``code`` once, transactionally.  ``approver`` answers what the policy asks about (none:
    refused); ``yes`` approves it as the person's ``--yes`` does (never code the deny list names)."""
    s = session.settings
    if not code.strip():
        raise UsageProblem("the code is empty: send the code to run")
    check_size(code, s.max_request_kb)
    found = await kernel.asnapshot(Query(code, (), s.max_context_tokens, tuple(s.context_exclude)))
    settings = LoopSettings(retries=0, max_output_chars=s.max_output_chars, max_traceback_chars=s.max_output_chars * 2,
                            policy=judged_in(policy_of(s), found), install_missing=False, answer="never")
    kept: set[str] = set(found.secrets)

    async def watch() -> None:  # before a rollback can take a secret the code made
        kept.update(await kernel.asecrets())

    asker: Any = GrantAll(approver) if yes else approver
    outcome = await adrive(given_code(code, settings), _NoModel(), executor, reporter, timings, approver=asker,
                           inspector=kernel.ainspect, watch=watch, namer=kernel.anames,
                           importer=kernel.aimport_source)
    kept.update(secret_values({}, os.environ))
    return Given(outcome, longest_first(kept))
