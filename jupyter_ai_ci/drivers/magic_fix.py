"""``%ask fix`` and ``%ask explain``: the last failed cell, fixed or explained, in any frontend.

The request, its checks and its verdict are ``run.fixcell``'s (the panel's Fix action
uses the same); this module reads the failed cell from the kernel, drives the run
in it (the magic's own executor: the attempt is transactional) and shows the result:
the tried fix inserted below (a new cell, or the next input where no extension
inserts cells) with its diff printed, or the explanation in words.
"""

from __future__ import annotations

import os
from argparse import Namespace
from typing import Any, Protocol

from IPython.core.error import UsageError

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.context.privacy import mask_secrets, secret_values
from jupyter_ai_ci.drivers import magic_undo
from jupyter_ai_ci.drivers.magic_view import RichReporter
from jupyter_ai_ci.errors import UsageProblem
from jupyter_ai_ci.run import fixcell
from jupyter_ai_ci.run.request import Options, Result, Run
from jupyter_ai_ci.run.session import Session


class Host(Protocol):
    """What this needs of ``drivers.magic.MagicDriver`` (not imported: no cycle)."""

    shell: Any
    session: Session
    settings: AICISettings
    _request: str
    _inserted: tuple[str, ...]

    def _reporter(self) -> Any: ...
    def drive(self, run: Run, reporter: Any) -> Result: ...
    def _insert(self, result: Result) -> str: ...


def fix_last(driver: Host, args: Namespace, kind: fixcell.Kind) -> None:
    shell = driver.shell
    secrets = tuple(secret_values(shell.user_ns, os.environ))
    options = Options(retries=args.retries, model=args.model, regenerate=args.regenerate, yes=args.yes)
    reporter = driver._reporter()
    try:
        cell = fixcell.failed_cell(shell, secrets)
        run = fixcell.make_run(driver.session, cell, kind, options, source="magic", say=reporter.said)
    except UsageProblem as exc:
        raise UsageError(str(exc)) from None
    result = driver.drive(run, reporter)
    outcome = result.outcome
    if kind == "explain":
        try:
            text = fixcell.explanation(outcome)
        except Exception:
            if isinstance(reporter, RichReporter):
                reporter.finish("✗ no explanation")
            raise
        if isinstance(reporter, RichReporter):
            reporter.finish(f"explained why {cell.label} failed · nothing was run", text)
        else:
            print(text)
        return
    try:
        code = fixcell.fixed_code(cell, outcome)
    except Exception:
        if isinstance(reporter, RichReporter):
            reporter.finish(f"✗ {cell.label} not fixed: the error below says why")
        raise
    retries = len(outcome.attempts) - 1
    ran = "ran without error" + (f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else "")
    meta = dict(result.provenance)
    meta["fixes"] = {"cell": cell.label, "source": mask_secrets(cell.source, run.secrets)}
    result.provenance = meta
    where = driver._insert(result)
    shown = f"✓ fixed {cell.label}: the fix {ran} · {where}"
    not_kept = magic_undo.note_request(driver, driver._request, run, result, driver._inserted)
    shown += f" · {not_kept}" if not_kept else ""
    delta = fixcell.diff(cell.source, code, cell.label)
    if isinstance(reporter, RichReporter):
        reporter.finish(shown, f"```diff\n{delta}\n```", undo=magic_undo.kept_id(driver, driver._request))
    else:
        print(delta)
        print(shown)
    if hasattr(shell, fixcell.TARGET):
        delattr(shell, fixcell.TARGET)  # fixed: a later %ask fix means a later error
