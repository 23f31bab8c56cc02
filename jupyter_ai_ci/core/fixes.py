"""What the model is told after an attempt: its outputs, the fix request, a restart's note.

Kept apart from the loop, which decides when to say them; the texts themselves are in
``prompts``.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from jupyter_ai_ci.core import prompts
from jupyter_ai_ci.core.attempt import NOT_PARSED
from jupyter_ai_ci.core.chartcheck import CHART_ENAME
from jupyter_ai_ci.core.noop import NOOP_ENAME, without_warning
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.core.tracebacks import fold
from jupyter_ai_ci.events import Attempt, ExecutionResult, FailureNotes
from jupyter_ai_ci.safety.astutil import parse_cell
from jupyter_ai_ci.text import head_tail


def describe_result(result: ExecutionResult, limit: int) -> str:
    """The text the model is told about one block's outputs."""
    parts = []
    if result.output:
        parts.append(result.output.rstrip("\n"))
    parts.extend(f"[displayed {d}]" for d in result.displays)
    parts.extend(result.figures)  # what the figures show, for a model that cannot see them
    if result.result is not None:
        parts.append(f"Out: {result.result}")
    return head_tail("\n".join(parts), limit) if parts else prompts.NO_OUTPUT


def _notes(notes: FailureNotes | None) -> str:
    if not notes:
        return ""
    text = ""
    if notes.hints:
        text += prompts.FIX_HINTS.format(hints="\n".join(f"- {h}" for h in notes.hints))
    if notes.variables:
        text += prompts.FIX_VARIABLES.format(variables="\n".join(notes.variables))
    return text


def drew(results: Sequence[ExecutionResult], limit: int) -> str:
    """What the figures a failed attempt drew show, for its fix request ("" when it drew none)."""
    figures = [f for r in results for f in r.figures]
    return prompts.FIX_FIGURES.format(figures=head_tail("\n\n".join(figures), limit)) if figures else ""


def fix_request(code: Sequence[str], results: Sequence[ExecutionResult],
                settings: LoopSettings, notes: FailureNotes | None = None, same_error: bool = False) -> str:
    failed = results[-1]
    error = failed.error
    assert error is not None
    figures = drew(results, settings.max_output_chars)
    if error.ename == CHART_ENAME:
        return prompts.CHART_FIX.format(mismatch=error.evalue, figures=figures, notes=_notes(notes),
                                        same=prompts.SAME_ERROR if same_error else "")
    if error.ename == NOOP_ENAME:
        # Nothing raised: pandas' warning, shown once (not in the output too), says what to change.
        output = head_tail(without_warning(failed.output, code), settings.max_output_chars)
        return prompts.NOOP_FIX.format(
            what=error.evalue, warning=head_tail(error.traceback, settings.max_traceback_chars),
            output=prompts.FIX_OUTPUT.format(output=output) if output.strip() else "",
            notes=figures + _notes(notes), same=prompts.SAME_ERROR if same_error else "")
    if error.ename == "SyntaxError" and NOT_PARSED in failed.notes:
        headline = f"The code raised SyntaxError. {prompts.SYNTAX_NOTE}"
        if len(code) > 1:
            headline += f" Block {len(results)} of {len(code)} does not parse; no block was run."
    else:
        headline = f"The code you wrote raised {error.one_line()}."
        if len(code) > 1:
            headline += (f" Block {len(results)} of {len(code)} failed; the blocks before it ran, "
                         "and their changes were undone.")
    output = head_tail(failed.output, settings.max_output_chars)
    return prompts.FIX.format(
        failed=headline,
        output=prompts.FIX_OUTPUT.format(output=output) if output.strip() else "",
        traceback=head_tail(fold(error.traceback), settings.max_traceback_chars),
        notes=figures + _notes(notes),
        same=prompts.SAME_ERROR if same_error else "",
    )


def restart_note(attempt: Attempt, limit: int = LoopSettings.max_output_chars) -> str:
    """What a request asked anew from the start is told of the attempt that failed (a fix with
    ``fix_from_start``, or after a fix that was the failed code again): the error, its line and
    the hints, not the code (see ``prompts.RESTART``)."""
    error = attempt.error
    assert error is not None
    if error.ename == CHART_ENAME:
        return prompts.CHART_RESTART.format(mismatch=error.evalue) + drew(attempt.results, limit)
    if error.ename == NOOP_ENAME:
        return prompts.NOOP_RESTART.format(what=error.evalue)
    block = attempt.code[len(attempt.results) - 1].splitlines()
    line = block[error.lineno - 1].strip() if error.lineno and 0 < error.lineno <= len(block) else ""
    hints = "".join(f"\n- {h}" for h in attempt.notes.hints) if attempt.notes else ""
    return prompts.RESTART.format(error=f"{error.ename}: {error.evalue}", line=line[:200] or "?",
                                  hints=f"\nHints:{hints}" if hints else "")


def code_key(code: Sequence[str]) -> tuple[str, ...]:
    """What makes two replies' code the same: the syntax tree where it parses (comments,
    spacing and blank lines do not count), else the lines without their spacing."""
    key = []
    for block in code:
        try:
            key.append(ast.dump(parse_cell(block)))  # the tree the attempt's scan parsed (kept)
        except (SyntaxError, ValueError):
            key.append("\n".join(line.strip() for line in block.splitlines() if line.strip()))
    return tuple(key)
