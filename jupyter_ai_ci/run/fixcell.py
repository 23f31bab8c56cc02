"""Fix (or explain) one cell that failed: the request, the checks around it, the diff.

``%ask fix`` in any frontend and the Fix action on an error output ask the same
thing: the cell's source, its traceback and the live kernel state go to the model
as a request to rewrite *that cell*; the rewrite runs as a transactional attempt
(bounded retries, as ``%%ask``'s), so what is offered has already run without
error.  This module builds that ``Run`` and judges its outcome; the driver only
reads the failed cell (the kernel's last error, or the frontend's cell) and shows
what comes back.  Every way it can go wrong ends in one line, with the kernel as
it was: a failed attempt is rolled back by the transaction, and nothing is
inserted unless the fix ran.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from jupyter_ai_ci.context.last_error import TRACEBACK_CHARS, last_error
from jupyter_ai_ci.context.privacy import masked_cut
from jupyter_ai_ci.errors import AICIError, NotFixed, UsageProblem
from jupyter_ai_ci.events import Outcome
from jupyter_ai_ci.run.request import Options, Run
from jupyter_ai_ci.run.session import Session
from jupyter_ai_ci.safety.missing import missing_module
from jupyter_ai_ci.text import strip_ansi

Kind = Literal["fix", "explain"]
KINDS: tuple[Kind, ...] = ("fix", "explain")
# The cell a failed ``%ask fix`` was about: its own error is then the kernel's last one,
# and ``%ask fix`` again must still mean the user's cell, not the magic's.
TARGET = "_jupyter_ai_ci_fix_target"
_NOT_ERRORS = {
    "KeyboardInterrupt": "the cell was interrupted (KeyboardInterrupt), it did not fail: run it again",
    "SystemExit": "the cell asked to exit (SystemExit): there is nothing to fix",
}


@dataclass(frozen=True)
class FailedCell:
    """A cell that raised, as the model is shown it."""

    source: str  # what the cell holds now: what the fix replaces
    error: str  # "KeyError: 'Revenue'"
    traceback: str  # plain text, bounded, secrets masked
    count: int | None = None  # In [n], when known
    changed: bool = False  # the cell's source differs from what raised (the frontend says so)

    @property
    def ename(self) -> str:
        return self.error.partition(":")[0].strip()

    @property
    def label(self) -> str:
        return f"In [{self.count}]" if self.count is not None else "the failed cell"


def from_outputs(source: str, ename: str, evalue: str, traceback: Sequence[str] | str = (),
                 count: int | None = None) -> FailedCell:
    """The failed cell as a frontend holds it: its source now and its error output."""
    text = "\n".join(traceback) if not isinstance(traceback, str) else traceback
    error = f"{ename}: {evalue}" if evalue else ename
    return FailedCell(source, error, masked_cut(strip_ansi(text), TRACEBACK_CHARS, ()) or error, count)


def check(cell: FailedCell) -> None:
    """One line (``UsageProblem``) for a cell there is nothing to fix in."""
    if cell.ename in _NOT_ERRORS:
        raise UsageProblem(_NOT_ERRORS[cell.ename])
    if cell.ename in ("DeadKernelError", "KernelRestarted") or "kernel restart" in cell.error.lower():
        raise UsageProblem("that error came from a kernel restart, not from the cell: run the cell again")
    if not cell.source.strip():
        raise UsageProblem(f"{cell.label} is empty now: there is no code to fix")


def _ours(exc: Any) -> bool:
    # An error %ask itself raised (gave up, a usage line): the user's cell is the one before.
    return isinstance(exc, AICIError) or type(exc).__name__ == "UsageError"


def failed_cell(shell: Any, secrets: tuple[str, ...] = ()) -> FailedCell:
    """The kernel's last failed cell (IPython's record of the last exception); one line if none."""
    exc = getattr(sys, "last_value", None)
    kept = getattr(shell, TARGET, None)
    if _ours(exc) and isinstance(kept, FailedCell):
        return kept
    found = last_error(shell, secrets) if not _ours(exc) else None
    if found is None or not found.source.strip():
        raise UsageProblem("no failed cell to fix: run the cell that fails, then %ask fix "
                           "(or describe what to do: %ask fix the error in …)")
    cell = FailedCell(found.source, found.message, found.traceback, found.count)
    check(cell)
    setattr(shell, TARGET, cell)
    return cell


# What both requests show the model: the cell as it is, and how it failed.
_CELL = """

The cell:
```python
{source}
```

