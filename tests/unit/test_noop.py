"""core/noop.py: the ChainedAssignmentError warning pandas 3 prints, read as a failed attempt."""

from __future__ import annotations

import pytest

from jupyter_ai_ci.core.fixes import fix_request, restart_note
from jupyter_ai_ci.core.mends import Mends
from jupyter_ai_ci.core.noop import NOOP_ENAME, assignment, noop_error, rewrites, warned, without_warning
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.events import Attempt, ErrorInfo, ExecutionResult, Message, ModelReply

# As a real kernel printed it (pandas 3.1, Python 3.11), then the code's own print.
INPLACE = (
    "/tmp/ipykernel_9843/2084755072.py:2: ChainedAssignmentError: A value is being set on a copy of a DataFrame "
    "or Series through chained assignment using an inplace method.\n"
    "Such inplace method never works to update the original DataFrame or Series, because the intermediate object "
    "on which we are setting values always behaves as a copy (due to Copy-on-Write).\n\n"
    "For example, when doing 'df[col].method(value, inplace=True)', try using 'df.method({col: value}, "
    "inplace=True)' instead, to perform the operation inplace on the original object, or try to avoid an inplace "
    "operation using 'df[col] = df[col].method(value)'.\n\n"
    "See the documentation for a more detailed explanation: "
    "https://pandas.pydata.org/docs/dev/user_guide/migration.html#copy-on-write-cow\n"
    "  df['a'].fillna(0, inplace=True)\n")
SETITEM = (
    "/tmp/ipykernel_9843/1743909384.py:1: ChainedAssignmentError: A value is being set on a copy of a DataFrame "
    "or Series through chained assignment.\n"
    "Such chained assignment never works to update the original DataFrame or Series, because the intermediate "
    "object on which we are setting values always behaves as a copy (due to Copy-on-Write).\n\n"
    "Try using '.loc[row_indexer, col_indexer] = value' instead, to perform the assignment in a single step.\n\n"
    "See the documentation for a more detailed explanation: "
    "https://pandas.pydata.org/docs/dev/user_guide/migration.html#chained-assignment\n"
    "  df['a'][1] = 5\n")


CODE = ("import pandas as pd\ndf['a'].fillna(0, inplace=True)", "df['a'][1] = 5\nprint(df['a'].sum())")


def test_the_warning_is_read_to_its_source_line_and_nothing_after() -> None:
    [(printed, line)] = warned("before\n" + INPLACE + "1\nafter\n")
    assert line == "df['a'].fillna(0, inplace=True)"
    assert printed.startswith("/tmp/ipykernel_9843/2084755072.py:2: ChainedAssignmentError:")
    assert printed.endswith("  df['a'].fillna(0, inplace=True)") and "after" not in printed
    assert without_warning("before\n" + INPLACE + "1\n", CODE) == "before\n1"
    assert [line for _, line in warned(INPLACE + SETITEM)] == ["df['a'].fillna(0, inplace=True)", "df['a'][1] = 5"]


def test_an_attempt_whose_output_holds_the_warning_is_a_failure_naming_the_line() -> None:
    error = noop_error([ExecutionResult(output="3 rows\n"), ExecutionResult(output=SETITEM)], CODE)
    assert error is not None and error.ename == NOOP_ENAME
    assert error.evalue == ("A value is being set on a copy of a DataFrame or Series through chained assignment "
                            "at `df['a'][1] = 5`: the change never reached the DataFrame")
    assert "Try using '.loc[row_indexer, col_indexer] = value'" in error.traceback
    assert "See the documentation" not in error.traceback  # a link the model cannot follow
    assert error.traceback.startswith("line 1: ChainedAssignmentError: A value")  # not the cell's file name


def test_other_warnings_and_plain_mentions_are_not_failures() -> None:
    future = ("/tmp/x.py:2: FutureWarning: A value is trying to be set on a copy of a DataFrame or Series "
              "through chained assignment using an inplace method.\n  df['a'].fillna(0, inplace=True)\n")
    assert noop_error([ExecutionResult(output=future)], CODE) is None  # pandas 2: the change does happen there
    said = "print('ChainedAssignmentError: is a pandas warning')\n"
    assert noop_error([ExecutionResult(output=said)], CODE) is None
    assert noop_error([ExecutionResult(output="ChainedAssignmentError: said by the code itself\n")], CODE) is None
    assert noop_error([ExecutionResult()], CODE) is None


