"""One attempt, and the install of a missing module: sub-generators of the loop.

``run_attempt`` checks the code (syntax, risk scan, approval), then wraps its
execution in ``Checkpoint`` / ``Commit`` or ``Rollback``; a failure is
``Inspect``-ed before its rollback, while what it set is still there.  Like the loop, it
does no I/O: the driver performs each action it yields.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import replace
from typing import Any

from jupyter_ai_ci.core.chartcheck import CHART_ENAME
from jupyter_ai_ci.core.noop import noop_error
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.events import (
    Action,
    Approval,
    AskApproval,
    Attempt,
    Checkpoint,
    Commit,
    Execute,
    ErrorInfo,
    ExecutionResult,
    FailureNotes,
    Hold,
    Inspect,
    Install,
    Notice,
    Rollback,
    TransactionReport,
)
from jupyter_ai_ci.safety import policy
from jupyter_ai_ci.safety.missing import MissingModule
from jupyter_ai_ci.safety.risktable import UNDONE_BY_ROLLBACK

NOT_PARSED = "not run: the code does not parse"


def _approval(sent: Any) -> Approval:
    # Anything but an Approval (a driver that cannot ask) is a refusal.
    return sent if isinstance(sent, Approval) else Approval(False, "nobody could be asked")


def _report(sent: Any) -> TransactionReport:
    # A driver that does not know transactions sends None (or anything else).
    return sent if isinstance(sent, TransactionReport) else TransactionReport(supported=False)


def _undo_text(number: int, undone: TransactionReport, saved: TransactionReport | None,
               effects: Sequence[str]) -> str:
    if not undone.supported:
        return f"attempt {number} failed; this executor cannot undo it, so its changes stay"
    parts = []
    if undone.restored:
        parts.append(f"restored {', '.join(undone.restored)}")
    if undone.dropped:
        parts.append(f"removed new names {', '.join(undone.dropped)}")
    text = f"attempt {number} undone" + (f": {'; '.join(parts)}" if parts else " (nothing had changed)")
    kept = [*(saved.not_saved if saved else ()), *undone.not_saved]
    if kept:
        text += f"; NOT undone: {', '.join(kept)}"
    if effects:
        text += f"; effects outside the kernel's memory stay: {', '.join(effects)}"
    return text


def _reviewed(decision: policy.Decision, review: str) -> policy.Decision:
    """Code that needs a person's review (from a replay record this user did not sign)
    is asked about in every policy mode, ``auto`` too; what the policy refuses stays refused."""
    if not review or decision.verdict == "refuse":
        return decision
    return policy.Decision("ask", (review, *decision.reasons))


def run_attempt(
    code: Sequence[str], number: int, step: int, settings: LoopSettings, approved: set[tuple[str, ...]],
    review: str = "", hold: bool = False, may_ask: bool = True,
    check: Callable[[Sequence[ExecutionResult]], ErrorInfo | None] | None = None,
) -> Generator[Action, Any, Attempt | str]:
    """One attempt: syntax check, policy, approval, checkpoint, run, commit or
    roll back.  Returns the ``Attempt``, or a one-line refusal.  ``review``: why this code
    must be approved whatever the policy says ("" when it need not).  ``hold``: a successful
    attempt is neither committed nor rolled back: the caller decides once it has compared it
    with the other candidates (core/consensus.py).  ``may_ask`` False: code that would need a
    person's approval (and has not had it) is not run, not asked about.  ``check``: what makes an
    attempt that ran cleanly a failure all the same (a chart that contradicts the request,
    core/chartcheck.py): its error goes on the last block's result, and the attempt is undone.
    Code that pandas says changed a copy, not the DataFrame (core/noop.py), is always such a failure."""
    blocks = tuple(code)
    trees, bad = policy.parse_blocks(blocks)  # parsed once, for the syntax check and the scan
    if bad is not None:
        index, error = bad
        unparsed = (*(ExecutionResult() for _ in range(index)),
                    ExecutionResult(error=error, notes=(NOT_PARSED,)))
        return Attempt(number, step, blocks, unparsed)
    found = policy.scan_trees(trees, settings.policy.moved, settings.policy.bindings, settings.policy.folders)
    decision = _reviewed(policy.decide(settings.policy, found), review)
    if decision.verdict == "refuse":
        return f"refused by policy: {'; '.join(decision.reasons)}"
    if decision.verdict == "ask" and blocks not in approved:
        if not may_ask:
            return f"not run: it would need your approval ({'; '.join(decision.reasons)})"
        approval = _approval((yield AskApproval(blocks, decision.reasons, number, review=review)))
        if not approval.granted:
            why = approval.why or "rejected"
            if review:  # the driver's advice (the allow list, policy 'auto') cannot help here
                why = why.split(";")[0]
            return f"not run: {'; '.join(decision.reasons)} — {why}"
        approved.add(blocks)
    yield Notice("attempt", f"attempt {number}: running {len(blocks)} cell"
                 f"{'' if len(blocks) == 1 else 's'}", attempt=number, step=step)
    saved = _report((yield Checkpoint(blocks, number, step)))
    if saved.not_saved:
        yield Notice("not-undoable", f"if attempt {number} fails, these cannot be undone: "
                     f"{', '.join(saved.not_saved)}", attempt=number, step=step)
    results: list[ExecutionResult] = []
    try:
        for index, block in enumerate(blocks):
            result: ExecutionResult = yield Execute(block, number, step, index)
            results.append(result)
            if not result.ok:
                break
    except KeyboardInterrupt:
        # Thrown in by the driver when the user interrupts: undo, then stop.
        yield Rollback(number, step)
        raise
    if len(results) == len(blocks) and all(r.ok for r in results):
        if (wrong := noop_error(results, blocks) or (check(results) if check is not None else None)) is not None:
            results[-1] = replace(results[-1], error=wrong)
    attempt = Attempt(number, step, blocks, tuple(results), saved)
    if attempt.ok:
        if not hold:
            yield Commit(number, step)
            return attempt
        sealed = _report((yield Hold(number, step)))
        return replace(attempt, lasting=sealed.not_saved) if sealed.supported else attempt
    raised = attempt.error
    notes = None
    # A chart that contradicts the request raised nothing: no traceback's names to inspect.
    if raised is not None and NOT_PARSED not in results[-1].notes and raised.ename != CHART_ENAME:
        sent = yield Inspect(blocks, raised, number, step)
        notes = sent if isinstance(sent, FailureNotes) else None
    undone = _report((yield Rollback(number, step)))
    effects = [r.name for r in found.risks if r.kind in ("process", "delete", "write", "network", "shell")
               and r.name not in UNDONE_BY_ROLLBACK]
    yield Notice("undone", _undo_text(number, undone, saved, effects), attempt=number, step=step)
    return replace(attempt, undone=undone, notes=notes)


def install(missing: MissingModule, number: int, settings: LoopSettings) -> Generator[Action, Any, bool]:
    """Ask, then install the package for a missing module; True if it worked."""
    command = f"%pip install {missing.package}"
    if not policy.install_allowed(settings.policy, missing.package):
        approval = _approval((yield AskApproval(
            (command,),
            ((f"module {missing.module!r} is not installed; install package {missing.package!r} "
              "into this kernel's own environment"),),
            number,
            "install",
        )))
        if not approval.granted:
            yield Notice("install", f"not installing {missing.package} ({approval.why or 'rejected'})",
                         attempt=number)
            return False
    yield Notice("install", f"installing {missing.package} for `import {missing.module}`", attempt=number)
    result: ExecutionResult = yield Install(missing.package, missing.module, number)
    if result is None or not result.ok:
        why = result.error.one_line() if result is not None and result.error else "no installer here"
        yield Notice("install", f"installing {missing.package} failed: {why}", attempt=number)
        return False
    return True