Its traceback:
```
{traceback}
```"""

_FIX = """\
Fix the notebook cell below ({label}): it raised {error}.
Reply with the whole corrected cell as ONE Python code block that replaces it: the same \
work, with only what the error requires changed (use the names and columns the kernel \
really has). Do not install packages.""" + _CELL

_EXPLAIN = """\
Explain in a few sentences, in words, why the notebook cell below ({label}) raised {error}, \
and what would fix it. Do not write or run code.""" + _CELL


_CHANGED = ("\n\nThe cell has been edited since it raised: the traceback is of the code that ran, "
            "the cell above is what it holds now.")


def request(cell: FailedCell, kind: Kind) -> str:
    template = _FIX if kind == "fix" else _EXPLAIN
    text = template.format(label=cell.label, error=cell.error, source=cell.source.rstrip(),
                           traceback=cell.traceback.strip() or cell.error)
    return text + (_CHANGED if cell.changed else "")


def compared(cell: FailedCell, ran: str | None) -> FailedCell:
    """``cell`` marked ``changed`` when the source that ran (the kernel's history; None:
    unknown) is not what it holds now: the fix is of what it holds, and says so."""
    if ran is None or _same(ran, cell.source):
        return cell
    return replace(cell, changed=True)


def changed_note(cell: FailedCell) -> str:
    return (f"{cell.label} has been edited since it raised: the fix is of the source it holds now"
            if cell.changed else "")


def make_run(session: Session, cell: FailedCell, kind: Kind, options: Options | None = None, *,
             thread: str = "", source: str = "", say: Callable[[str], None] = lambda text: None) -> Run:
    """The run that fixes (or explains) ``cell``: one step; a fix never installs (it says so
    instead) and ends without an answer in words; an explanation runs nothing.  No replay
    record: a fix the user rejected must not come back from one when Fix is clicked again
    (the fixed cell, once accepted, is what re-running the notebook runs)."""
    check(cell)
    options = options if options is not None else Options()
    # One candidate: the fix is tried, then offered for the person to accept or reject (the check);
    # the cell's source in the request would make 'auto' read most fixes as questions about data.
    if kind == "fix":
        chosen = replace(options, steps=1, answer=False, run=True, candidates=1)
    else:
        chosen = replace(options, steps=1, answer=False, run=False, candidates=1)
    run = Run(session, request(cell, kind), chosen, thread=thread, replay_dir=None, source=source, say=say)
    run.settings = replace(run.settings, install_missing=False)
    return run


def _same(a: str, b: str) -> bool:
    return [line.rstrip() for line in a.strip().splitlines()] == [line.rstrip() for line in b.strip().splitlines()]


def fixed_code(cell: FailedCell, outcome: Outcome) -> str:
    """The tried fix, or ``NotFixed`` with one line that says why there is none (every
    attempt was rolled back: the kernel is as it was)."""
    unchanged = f"; {cell.label} and the kernel are as they were"
    if outcome.status == "success" and outcome.cells:
        code = "\n\n".join(c.code for c in outcome.cells)
        if _same(code, cell.source):  # it ran this time: the state, not the cell, had changed
            raise NotFixed(f"the model sent {cell.label} back unchanged, and it runs now: run the cell again")
        return code
    if outcome.status == "refused":
        raise NotFixed(f"the fix was not run: {outcome.reason}{unchanged}")
    if outcome.status == "over-budget" or outcome.declined:  # the reason quotes the model's "I cannot"
        raise NotFixed(f"{outcome.reason}{unchanged}")
    missing = missing_module(outcome.last_error)
    if missing is not None:
        raise NotFixed(f"the fix needs the package {missing.package!r}, which is not installed: "
                       f"run %pip install {missing.package}, then fix again{unchanged}")
    tried = [a for a in outcome.attempts if a.code]
    if tried and all(_same("\n\n".join(a.code), cell.source) for a in tried):
        raise NotFixed(f"the model sent {cell.label} back unchanged: it cannot fix this one{unchanged}")
    if outcome.status == "answered" or not tried:
        raise NotFixed(f"the model answered without code: it cannot fix this one{unchanged}")
    error = outcome.last_error
    last = error.one_line() if error is not None else "no error shown"
    plural = "attempt" if len(tried) == 1 else "attempts"
    raise NotFixed(f"could not fix {cell.label}: gave up after {len(tried)} {plural}; last error: {last}"
                   f"{unchanged}")


def explanation(outcome: Outcome) -> str:
    """The answer in words (code the model wrote anyway is shown, never run)."""
    text = outcome.answer.strip()
    if not text:
        raise NotFixed(f"the model gave no explanation ({outcome.reason or outcome.status})")
    return text


def diff(before: str, after: str, label: str = "cell") -> str:
    """The cell, before → after, as a unified diff."""
    lines = difflib.unified_diff(before.rstrip().splitlines(), after.rstrip().splitlines(),
                                 f"{label} (before)", f"{label} (after)", lineterm="")
    return "\n".join(lines)