def test_only_a_warning_about_the_attempts_own_line_fails_it() -> None:
    # Raised inside a library (its own chained assignment): nothing the model's code could change.
    library = INPLACE.replace("/tmp/ipykernel_9843/2084755072.py:2", "/venv/site-packages/lib/plot.py:88").replace(
        "  df['a'].fillna(0, inplace=True)", "  data[col].fillna(0, inplace=True)")
    assert noop_error([ExecutionResult(output=library)], CODE) is None
    # Naming no line (no source to show): not attributable either.
    short = "/tmp/x.py:4: ChainedAssignmentError: A value is being set on a copy\nanswer 12\n"
    [(printed, line)] = warned(short)
    assert printed == "/tmp/x.py:4: ChainedAssignmentError: A value is being set on a copy" and line == ""
    assert noop_error([ExecutionResult(output=short)], CODE) is None
    # A library's first, then the code's own: the code's is the error.
    error = noop_error([ExecutionResult(output=library + SETITEM)], CODE)
    assert error is not None and "at `df['a'][1] = 5`" in error.evalue


def test_the_fix_request_shows_pandas_advice_once_and_says_nothing_raised() -> None:
    results = [ExecutionResult(output="total 7\n" + INPLACE)]
    error = noop_error(results, CODE)
    assert error is not None
    failed = [ExecutionResult(output=results[0].output, error=error)]
    fix = fix_request(["df['a'].fillna(0, inplace=True)\nprint('total', 7)"], failed, LoopSettings())
    assert fix.startswith("The code ran, but pandas warned that a step changed nothing: A value is being set")
    assert fix.count("try using 'df.method({col: value}, inplace=True)'") == 1
    assert "Output printed before the error:\n```\ntotal 7\n```" in fix
    assert "raised" not in fix.split("\n", 1)[0] and "do not silence the warning" in fix
    note = restart_note(Attempt(1, 1, ("df['a'].fillna(0, inplace=True)",), tuple(failed)))
    assert "pandas warned that a step changed nothing" in note and "`df['a'].fillna(0, inplace=True)`" in note


def test_a_chained_assignment_error_really_raised_is_fixed_as_any_exception() -> None:
    # Warnings made errors (warnings.simplefilter('error')): pandas raises it, with a traceback.
    raised = ErrorInfo("ChainedAssignmentError", "A value is being set on a copy", "Traceback ...", lineno=2)
    fix = fix_request(["df['a'].fillna(0, inplace=True)"], [ExecutionResult(error=raised)], LoopSettings())
    assert fix.startswith("The code you wrote raised ChainedAssignmentError: A value is being set on a copy")
    assert NOOP_ENAME != raised.ename


@pytest.mark.parametrize(("line", "instead"), [
    ("df['a'].fillna(0, inplace=True)", "df['a'] = df['a'].fillna(0)"),
    ("sensors['temperature'].ffill(inplace=True)", "sensors['temperature'] = sensors['temperature'].ffill()"),
    ("df.a.fillna(df.a.mean(), inplace=True)", "df.a = df.a.fillna(df.a.mean())"),
    ("df.loc[df.g == 'b', 'a'].fillna(value=0, inplace=True)",
     "df.loc[df.g == 'b', 'a'] = df.loc[df.g == 'b', 'a'].fillna(value=0)"),
    ("df['a'].replace('?', np.nan, inplace=True)  # clean", "df['a'] = df['a'].replace('?', np.nan)  # clean"),
    ("    df[c].clip(lower=0, inplace=True);", "df[c] = df[c].clip(lower=0)"),
    ("df.loc[df['a'].isna(), 'b'].fillna(0, inplace=True)",
     "df.loc[df['a'].isna(), 'b'] = df.loc[df['a'].isna(), 'b'].fillna(0)"),
])
def test_an_inplace_method_on_one_selection_is_the_assignment_in_the_models_spelling(line: str, instead: str) -> None:
    assert assignment(line) == instead


