"""``%%ask`` and ``%ask``: the magic driver of the agent loop."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.context.kernel_state import tracker_for
from jupyter_ai_ci.core.usage import UsageLog, render
from jupyter_ai_ci.errors import BudgetExceeded, Interrupted, PolicyRefused, RetriesExhausted, UsageProblem
from jupyter_ai_ci.events import CallModel, Execute, ExecutionResult, Message, Notice, Outcome
from jupyter_ai_ci.executors.shell import ShellExecutor
from jupyter_ai_ci.notebook.comm import CommSink, frontend_info
from jupyter_ai_ci.notebook.replay import ReplayStore
from jupyter_ai_ci.notebook.sinks import CellSink, NextInputSink
from jupyter_ai_ci.run.drive import Timings
from jupyter_ai_ci.run.flow import InProcessKernel, run_sync
from jupyter_ai_ci.run.request import Options, Result, Run
from jupyter_ai_ci.run.session import Session
from jupyter_ai_ci.safety.approval import StdinApprover
from jupyter_ai_ci.tokens import count_tokens


class PrintReporter:
    """Tells the user what happens by printing: works in every frontend
    (JupyterLab, Notebook, VS Code, the IPython terminal)."""

    def __init__(self, model: str) -> None:
        self.model = model

    def _say(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def model_started(self, call: CallModel) -> None:
        label = {"first": "writing code", "fix": "fixing", "next-step": "next step"}[call.purpose]
        self._say(f"── {self.model}: {label} ──\n")

    def model_text(self, text: str) -> None:
        self._say(text)

    def model_finished(self) -> None:
        self._say("\n")

    def notice(self, notice: Notice) -> None:
        if notice.kind == "replayed-text":
            self._say(notice.text.rstrip("\n") + "\n")
            return
        if notice.kind == "refused":
            return  # the cell's error says it, once
        mark = {"retrying": "✗", "attempt": "▶", "replay": "↻", "undone": "↺",
                "not-undoable": "!"}.get(notice.kind, "·")
        self._say(f"{mark} {notice.text}\n")

    def executing(self, action: Execute) -> None:
        pass

    def executed(self, action: Execute, result: ExecutionResult) -> None:
        for note in result.notes:
            self._say(f"· {note}\n")


@magics_class
class AskMagics(Magics, AICISettings):
    """Holds the settings (``%config AskMagics``) and the session of this kernel."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.session = Session(self)  # conversation, usage, model clients: see run/session.py
        self.last_outcome: Outcome | None = None
        self.last_timings = Timings()  # where the last run's time went (bench/ reads it)
        if shell is not None:
            tracker_for(shell)  # from now on, assignment order and errors are recorded

    @property
    def conversation(self) -> list[Message]:
        return self.session.conversation()

    @property
    def usage(self) -> UsageLog:
        return self.session.usage

    def _show_context(self, run: Run, fresh: bool) -> None:
        query = run.query()
        found = InProcessKernel(self.shell).snapshot(replace(query, conversation=()) if fresh else query)
        messages, stopped = run.preview(found)
        total = sum(count_tokens(m.content) for m in messages)
        context = found.context
        why = f"\n· {stopped}" if stopped else ""
        print(f"· context: {context.tokens} of {context.budget} tokens; whole request: {total} tokens "
              f"({context.counter}); not sent{why}")
        for message in messages:
            print(f"── {message.role} ──\n{message.content}")

    @magic_arguments()
    @argument("--retries", type=int, default=None, metavar="N",
              help="fix attempts after a failed attempt, per step (default 2: at most 3 attempts)")
    @argument("--model", default=None, metavar="NAME",
              help="model to use for this request (default: AICISettings.model / $JUPYTER_AI_CI_MODEL)")
    @argument("--steps", type=int, default=None, metavar="N",
              help="with N > 1 a successful step's output goes back to the model, which writes "
                   "the next step or ends with prose (default 1)")
    @argument("--no-run", action="store_true", help="insert the code without running it")
    @argument("--new", action="store_true", help="forget earlier requests of this kernel")
    @argument("--regenerate", action="store_true",
              help="call the model even if this request was answered before (skip replay)")
    @argument("--yes", action="store_true",
              help="approve what the policy would ask about for this request (flagged code, "
                   "installing a missing package); the deny list still applies")
    @argument("--show-context", action="store_true",
              help="print exactly what would be sent, with its token count, and send nothing")
    @argument("request", nargs="*", help="the request (line magic); in %%ask, the cell body")
    @line_cell_magic
    def ask(self, line: str, cell: str | None = None) -> None:
        """Ask the model for code, run it in this kernel, and fix it from the traceback.

        Usage::

            %%ask [--retries N] [--model NAME] [--steps N] [--no-run] [--new] [--regenerate] [--yes]
                  [--show-context]
            Load sales.csv and plot total revenue per region

            %ask how many rows does df have?

        The model is told about your variables (names, types, shapes, DataFrame
        columns), recent cells and earlier requests, within
        AskMagics.max_context_tokens; --show-context prints exactly what would
        be sent, with its token count, and sends nothing. Every ```python block
        of its reply runs, in order. When an attempt raises, the traceback goes
        back to the model and it tries again, at most --retries more times
        (default 2). The code that worked is put in a new cell below. After the last failed attempt the
        cell ends in an error naming the last exception, so Run All stops.

        Re-running an unchanged request replays the code that worked, without
        calling the model (--regenerate to ask again). %ask_usage shows tokens
        and requests; %ask_replay lists or clears replay records.

        Safety: an attempt that fails is undone (the variables it changed are
        restored, new names removed). Code the scan flags as risky (processes,
        deleting files, network, eval, exit, shell escapes) is run only after
        you approve it (answer y at the prompt), or with --yes; set
        %config AskMagics.policy = 'auto' | 'ask-risky' | 'ask', and the
        allow / deny lists, execution_timeout, max_tokens_per_request and
        max_tokens_per_session. A guard against accidents, not a sandbox.

        Endpoint: OPENAI_API_KEY / OPENAI_BASE_URL (any OpenAI-compatible
        server), model from $JUPYTER_AI_CI_MODEL; see %config AskMagics.
        """
        args = parse_argstring(self.ask, line)
        request = (cell if cell is not None else " ".join(args.request)).strip()
        if cell is not None and args.request:
            raise UsageError("%%ask takes the request in the cell body, not on the first line "
                             f"(unexpected: {' '.join(args.request)!r})")
        if not request:
            raise UsageError("%ask needs a request: write it in the cell body under %%ask, "
                             "or after %ask on the same line")
        for flag in ("retries", "steps"):
            value = getattr(args, flag)
            if value is not None and value < (0 if flag == "retries" else 1):
                raise UsageError(f"--{flag} must be at least {0 if flag == 'retries' else 1}")
        options = Options(retries=args.retries, steps=args.steps, run=not args.no_run, model=args.model,
                          regenerate=args.regenerate, new=args.new and not args.show_context, yes=args.yes)
        reporter = PrintReporter("")
        try:
            run = Run(self.session, request, options, replay_dir=os.getcwd(), source="magic",
                      say=lambda text: print(text, end=""))
        except UsageProblem as exc:
            raise UsageError(str(exc)) from None
        if args.show_context:  # a preview: it changes nothing, --new included
            self._show_context(run, fresh=args.new)
            return
        reporter.model = run.endpoint.model
        executor = ShellExecutor(self.shell, self.max_output_chars, self.execution_timeout,
                                 self.snapshot_max_bytes)
        self.last_timings = Timings()
        try:
            result = run_sync(run, InProcessKernel(self.shell), executor, reporter,
                              StdinApprover(self.shell, reporter._say), self.last_timings)
        except KeyboardInterrupt:
            raise Interrupted("interrupted: nothing was inserted (an attempt that was running "
                              "has been undone)") from None
        self.last_outcome = result.outcome
        self._finish(result)

    @line_magic
    def ask_usage(self, line: str) -> None:
        """Tokens and requests per %%ask and for this session (cost when prices are set)."""
        print(render(self.session.usage, self.prices))

    @magic_arguments()
    @argument("--clear", action="store_true", help="forget every replay record in the replay file")
    @line_magic
    def ask_replay(self, line: str) -> None:
        """List the replay records of this folder's replay file, or --clear them."""
        args = parse_argstring(self.ask_replay, line)
        store = ReplayStore(os.path.join(os.getcwd(), self.replay_file))
        if args.clear:
            print(f"cleared {store.clear()} replay record(s) from {store.path}")
            return
        records = store.all()
        if not records:
            print(f"no replay records in {store.path}")
        for r in records:
            print(f"{r.key[:8]}  {r.generated_at}  {r.model}  {r.request.strip().splitlines()[0][:60]}")

    def _sink(self) -> CellSink:
        # The JupyterLab extension marks the kernel when it connects (see comm.py).
        if frontend_info(self.shell) is not None:
            return CommSink(self.shell)
        return NextInputSink(self.shell)

    def _finish(self, result: Result) -> None:
        outcome = result.outcome
        tokens = (f"{outcome.usage.prompt_tokens} in / {outcome.usage.completion_tokens} out tokens"
                  if outcome.requests else "no model request")
        n = len(outcome.attempts)
        if outcome.status == "refused":
            raise PolicyRefused(outcome.reason)
        if outcome.status == "over-budget":
            raise BudgetExceeded(f"{outcome.reason}; raise %config AskMagics.max_tokens_per_request "
                                 "/ max_tokens_per_session")
        if outcome.status == "failed":
            error = outcome.last_error
            if error is not None:
                print(error.traceback, file=sys.stderr)
                raise RetriesExhausted(n, error.one_line(), outcome.early_stop)
            raise RetriesExhausted(n, "the model answered the traceback without code")
        if outcome.status == "answered":
            print(f"· answered without code ({tokens})")
            return
        if outcome.requests == 0:
            # A replay: the cells from the first run are already in the notebook.
            where = "replayed code; its cells are the ones generated before"
        else:
            where = self._sink().insert(outcome.cells, result.provenance)
        if outcome.status == "not-run":
            print(f"· not run (--no-run): {where} ({tokens})")
            return
        plural = "attempt" if n == 1 else "attempts"
        print(f"✓ done in {n} {plural} ({tokens}); {where}")


def keep_question_marks(lines: list[str]) -> list[str]:
    """IPython input transformer: ``%ask how many rows?`` is a request, not help.

    IPython turns a line ending in ``?`` into ``%pinfo`` before magics are
    seen; a question is the most natural request, so for a one-line ``%ask``
    we call the magic explicitly first.  ``%ask?`` alone still shows help.
    """
    if len(lines) != 1:
        return lines
    line = lines[0].strip()
    if line.startswith("%ask ") and line.endswith("?"):
        return [f"get_ipython().run_line_magic('ask', {line[len('%ask '):].strip()!r})\n"]
    return lines
