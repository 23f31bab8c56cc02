"""Run code in the live IPython shell and report what happened as data.

Used by the magic.  The code goes through ``shell.run_cell`` so IPython's own
syntax (``%pip``, ``!ls``, top-level ``await``) and display machinery
(inline figures, rich reprs) work as in a cell the user typed.  While it runs
we tee stdout/stderr, the display publisher and the display hook, and take
over ``showtraceback`` so a failed attempt's traceback becomes data (shown as
one short line by the magic) instead of a red wall under the ``%%ask`` cell.

Around that: a watchdog interrupts code that runs past the timeout (the
kernel lives on, and the model is told it timed out), ``exit()`` is caught
before it can end the kernel, and ``checkpoint``/``rollback`` make an attempt
transactional (see ``transaction.py``).
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from types import TracebackType
from typing import Any

from jupyter_ai_ci.events import ErrorInfo, ExecutionResult, TransactionReport
from jupyter_ai_ci.executors import pip
from jupyter_ai_ci.executors.capture import OutputRecorder, Tee
from jupyter_ai_ci.executors.watchdog import AttemptTimeout, Watchdog
from jupyter_ai_ci.safety import undostack
from jupyter_ai_ci.safety.transaction import Transaction
from jupyter_ai_ci.safety.undostack import Limits, new_request_id
from jupyter_ai_ci.text import clean

# The shell attribute holding the exception of the attempt that just failed (see showtraceback).
LAST_FAILURE = "_jupyter_ai_ci_failure"
SHOWN_LIMIT = 2_000_000  # characters of one block's output passed on to the frontend


def _lineno(tb: TracebackType | None) -> int | None:
    """Line of the generated code where the error surfaced.

    The first frame is IPython's ``run_code``; the next is the cell's module
    code, whose filename identifies the cell.  The deepest frame with that
    filename is the line that failed (errors inside library calls point at
    the cell line that called the library).
    """
    if tb is None or tb.tb_next is None:
        return None
    cell_file = tb.tb_next.tb_frame.f_code.co_filename
    line = None
    node: TracebackType | None = tb.tb_next
    while node is not None:
        if node.tb_frame.f_code.co_filename == cell_file:
            line = node.tb_lineno
        node = node.tb_next
    return line


def _formatter(shell: Any) -> Any:
    """IPython's traceback formatter in its default mode ("Context") without colours.  The
    text is the same as the shell's once colours are cleaned away, and highlighting was most
    of the cost of a failed attempt (4-30 ms a traceback).  One mode whatever ``%xmode`` the
    user chose: the model is shown the failing lines, never local variables' values
    ("Verbose").  The shell's own line-cache check keeps its cells' source for later tracebacks."""
    from IPython.core import ultratb

    check = getattr(getattr(shell, "compile", None), "check_linecache", None)
    formatter: Any = ultratb.AutoFormattedTB  # typed differently by IPython 8 and 9
    try:
        return formatter(mode="Context", theme_name="nocolor", tb_offset=1, check_cache=check)
    except TypeError:  # IPython 8 names it a colour scheme
        return formatter(mode="Context", color_scheme="NoColor", tb_offset=1, check_cache=check)


class ShellExecutor:
    """``Executor`` over an ``InteractiveShell`` (ipykernel's or the terminal's)."""

    def __init__(self, shell: Any, max_output_chars: int = 4000, timeout: float = 0.0,
                 snapshot_max_bytes: int = 1 << 30, show: bool = True, undo: Limits | None = None) -> None:
        self.shell = shell
        # The request's attempts are kept for %ask undo under this id, within the person's limits.
        self.undo = undo or Limits()
        self.request = new_request_id()
        # False: record the outputs without showing them under the running cell (they are shown
        # elsewhere: in the cells the labextension inserts).
        self.show = show
        self.max_output_chars = max_output_chars
        self.timeout = timeout  # seconds per block; 0: none
        self.transaction = Transaction(shell.user_ns, snapshot_max_bytes, file_cap=self.undo.file_cap)
        self._tb: Any = None  # the traceback formatter, made at the first failure

    # ---- transactions (the loop's Checkpoint / Rollback / Commit) -----------
    def checkpoint(self, code: Sequence[str]) -> TransactionReport:
        return self.transaction.begin(code)

    def rollback(self) -> TransactionReport:
        self._let_go()
        return self.transaction.rollback()

    def commit(self) -> None:
        self._let_go()
        kept = self.transaction.handover()
        if kept is not None and self.undo.keep > 0:
            stack = undostack.stack_of(self.shell, self.undo.keep, self.undo.memory)
            stack.add(self.request, kept, len(undostack.history_of(self.shell)),
                      session=undostack.history_session(self.shell))
        elif kept is not None:
            kept.journal.discard()

    def not_kept(self) -> str:
        """Why this request's way back was not kept for an undo ("" when it was, or had none)."""
        stack = getattr(self.shell, undostack.ATTRIBUTE, None)
        return stack.notes.pop(self.request, "") if isinstance(stack, undostack.UndoStack) else ""

    def hold(self) -> TransactionReport:
        return self.transaction.seal()

    def rollback_held(self) -> TransactionReport:
        """Undo a held attempt later (``run/held.py``): only the names its code may change."""
        self._let_go()
        return self.transaction.rollback(only_changed=True)

    def _let_go(self) -> None:
        # The attempt is over: a failure nobody inspected (an interrupted run) must not keep its
        # exception, and with it the failed code's frames and their objects, on the shell.
        if LAST_FAILURE in vars(self.shell):
            delattr(self.shell, LAST_FAILURE)

    def install(self, package: str) -> ExecutionResult:
        """``%pip install`` into this kernel's own environment (``%pip`` uses
        ``sys.executable``), then let imports see the new package."""
        # Downloads can take longer than a generated cell may; still never forever.
        timeout, self.timeout = self.timeout, max(self.timeout, pip.INSTALL_TIMEOUT) if self.timeout else 0
        try:
            result = self.execute(f"%pip install --disable-pip-version-check {package}")
        finally:
            self.timeout = timeout
        importlib.invalidate_caches()
        return pip.judged(result)

    def execute(self, code: str) -> ExecutionResult:
        recorder = OutputRecorder(self.max_output_chars)
        errors: list[ErrorInfo] = []
        interrupted: list[BaseException] = []
        exits: list[bool] = []
        watchdog = Watchdog(self.timeout)
        started = time.perf_counter()
        with self._capturing(recorder, errors, interrupted, exits):
            try:
                with watchdog:
                    outcome = self.shell.run_cell(code, store_history=False, silent=False)
            except (KeyboardInterrupt, AttemptTimeout):
                # Landed outside the user's code (IPython's own machinery).
                if not watchdog.fired:
                    raise
                interrupted.append(KeyboardInterrupt())
                outcome = None
        seconds = time.perf_counter() - started
        error = errors[-1] if errors else None
        if watchdog.fired:
            error = ErrorInfo(
                "TimeoutError",
                f"the code ran longer than {self.timeout:g} s and was interrupted",
                f"TimeoutError: the code ran longer than {self.timeout:g} s and was interrupted "
                "(the kernel kept running). Make it faster, or work on a sample of the data.",
            )
        elif interrupted:
            # The user pressed interrupt: stop the whole run, not retry.
            raise KeyboardInterrupt
        elif exits:
            error = ErrorInfo("SystemExit", "the code called exit(); the kernel was kept running",
                              "SystemExit: the code called exit() or quit(). Code run by %%ask "
                              "must not end the kernel; remove the call.")
        if error is None and outcome is not None and not outcome.success:
            exc = outcome.error_before_exec or outcome.error_in_exec
            error = ErrorInfo(type(exc).__name__, str(exc), f"{type(exc).__name__}: {exc}")
        return ExecutionResult(
            output=clean(recorder.text.getvalue()),
            result=recorder.result,
            displays=tuple(recorder.displays),
            figures=tuple(recorder.figures),
            error=error,
            seconds=seconds,
            notes=recorder.notes(),
            outputs=tuple(recorder.outputs),
        )

    @contextmanager
    def _capturing(
        self, recorder: OutputRecorder, errors: list[ErrorInfo], interrupted: list[BaseException],
        exits: list[bool],
    ) -> Iterator[None]:
        shell = self.shell
        publisher = shell.display_pub
        hook = shell.displayhook
        original_publish = publisher.publish
        original_write = hook.write_format_data


        show = self.show
        if self._tb is None:
            self._tb = _formatter(shell)
        formatter = self._tb

        def publish(data: dict[str, Any], metadata: dict[str, Any] | None = None,
                    *args: Any, **kwargs: Any) -> None:
            recorder.display(data, metadata)
            if show:
                original_publish(data, metadata, *args, **kwargs)

        def write_format_data(format_dict: dict[str, Any], md_dict: Any = None) -> None:
            recorder.execute_result(format_dict, md_dict)
            if show:
                original_write(format_dict, md_dict)

        def clear_output(wait: bool = False) -> None:
            # Hidden outputs are cleared from the record only: the cell's own output (the
            # run's progress) stays.
            recorder.clear()

        def showtraceback(exc_tuple: Any = None, filename: Any = None, tb_offset: Any = None,
                          exception_only: bool = False, running_compiled_code: bool = False) -> None:
            etype, value, tb = exc_tuple or sys.exc_info()
            if etype is None or value is None:
                return
            if issubclass(etype, (KeyboardInterrupt, AttemptTimeout)):
                interrupted.append(value)
                return
            try:
                skip = 1 if running_compiled_code else 0
                text = clean(formatter.stb2text(formatter.structured_traceback(etype, value, tb, tb_offset=skip)))
            except Exception:  # noqa: BLE001 -- formatting must never hide the user's error
                text = clean(f"{etype.__name__}: {value}")
            lineno = getattr(value, "lineno", None) if isinstance(value, SyntaxError) else _lineno(tb)
            errors.append(ErrorInfo(etype.__name__, clean(str(value)), text, lineno))
            # For the fix request's hints (IPython would keep it in sys.last_value, which stays the
            # user's own); taken, and so let go, when the failure is inspected.
            setattr(shell, LAST_FAILURE, value)

        def showsyntaxerror(filename: Any = None, running_compiled_code: bool = False) -> None:
            showtraceback()

        def ask_exit() -> None:
            # exit()/quit() would end the user's kernel once the cell is done.
            exits.append(True)

        limit = SHOWN_LIMIT if show else -1  # -1: nothing goes through
        swaps: list[tuple[Any, str, Any]] = [] if show else [(publisher, "clear_output", clear_output)]
        with ExitStack() as stack:
            for obj, name, value in (
                *swaps,
                (sys, "stdout", Tee(sys.stdout, lambda t: recorder.stream("stdout", t), limit)),
                (sys, "stderr", Tee(sys.stderr, lambda t: recorder.stream("stderr", t), limit)),
                (publisher, "publish", publish),
                (hook, "write_format_data", write_format_data),
                (shell, "showtraceback", showtraceback),
                (shell, "showsyntaxerror", showsyntaxerror),
                (shell, "ask_exit", ask_exit),
            ):
                stack.enter_context(_swapped(obj, name, value))
            yield


@contextmanager
def _swapped(obj: Any, name: str, value: Any) -> Iterator[None]:
    """Set ``obj.name`` for the duration, then put back exactly what was there."""
    own = name in vars(obj)
    saved = vars(obj).get(name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if own:
            setattr(obj, name, saved)
        else:
            delattr(obj, name)
