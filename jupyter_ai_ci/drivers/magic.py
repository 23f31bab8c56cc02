"""``%%ask``, ``%ask_usage`` and ``%ask_replay``: the magic driver of the agent loop.

What ``%load_ext`` registers (settings, arguments, help) is ``drivers.magic_entry``;
this module, and the whole run it imports, is loaded at the first call.  It imports
nothing from ``magic_entry``: the settings and the shell come as arguments.
"""

from __future__ import annotations

import os
import sys
from argparse import Namespace
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from IPython.core.error import UsageError

from jupyter_ai_ci.config import AICISettings, apply_shared
from IPython.core.display_functions import display

from jupyter_ai_ci.core.usage import render
from jupyter_ai_ci.drivers import magic_undo
from jupyter_ai_ci.drivers.magic_print import PrintReporter
from jupyter_ai_ci.drivers.magic_view import RichReporter
from jupyter_ai_ci.drivers.own_settings import OwnSettings
from jupyter_ai_ci.errors import BudgetExceeded, Interrupted, NotAnswered, PolicyRefused, RetriesExhausted, UsageProblem
from jupyter_ai_ci.events import Outcome
from jupyter_ai_ci.executors.shell import ShellExecutor
from jupyter_ai_ci.notebook import once
from jupyter_ai_ci.notebook.comm import CommSink, frontend_info
from jupyter_ai_ci.notebook.replay import ReplayStore
from jupyter_ai_ci.notebook.sinks import CellSink, NextInputSink
from jupyter_ai_ci.run.report import Timings
from jupyter_ai_ci.run.fixcell import KINDS
from jupyter_ai_ci.run.flow import InProcessKernel, run_sync
from jupyter_ai_ci.run.request import Options, Result, Run
from jupyter_ai_ci.run.session import Session
from jupyter_ai_ci.run.summary import fix_in_words, summarize
from jupyter_ai_ci.safety.approval import StdinApprover
from jupyter_ai_ci.tokens import count_tokens
from jupyter_ai_ci.safety.undostack import Limits

