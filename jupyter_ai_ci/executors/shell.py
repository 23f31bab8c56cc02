"""Run code in the live IPython shell and report what happened as data.

Used by the magic.  The code goes through ``shell.run_cell`` so IPython's own
syntax (``%pip``, ``!ls``, top-level ``await``) and display machinery
(inline figures, rich reprs) work as in a cell the user typed.  While it runs
we tee stdout/stderr, the display publisher and the display hook, and take
over ``showtraceback`` so a failed attempt's traceback becomes data (shown as
one short line by the magic) instead of a red wall under the ``%%ask`` cell.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from types import TracebackType
from typing import Any

from ..events import ErrorInfo, ExecutionResult
from ..text import strip_ansi
from .capture import OutputRecorder, Tee


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


class ShellExecutor:
    """``Executor`` over an ``InteractiveShell`` (ipykernel's or the terminal's)."""

    def __init__(self, shell: Any, max_output_chars: int = 4000) -> None:
        self.shell = shell
        self.max_output_chars = max_output_chars

    def execute(self, code: str) -> ExecutionResult:
        recorder = OutputRecorder(self.max_output_chars)
        errors: list[ErrorInfo] = []
        interrupted: list[BaseException] = []
        started = time.perf_counter()
        with self._capturing(recorder, errors, interrupted):
            outcome = self.shell.run_cell(code, store_history=False, silent=False)
        seconds = time.perf_counter() - started
        if interrupted:
            # The user pressed interrupt: stop the whole run, not retry.
            raise KeyboardInterrupt
        error = errors[-1] if errors else None
        if error is None and not outcome.success:
            exc = outcome.error_before_exec or outcome.error_in_exec
            error = ErrorInfo(type(exc).__name__, str(exc), f"{type(exc).__name__}: {exc}")
        return ExecutionResult(
            output=recorder.text.getvalue(),
            result=recorder.result,
            displays=tuple(recorder.displays),
            error=error,
            seconds=seconds,
            notes=recorder.notes(),
            outputs=tuple(recorder.outputs),
        )

    @contextmanager
    def _capturing(
        self, recorder: OutputRecorder, errors: list[ErrorInfo], interrupted: list[BaseException]
    ) -> Iterator[None]:
        shell = self.shell
        publisher = shell.display_pub
        hook = shell.displayhook
        original_publish = publisher.publish
        original_write = hook.write_format_data


        def publish(data: dict[str, Any], metadata: dict[str, Any] | None = None,
                    *args: Any, **kwargs: Any) -> None:
            recorder.display(data, metadata)
            original_publish(data, metadata, *args, **kwargs)

        def write_format_data(format_dict: dict[str, Any], md_dict: Any = None) -> None:
            recorder.execute_result(format_dict, md_dict)
            original_write(format_dict, md_dict)

        def showtraceback(exc_tuple: Any = None, filename: Any = None, tb_offset: Any = None,
                          exception_only: bool = False, running_compiled_code: bool = False) -> None:
            etype, value, tb = exc_tuple or sys.exc_info()
            if etype is None or value is None:
                return
            if issubclass(etype, KeyboardInterrupt):
                interrupted.append(value)
                return
            try:
                skip = 1 if running_compiled_code else 0
                lines = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=skip)
                text = strip_ansi(shell.InteractiveTB.stb2text(lines))
            except Exception:  # formatting must never hide the user's error
                text = f"{etype.__name__}: {value}"
            lineno = getattr(value, "lineno", None) if isinstance(value, SyntaxError) else _lineno(tb)
            errors.append(ErrorInfo(etype.__name__, str(value), text, lineno))

        def showsyntaxerror(filename: Any = None, running_compiled_code: bool = False) -> None:
            showtraceback()

        with ExitStack() as stack:
            for obj, name, value in (
                (sys, "stdout", Tee(sys.stdout, lambda t: recorder.stream("stdout", t))),
                (sys, "stderr", Tee(sys.stderr, lambda t: recorder.stream("stderr", t))),
                (publisher, "publish", publish),
                (hook, "write_format_data", write_format_data),
                (shell, "showtraceback", showtraceback),
                (shell, "showsyntaxerror", showsyntaxerror),
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
