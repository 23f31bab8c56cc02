"""What ``%load_ext jupyter_ai_ci`` registers, and nothing that does the work.

``AskMagics`` carries the settings (``%config AskMagics`` lists its traits
before any request), the magics' arguments and their help; the work is in
``drivers.magic``, imported on the first call, because it pulls in the whole
run (loop, context, executors, safety) and costs ~8x IPython's own
``%load_ext autoreload`` (``bench/bench_load_ext.py``).  So this module
imports only IPython's magic machinery, ``config`` (traitlets alone) and the
kernel tracker (``context.tracker``, standard library only), which must see
every cell from the load on.

The implementation gets what it needs (the settings, the shell) as arguments
and imports nothing from here, so the two modules form no cycle.
"""

from __future__ import annotations

import re
import sys
from argparse import ArgumentTypeError
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.context.tracker import forget, tracker_for
from jupyter_ai_ci.drivers.own_settings import OwnSettings

if TYPE_CHECKING:
    from jupyter_ai_ci.core.usage import UsageLog
    from jupyter_ai_ci.drivers.magic import MagicDriver
    from jupyter_ai_ci.events import Message, Outcome
    from jupyter_ai_ci.run.report import Timings
    from jupyter_ai_ci.run.session import Session


def _count_or_auto(word: str) -> int | str:
    """``--candidates``: a count, or 'auto' (the setting's own rule, for this request)."""
    if word.strip().lower() == "auto":
        return "auto"
    try:
        return int(word)
    except ValueError:
        raise ArgumentTypeError(f"a count of candidates or 'auto', not {word!r}") from None