class MagicDriver:
    """The work of ``%%ask``, ``%ask_usage`` and ``%ask_replay`` for one ``AskMagics``:
    ``settings`` is that instance, read at each call, so ``%config`` applies at once."""

    def __init__(self, settings: AICISettings, shell: Any, own: OwnSettings | None = None) -> None:
        try:  # jupyter_ai_ci_config.py, under ipython_config.py and %config
            apply_shared(settings, getattr(shell, "config", {}))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        self.own = own if own is not None else OwnSettings(settings)
        self.own.take()  # the person's, before any generated code ran: every request reads them
        self.settings = settings
        self.shell = shell
        self.session = Session(settings)  # conversation, usage, model clients: see run/session.py
        self.last_outcome: Outcome | None = None
        self.last_timings = Timings()  # where the last run's time went (bench/ reads it)
        self._count: int | None = None  # In [n] of the %%ask running now
        self._request = ""  # the id the last request's attempts are kept under, for %ask undo
        self._run: Run | None = None
        self._inserted: tuple[str, ...] = ()  # ids of the cells the last request inserted

    def _show_context(self, run: Run, fresh: bool) -> None:
        query = run.query()
        found = InProcessKernel(self.shell).snapshot(replace(query, conversation=()) if fresh else query)
        messages, stopped = run.preview(found, fresh)
        total = sum(count_tokens(m.content) for m in messages)
        context = found.context
        why = f"\n· {stopped}" if stopped else ""
        print(f"· context: {context.tokens} of {context.budget} tokens; whole request: {total} tokens "
              f"({context.counter}); not sent{why}")
        for message in messages:
            print(f"── {message.role} ──\n{message.content}")

    def ask(self, args: Namespace, cell: str | None) -> None:
        """``%%ask`` / ``%ask`` with its arguments parsed (the help is ``AskMagics.ask``'s)."""
        # It starts and ends with the person's settings: what generated code changes is put back.
        with self.own.request(self.shell, lambda text: print(text, end="")):
            self._ask(args, cell)

    def _ask(self, args: Namespace, cell: str | None) -> None:
        request = (cell if cell is not None else " ".join(args.request)).strip()
        # Read before the generated code runs (its cells reset it): IPython 9 steps
        # shell.execution_count before a cell runs and IPython 8 after, the cell's result has it.
        result = getattr(getattr(self.shell, "displayhook", None), "exec_result", None)
        count = getattr(result, "execution_count", None)
        self._count = count if isinstance(count, int) else None
        if cell is None and request.split()[:1] == ["undo"] and not args.show_context:
            magic_undo.undo_last(self, request.split()[1:])
            return
        if cell is None and request in KINDS and not args.show_context:  # %ask fix, %ask explain
            from jupyter_ai_ci.drivers.magic_fix import fix_last

            self._checked(args)
            fix_last(self, args, request)  # type: ignore[arg-type]
            return
        if cell is not None and args.request:
            raise UsageError("%%ask takes the request in the cell body, not on the first line "
                             f"(unexpected: {' '.join(args.request)!r})")
        if not request:
            raise UsageError("%ask needs a request: write it in the cell body under %%ask, "
                             "or after %ask on the same line")
        self._checked(args)
        options = Options(retries=args.retries, steps=args.steps, run=not args.no_run, model=args.model,
                          regenerate=args.regenerate, new=args.new and not args.show_context, yes=args.yes,
                          answer=args.answer, candidates=args.candidates, use=args.use)
        reporter = self._reporter()
        try:
            run = Run(self.session, request, options, replay_dir=os.getcwd(), source="magic",
                      say=reporter.said, held_by=once.held_by_cells(self.shell, request))
        except UsageProblem as exc:
            raise UsageError(str(exc)) from None
        if args.show_context:  # a preview: it changes nothing, --new included
            self._show_context(run, fresh=args.new)
            return
        self._run, self._inserted = run, ()
        result = self.drive(run, reporter)
        self.last_outcome = result.outcome
        self._finish(result, reporter)

    def _checked(self, args: Namespace) -> None:
        for flag in ("retries", "steps", "candidates"):
            value = getattr(args, flag, None)
            if isinstance(value, int) and value < (0 if flag == "retries" else 1):
                raise UsageError(f"--{flag} must be at least {0 if flag == 'retries' else 1}")
        if isinstance(getattr(args, "candidates", None), int) and args.candidates > 9:
            raise UsageError("--candidates must be at most 9")

    def _reporter(self) -> PrintReporter | RichReporter:
        # A kernel's frontend renders HTML (a console shows the text/plain beside it); the
        # terminal shell prints every update anew, so it is told in lines instead.
        rich = getattr(self.shell, "kernel", None) is not None
        return RichReporter("", display) if rich else PrintReporter("")

    def drive(self, run: Run, reporter: PrintReporter | RichReporter) -> Result:
        """Run ``run`` in this kernel, its attempts transactional; the outcome is kept as the last."""
        reporter.model = run.endpoint.model
        m = self.settings
        rich = isinstance(reporter, RichReporter)
        # With the labextension the outputs go into the inserted cells; shown under this cell too,
        # every figure would appear twice.  The attempts' sections still show them as text.
        show = not (rich and frontend_info(self.shell) is not None)
        executor = ShellExecutor(self.shell, m.max_output_chars, m.execution_timeout, m.snapshot_max_bytes,
                                 show=show, undo=Limits.of(m))
        self._request = executor.request
        self.last_timings = Timings()
        try:
            with once.running(self.shell):
                result = run_sync(run, InProcessKernel(self.shell), executor, reporter,
                                  StdinApprover(self.shell, reporter.say), self.last_timings)
        except KeyboardInterrupt:
            if isinstance(reporter, RichReporter):
                reporter.finish("✗ interrupted")
            raise Interrupted("nothing was inserted (an attempt that was running "
                              "has been undone)") from None
        except Exception:
            if isinstance(reporter, RichReporter) and reporter.handle is not None:
                reporter.finish("✗ stopped: the error below says why")  # not left saying "writing code"
            raise
        self.last_outcome = result.outcome
        return result

    def ask_usage(self) -> None:
        print(render(self.session.usage, self.settings.prices))

    def ask_replay(self, args: Namespace) -> None:
        store = ReplayStore(os.path.join(os.getcwd(), self.settings.replay_file), say=lambda text: print(text, end=""))
        if args.clear:
            print(f"cleared {store.clear()} replay record(s) from {store.path}")
            return
        records = store.all()
        if not records:
            print(f"no replay records in {store.path}")
        for r in records:
            if r.unverified:  # its model and date are claims of whoever wrote it
                print(f"{r.key[:8]}  made elsewhere, not verified ({r.unverified})  "
                      f"{r.request.strip().splitlines()[0][:60]}")
            else:
                print(f"{r.key[:8]}  {r.generated_at}  {r.model}  {r.request.strip().splitlines()[0][:60]}")

    def _sink(self) -> CellSink:
        # The JupyterLab extension marks the kernel when it connects (see comm.py).
        if frontend_info(self.shell) is not None:
            return CommSink(self.shell, execution_count=self._count)
        return NextInputSink(self.shell)

    def _applied(self, outcome: Any, ids: Sequence[str]) -> None:
        # This cell ran the code: its generated cells must not run it again (notebook/once.py).
        if outcome.status == "success":
            once.note_applied(self.shell, [c.code for c in outcome.cells], ids)

    def _finish(self, result: Result, reporter: PrintReporter | RichReporter) -> None:
        outcome = result.outcome
        # The rich view's line sits right above the cell's error, which names the last one: not
        # twice (found by a newcomer).  The terminal prints no such line for a failure.
        line = summarize(outcome, result.timings.total, result.replayed).line(brief=isinstance(reporter, RichReporter))
        if result.held:  # its generated cells run the code; the notice said so
            if isinstance(reporter, RichReporter):
                # The note becomes the line (shown under it as well, it was said twice).
                note = reporter.view.notes.pop() if reporter.view.notes else "replayed"
                reporter.finish(f"↻ {note}", outcome.answer)
            elif outcome.answer:
                print(outcome.answer)
            return
        where = ""
        if outcome.status in ("success", "not-run"):
            where = self._insert(result)
        shown = f"{line} · {where}" if where else line
        undo_id = ""
        if self._run is not None and outcome.status == "success":
            not_kept = magic_undo.note_request(self, self._request, self._run, result, self._inserted)
            shown += f" · {not_kept}" if not_kept else ""
            undo_id = magic_undo.kept_id(self, self._request)
        vote = outcome.consensus
        # A failed "use this one" (or winner) leaves the vote as it was: the cell's output is
        # replaced, so its other results are offered again.
        others = [(g.candidates[0], g.shown, g.count, g.code) for g in vote.groups[1:]] \
            if vote is not None and outcome.status in ("success", "failed") else []
        if isinstance(reporter, RichReporter):
            reporter.finish(shown, outcome.answer if outcome.status in ("success", "answered") else "", others,
                            undo=undo_id)
        else:
            if outcome.status == "failed" and outcome.last_error is not None:
                print(outcome.last_error.traceback, file=sys.stderr)  # the terminal shows no sections
            if outcome.status in ("success", "answered", "not-run"):
                print(shown)
            for number, value, count, _ in others:
                print(f"  other result: {value} ({count} of {vote.counted if vote else 0}) — "
                      f"%%ask --use {number} applies it")
        if outcome.status == "refused":
            raise PolicyRefused(outcome.reason)
        if outcome.status == "over-budget":
            raise BudgetExceeded(f"{outcome.reason}; raise %config AskMagics.max_tokens_per_request "
                                 "/ max_tokens_per_session")
        if outcome.status == "failed" and outcome.reason:
            raise NotAnswered(outcome.reason)
        if outcome.status == "failed":
            error = outcome.last_error
            n = len(outcome.attempts)
            if error is not None:
                raise RetriesExhausted(n, error.one_line(), outcome.early_stop, fix_in_words(outcome))
            raise RetriesExhausted(n, "the model answered the traceback without code")

    def _insert(self, result: Result) -> str:
        """Put the cells in the notebook; say where they went."""
        outcome = result.outcome
        if frontend_info(self.shell) is None and result.replayed:
            # A replay where nobody can say which cells the notebook holds (nbclient, VS Code):
            # the generated cells, if any, follow and are known by their code (notebook/once.py).
            self._applied(outcome, ())
            return "replayed code; its cells are the ones generated before"
        once.retire_generated(self.shell)  # the cells these replace must not run after them
        sink = self._sink()
        where = sink.insert(outcome.cells, result.provenance)
        self._inserted = tuple(getattr(sink, "ids", ()))
        self._applied(outcome, self._inserted)
        return where
