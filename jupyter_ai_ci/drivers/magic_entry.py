# IPython's magic decorators are untyped: the same relaxations as drivers.magic had in pyproject.
# mypy: disallow-subclassing-any=False, disallow-untyped-decorators=False, disallow-untyped-calls=False
"""What ``%load_ext jupyter_ai_ci`` registers, and nothing that does the work.

``AskMagics`` carries the settings (``%config AskMagics`` lists its traits
before any request), the magics' arguments and their help; the work is in
``drivers.magic``, imported on the first call, because it pulls in the whole
run (loop, context, executors, safety) and costs ~8x IPython's own
``%load_ext autoreload`` (``bench/bench_load_ext.py``).  So this module
imports only IPython's magic machinery and ``config`` (traitlets alone).

The kernel tracker (assignment order, errors, displays: ``context.kernel_state``)
must see every cell from the load on, but its module is the expensive half of
the context.  Until the first cell after the load it is stood in for by
``_TrackerHandover``, which keeps what the tracker would have seen by then.
"""

from __future__ import annotations

import sys
import weakref
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from jupyter_ai_ci.config import AICISettings

if TYPE_CHECKING:
    from jupyter_ai_ci.core.usage import UsageLog
    from jupyter_ai_ci.drivers.magic import MagicDriver
    from jupyter_ai_ci.events import Message, Outcome
    from jupyter_ai_ci.run.drive import Timings
    from jupyter_ai_ci.run.session import Session

_KERNEL_STATE = "jupyter_ai_ci.context.kernel_state"


class _TrackerHandover:
    """Starts ``kernel_state``'s tracker at the first cell after the load, as if it
    had been started at the load: the namespace as it was then, and the cell
    that ran ``%load_ext`` (if any), are handed to it."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        # Same snapshot the tracker takes when it starts: identities only, never values.
        self.ids = {name: id(value) for name, value in list(shell.user_ns.items()) if not name.startswith("_")}
        self.load_cell: Any = None
        shell.events.register("post_run_cell", self.post_run_cell)
        shell.events.register("pre_run_cell", self.pre_run_cell)

    def post_run_cell(self, result: Any) -> None:
        self.load_cell = result  # the cell that loaded us; nothing runs between it and the next

    def pre_run_cell(self, info: Any) -> None:
        self.finish()

    def cancel(self) -> None:
        for event, hook in (("post_run_cell", self.post_run_cell), ("pre_run_cell", self.pre_run_cell)):
            if hook in self.shell.events.callbacks[event]:
                self.shell.events.unregister(event, hook)
        _handovers.pop(self.shell, None)

    def finish(self) -> None:
        self.cancel()
        from jupyter_ai_ci.context.kernel_state import tracker_for

        tracker = tracker_for(self.shell)
        if self.load_cell is not None and tracker.tick == 0:
            tracker._ids = self.ids  # what the namespace was at the load, so the load cell's changes count
            tracker.post_run_cell(self.load_cell)


_handovers: weakref.WeakKeyDictionary[Any, _TrackerHandover] = weakref.WeakKeyDictionary()


def start_tracking(shell: Any) -> None:
    """Record assignment order and errors from now on (cheaply until the first cell)."""
    if _KERNEL_STATE in sys.modules:  # already paid for: start the tracker itself
        sys.modules[_KERNEL_STATE].tracker_for(shell)
    elif shell not in _handovers:
        _handovers[shell] = _TrackerHandover(shell)


def finish_tracking_handover(shell: Any) -> None:
    """Called by the implementation before it reads the tracker (a ``%ask`` run outside a cell)."""
    handover = _handovers.get(shell)
    if handover is not None:
        handover.finish()


def stop_tracking(shell: Any) -> None:
    handover = _handovers.get(shell)
    if handover is not None:
        handover.cancel()
    if _KERNEL_STATE in sys.modules:  # else no tracker was ever started
        sys.modules[_KERNEL_STATE].forget(shell)


@magics_class
class AskMagics(Magics, AICISettings):
    """Holds the settings (``%config AskMagics``) and the session of this kernel."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self._driver: MagicDriver | None = None
        if shell is not None:
            start_tracking(shell)

    def driver(self) -> MagicDriver:
        """The implementation, made (and its modules imported) on first use."""
        if self._driver is None:
            from jupyter_ai_ci.drivers.magic import MagicDriver

            self._driver = MagicDriver(self)
        return self._driver

    # What tests and bench/ read from the registered instance; each loads the implementation.
    @property
    def session(self) -> Session:
        return self.driver().session

    @property
    def conversation(self) -> list[Message]:
        return self.driver().session.conversation()

    @property
    def usage(self) -> UsageLog:
        return self.driver().session.usage

    @property
    def last_outcome(self) -> Outcome | None:
        return self.driver().last_outcome

    @property
    def last_timings(self) -> Timings:
        return self.driver().last_timings

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
        args = parse_argstring(self.ask, line)  # a mistyped option costs no import
        self.driver().ask(args, cell)

    @line_magic
    def ask_usage(self, line: str) -> None:
        """Tokens and requests per %%ask and for this session (cost when prices are set)."""
        self.driver().ask_usage()

    @magic_arguments()
    @argument("--clear", action="store_true", help="forget every replay record in the replay file")
    @line_magic
    def ask_replay(self, line: str) -> None:
        """List the replay records of this folder's replay file, or --clear them."""
        args = parse_argstring(self.ask_replay, line)
        self.driver().ask_replay(args)


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


def register(shell: Any) -> None:
    """``load_ipython_extension``: the magics, the transformer, the tracker."""
    shell.register_magics(AskMagics)
    if keep_question_marks not in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.append(keep_question_marks)


def unregister(shell: Any) -> None:
    """``unload_ipython_extension``.  IPython has no public way to unregister magics; ours go by name."""
    stop_tracking(shell)  # stop recording assignment order
    for kind in ("line", "cell"):
        shell.magics_manager.magics[kind].pop("ask", None)
    if keep_question_marks in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.remove(keep_question_marks)