@pytest.mark.parametrize("line", [
    "df[mask]['a'].fillna(0, inplace=True)",  # a selection of a selection: chained again
    "df['a'].dropna(inplace=True)",  # assigned back, pandas aligns on the index: the rows come back
    "df['a'].sort_values(inplace=True)",
    "df['a'].fillna(0, inplace=False)",
    "df['a'].fillna(0, **options, inplace=True)",  # the options could say inplace again
    "df['a'].fillna(0)",
    "x = df['a'].fillna(0, inplace=True)",
    "df['a'][1] = 5",  # chained assignment, not an inplace method: no single right change
    "df['a'].fillna(0, inplace=True); df['b'].fillna(0, inplace=True)",
    "df['a'].fillna(0,",  # a statement over several lines: the warning shows its first
    "get()['a'].fillna(0, inplace=True)",
    # The assignment evaluates the selection again: it must be the same rows the second time.
    "df[cols.pop()].fillna(0, inplace=True)",
    "df.loc[df.sample(3).index, 'a'].fillna(0, inplace=True)",
    "df[(c := 'a')].fillna(0, inplace=True)",
    "df.T.fillna(0, inplace=True)",  # pandas warns, but df.T is no column to assign
    "df.values.clip(0, inplace=True)",
])
def test_any_other_line_is_left_to_the_model(line: str) -> None:
    assert assignment(line) == ""


def run_find(mends: Mends, attempt: Attempt) -> str:
    """``Mends.find`` as the loop drives it (a NameError would ask the kernel where a module is from)."""
    found = mends.find(attempt, 1)
    try:
        next(found)
    except StopIteration as done:
        return str(done.value)
    raise AssertionError("asked the kernel")


def test_a_mend_replaces_the_lines_the_warnings_name_wherever_the_code_holds_them() -> None:
    code = ("import pandas as pd", "for c in ['a']:\n    df['a'].fillna(0, inplace=True)\nprint(df)",
            "df['b'].ffill(inplace=True)")
    second = INPLACE.replace(":2:", ":1:").replace("df['a'].fillna(0, inplace=True)", "df['b'].ffill(inplace=True)")
    results = (ExecutionResult(output="x\n"), ExecutionResult(output=INPLACE), ExecutionResult(output=second))
    # Both in one pass: code with two such lines runs once more, not twice.
    assert rewrites(results, code) == [("df['a'].fillna(0, inplace=True)", "df['a'] = df['a'].fillna(0)"),
                                       ("df['b'].ffill(inplace=True)", "df['b'] = df['b'].ffill()")]
    assert rewrites([ExecutionResult(output=SETITEM)], CODE) == []  # warned, but no mend for it
    error = noop_error(results, code)
    assert error is not None
    mends = Mends(["import numpy as np"])
    failed = Attempt(1, 1, code, (*results[:2], ExecutionResult(output=second, error=error)))
    assert run_find(mends, failed) == ("wrote `df['a'] = df['a'].fillna(0)` and `df['b'] = df['b'].ffill()` "
                                       "for the lines that changed a copy")
    assert run_find(mends, failed) == ""  # made already: the model's to fix if it fails again
    assert mends.code(code) == ["import numpy as np\nimport pandas as pd",
                                "for c in ['a']:\n    df['a'] = df['a'].fillna(0)\nprint(df)",
                                "df['b'] = df['b'].ffill()"]
    other = mends.copy()
    other.lines["x"] = "y"
    assert "x" not in mends.lines  # a candidate's mends are its own


def test_no_mend_when_the_attempt_raised_something_else() -> None:
    # The warning is in the output, but the attempt failed on another error: the model is asked (it
    # is shown the warning); running it again first would cost a whole run for nothing.
    raised = ExecutionResult(output=INPLACE, error=ErrorInfo("KeyError", "'zz'", "", lineno=3))
    mends = Mends()
    assert run_find(mends, Attempt(1, 1, CODE, (raised,))) == "" and mends.lines == {}


def test_the_reply_is_mended_in_its_code_alone_and_in_the_conversation_that_holds_it() -> None:
    mends = Mends(lines={"df['a'].fillna(0, inplace=True)": "df['a'] = df['a'].fillna(0)"})
    reply = ModelReply("I ran\ndf['a'].fillna(0, inplace=True)\n```python\ndf['a'].fillna(0, inplace=True)\n```")
    messages = [Message("user", "fill it"), Message("assistant", reply.text)]
    said = mends.said(reply, messages)
    assert said.text == "I ran\ndf['a'].fillna(0, inplace=True)\n```python\ndf['a'] = df['a'].fillna(0)\n```"
    assert messages[-1] == Message("assistant", said.text)
    other = [Message("assistant", "something else")]
    assert mends.said(reply, other).text == said.text and other == [Message("assistant", "something else")]
