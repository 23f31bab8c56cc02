"""Folding library frames out of a traceback, keeping the user's and the exception."""

from __future__ import annotations

import traceback

import pandas as pd

from jupyter_ai_ci.core.loop import LoopSettings, fix_request
from jupyter_ai_ci.core.tracebacks import fold
from jupyter_ai_ci.events import ErrorInfo, ExecutionResult, FailureNotes


def raised_through_pandas() -> str:
    frame = pd.DataFrame({"dept": ["a"]})
    try:
        exec(compile("frame.groupby('department').size()", "<ipython-input-3-abc>", "exec"), {"frame": frame})
    except KeyError as exc:
        return "".join(traceback.format_exception(exc))
    raise AssertionError("no KeyError")


def test_python_tracebacks_keep_user_frames_and_fold_pandas() -> None:
    text = raised_through_pandas()
    assert text.count("site-packages") >= 2  # pandas' own frames, several of them
    folded = fold(text)
    assert "site-packages" not in folded
    assert "<ipython-input-3-abc>" in folded and "KeyError: 'department'" in folded
    assert "frames inside pandas" in folded or "frame inside pandas" in folded
    assert len(folded) < len(text) / 2


def test_text_that_is_no_traceback_comes_back_unchanged() -> None:
    for text in ("", "TimeoutError: the code ran longer than 5 s", "SyntaxError: invalid syntax (line 2)"):
        assert fold(text) == text


def test_the_fix_request_carries_folded_traceback_hints_and_variables() -> None:
    text = raised_through_pandas()
    error = ErrorInfo("KeyError", "'department'", text, 1)
    notes = FailureNotes(("e: pandas.DataFrame 2 rows × 2 columns [emp_id:int64, dept:str]",),
                         ("'department' is not a column of e. Did you mean 'dept'?",))
    fix = fix_request(["e = load()\ne.groupby('department')"], [ExecutionResult(error=error)], LoopSettings(),
                      notes)
    assert "Traceback (library frames folded)" in fix and "site-packages" not in fix
    assert "Hints:\n- 'department' is not a column of e. Did you mean 'dept'?" in fix
    assert "e: pandas.DataFrame 2 rows × 2 columns [emp_id:int64, dept:str]" in fix
    assert fix.index("Hints:") < fix.index("Variables the failed code used") < fix.index("Fix the cause of the error")
    bare = fix_request(["x"], [ExecutionResult(error=error)], LoopSettings())
    assert "Hints" not in bare and "Variables the failed code" not in bare