@magics_class
class AskMagics(Magics, AICISettings):
    """Holds the settings (``%config AskMagics``) and the session of this kernel."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self._driver: MagicDriver | None = None
        # The person's values, which every request reads; generated code's changes are put back.
        self._own = OwnSettings(self)
        if shell is not None:
            tracker_for(shell)  # from now on, assignment order, errors and displays are recorded

    def driver(self) -> MagicDriver:
        """The implementation, made (and its modules imported) on first use."""
        if self._driver is None:
            from jupyter_ai_ci.drivers.magic import MagicDriver

            self._driver = MagicDriver(self, self.shell, self._own)
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
    @argument("--candidates", type=_count_or_auto, default=None, metavar="K",
              help="candidates that must agree: up to K solutions run and are compared, the largest "
                   "group's applied; 'auto': 2 for a request about data on the managed local model "
                   "(1 under policy 'ask' or when its first code ran over 10 s), else 1 "
                   "(default: AICISettings.candidates, 'auto')")
    @argument("--use", type=int, default=None, metavar="N",
              help="use this one: apply candidate N of this request's last vote instead of the one the "
                   "vote applied (no model call; its cells replace the applied ones)")
    @argument("--no-run", action="store_true", help="insert the code without running it")
    @argument("--answer", dest="answer", action="store_const", const=True, default=None,
              help="end with an answer in words from the model, which has seen the output "
                   "(default: for questions; AICISettings.answer)")
    @argument("--no-answer", dest="answer", action="store_const", const=False,
              help="no answer in words: the cells are the answer")
    @argument("--new", action="store_true", help="forget earlier requests of this kernel")
    @argument("--regenerate", action="store_true",
              help="call the model even if this request was answered before (skip replay)")
    @argument("--yes", action="store_true",
              help="approve what the policy would ask about for this request (flagged code, "
                   "installing a missing package); the deny list still applies, and code from a "
                   "replay record you did not sign is still asked about")
    @argument("--show-context", action="store_true",
              help="print exactly what would be sent, with its token count, and send nothing")
    @argument("request", nargs="*", help="the request (line magic); in %%ask, the cell body")
    @line_cell_magic
    def ask(self, line: str, cell: str | None = None) -> None:
        """Ask the model for code, run it in this kernel, and fix it from the traceback.

        Usage::

            %%ask [--retries N] [--model NAME] [--steps N] [--candidates K] [--use N] [--no-run]
                  [--answer | --no-answer]
                  [--new] [--regenerate] [--yes] [--show-context]
            Load sales.csv and plot total revenue per region

            %ask how many rows does df have?

        Options come first (whole names only); in %ask the rest of the line is
        the request, as typed.

        The model is told about your variables (names, types, shapes, DataFrame
        columns), recent cells and earlier requests, within
        AskMagics.max_context_tokens; --show-context prints exactly what would
        be sent, with its token count, and sends nothing. Every ```python block
        of its reply runs, in order. When an attempt raises, the traceback goes
        back to the model and it tries again, at most --retries more times
        (default 2). The code that worked is put in a new cell below. A question
        ("which region earns most?") then gets an answer in words from the model,
        which has seen the output (--answer / --no-answer; AskMagics.answer).
        After the last failed attempt the cell ends in an error naming the last
        exception, so Run All stops.

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
        args = parse_ask_line(self.ask.parser, line)  # a mistyped option costs no import
        self.driver().ask(args, cell)

    @magic_arguments()
    @line_magic
    def ask_usage(self, line: str) -> None:
        """Tokens and requests per %%ask and for this session (cost when prices are set)."""
        parse_argstring(self.ask_usage, line)  # it takes none: a typo is said, not ignored
        self.driver().ask_usage()

    @magic_arguments()
    @argument("--clear", action="store_true", help="forget every replay record in this folder's replay store")
    @line_magic
    def ask_replay(self, line: str) -> None:
        """List the replay records of this folder's replay store, or --clear them."""
        args = parse_argstring(self.ask_replay, line)
        self.driver().ask_replay(args)


# A word as typed: a quoted string (quotes kept, spaces inside) or a run of non-spaces.
_WORD = re.compile(r""""[^"]*"|'[^']*'|\S+""")


def _unquoted(word: str) -> str:
    return word[1:-1] if len(word) >= 2 and word[0] == word[-1] and word[0] in "\"'" else word


def parse_ask_line(parser: Any, line: str) -> Any:
    """``%ask``'s line: options first, then the request exactly as typed.

    IPython's own parsing reads options anywhere in the line and accepts any unique prefix of
    one, so a request ending "use --y" was run with --yes, flagged code and all; and it keeps
    an option value's quotes (``--model "qwen2.5-coder:7b"`` sent the quotes).  Here the first
    word that is not an option starts the request (``--`` ends the options too), only whole
    option names count, and a value loses its quotes."""
    parser.allow_abbrev = False
    argv: list[str] = []
    start, value_next = len(line), False
    for word in _WORD.finditer(line):
        text = word.group(0)
        if value_next:
            argv.append(_unquoted(text))
            value_next = False
        elif text == "--":
            start = word.end()
            break
        elif text.startswith("-"):
            argv.append(_unquoted(text))
            option = parser._option_string_actions.get(text)  # argparse's own table of the options
            value_next = option is not None and option.nargs != 0  # --retries N, not --yes
        else:
            start = word.start()
            break
    args = parser.parse_args(argv)
    request = line[start:].strip()
    args.request = [request] if request else []
    return args


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
    for transform in (keep_question_marks, run_once):
        if transform not in shell.input_transformers_cleanup:
            shell.input_transformers_cleanup.append(transform)


def run_once(lines: list[str]) -> list[str]:
    """Skips a generated cell whose code its ``%%ask`` cell already ran (``notebook/once.py``).
    Until a ``%%ask`` has run, that module is not loaded and there is nothing to skip."""
    once = sys.modules.get("jupyter_ai_ci.notebook.once")
    return lines if once is None else once.once(lines)  # type: ignore[no-any-return]


def unregister(shell: Any) -> None:
    """``unload_ipython_extension``.  IPython has no public way to unregister magics; ours go by name."""
    forget(shell)  # stop recording assignment order
    manager = shell.magics_manager
    for kind, names in AskMagics.magics.items():  # %ask, %%ask, %ask_usage, %ask_replay
        for name in names:
            manager.magics[kind].pop(name, None)
    magics = manager.registry.get(AskMagics.__name__)
    if isinstance(magics, AskMagics):  # its session goes with it: a new load starts afresh
        del manager.registry[AskMagics.__name__]
        if magics in getattr(shell, "configurables", ()):
            shell.configurables.remove(magics)  # else %config AskMagics would show this one after a reload
    once = sys.modules.get("jupyter_ai_ci.notebook.once")
    if once is not None:
        once.forget(shell)
    for transform in (keep_question_marks, run_once):
        if transform in shell.input_transformers_cleanup:
            shell.input_transformers_cleanup.remove(transform)
