"""What a failed attempt had in hand, and "did you mean", from real exceptions in a real namespace."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from jupyter_ai_ci import inkernel

from jupyter_ai_ci.context.failure import expression, from_reply, inspect_failure
from jupyter_ai_ci.events import FailureNotes


def failing(code: str, ns: dict[str, Any]) -> tuple[str, str]:
    """Run ``code`` in ``ns`` as a notebook would; the exception's name and message."""
    try:
        exec(compile(code, "<cell>", "exec"), ns)
    except Exception as exc:  # noqa: BLE001
        sys.last_value = exc  # as IPython keeps it after a cell raises
        return type(exc).__name__, str(exc)
    raise AssertionError("the code did not fail")


@pytest.fixture
def staff_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "employees.csv"
    path.write_text("emp_id,dept,salary,hire_date\n1,Sales,50000,2019-01-02\n2,Support,42000,2020-03-04\n")
    return path


def test_a_keyerror_on_a_frame_the_failed_code_loaded(staff_csv: Path) -> None:
    code = "import pandas as pd\ne = pd.read_csv('employees.csv')\ncounts = e.groupby('department').size()"
    ns: dict[str, Any] = {}
    ename, evalue = failing(code, ns)
    assert ename == "KeyError" and evalue == "'department'"
    notes = inspect_failure(ns, [code], ename, evalue)
    [hint] = notes.hints
    assert hint.startswith("'department' is not a column of e. Did you mean 'dept'?")
    assert "'emp_id', 'dept', 'salary', 'hire_date'" in hint
    [variable] = notes.variables  # pd is a module, counts was never bound
    assert variable.startswith("e: pandas.DataFrame 2 rows × 4 columns [emp_id:int64, dept:")
    assert "(set by the failed code)" in variable and "Sales" in variable


def test_list_selections_case_and_part_of_a_name() -> None:
    ns: dict[str, Any] = {"s": pd.DataFrame({"order_date": ["2024-01-01"], "Product": ["A"], "units": [3]})}
    code = "x = s[['product', 'units']]"
    ename, evalue = failing(code, ns)
    assert "not in index" in evalue
    [hint] = inspect_failure(ns, [code], ename, evalue).hints
    assert "'product' is not a column of s. Did you mean 'Product'?" in hint
    code = "x = s['date']"
    [hint] = inspect_failure(ns, [code], *failing(code, ns)).hints
    assert "Did you mean 'order_date'?" in hint


def test_a_dict_key_and_an_attribute_that_is_a_column() -> None:
    ns: dict[str, Any] = {"prices": {"apple": 1.0, "banana": 0.5},
                          "df": pd.DataFrame({"revenue": [1.0], "region": ["N"]})}
    code = "p = prices['aple']"
    [hint] = inspect_failure(ns, [code], *failing(code, ns)).hints
    assert hint.startswith("'aple' is not a key of prices. Did you mean 'apple'?")
    code = "total = df.Revenue.sum()"
    ename, evalue = failing(code, ns)
    [hint] = inspect_failure(ns, [code], ename, evalue).hints
    assert "did you mean df['revenue']?" in hint
    code = "df.groupbyy('region')"
    [hint] = inspect_failure(ns, [code], *failing(code, ns)).hints
    assert "Did you mean .groupby?" in hint


def test_names_imports_modules_and_files(staff_csv: Path) -> None:
    ns: dict[str, Any] = {"sales_total": 3}
    code = "print(sales_totl)"
    assert inspect_failure(ns, [code], *failing(code, ns)).hints == (
        "'sales_totl' is not defined. Did you mean 'sales_total'?",)
    code = "df = pd.DataFrame()"
    [hint] = inspect_failure(ns, [code], *failing(code, ns)).hints
    assert "import pandas as pd" in hint
    code = "import pandas as pd\npd.read_cvs('x.csv')"
    [hint] = inspect_failure(ns, [code], *failing(code, ns)).hints
    assert "Did you mean pandas.read_csv?" in hint
    code = "import pandas as pd\ne = pd.read_csv('employee.csv')"
    ename, evalue = failing(code, ns)
    [hint] = inspect_failure(ns, [code], ename, evalue, cwd=os.getcwd()).hints
    assert "There is no 'employee.csv'" in hint and "Did you mean 'employees.csv'?" in hint


def test_hostile_objects_and_secrets_never_break_or_leak() -> None:
    class Hostile:
        columns = property(lambda self: 1 / 0)

        def __repr__(self) -> str:
            raise RuntimeError("no")

    ns: dict[str, Any] = {"h": Hostile(), "api_key": "hunter2-the-key", "d": {"a": 1}}
    code = "x = h\ny = api_key\nd['b']"
    notes = inspect_failure(ns, [code], *failing(code, ns))
    assert "hunter2" not in json.dumps([*notes.variables, *notes.hints])
    assert any(v.startswith("h: ") for v in notes.variables)
    assert inspect_failure(ns, ["this is not python"], "SyntaxError", "x") == FailureNotes()


def test_across_the_kernel_boundary_the_notes_travel_as_json() -> None:
    text = expression(["a = 1"], "KeyError", "'x'")
    # Through inkernel.call, never a bare __import__ the user's namespace can rebind (issue #30, item 9).
    assert text == inkernel.call("jupyter_ai_ci.context.failure", json.dumps(
        {"code": ["a = 1"], "ename": "KeyError", "evalue": "'x'"})) and not text.startswith("__import__")
    reply = {"status": "ok", "data": {"text/plain": repr(json.dumps({"variables": ["a: int = 1"],
                                                                       "hints": ["h"]}))}}
    assert from_reply(reply) == FailureNotes(("a: int = 1",), ("h",))
    assert from_reply({"status": "error", "ename": "ModuleNotFoundError"}) == FailureNotes()
    assert from_reply({"status": "ok", "data": {"text/plain": "'not json'"}}) == FailureNotes()


@pytest.mark.parametrize("use", ["e['hire_date'].dt.year", "e['hire_date'].max() - e['hire_date'].min()"])
def test_dates_left_as_text_are_named_with_the_conversion(staff_csv: Path, use: str) -> None:
    # Real pandas errors: .dt on text (AttributeError), and text minus text (TypeError).
    code = f"import pandas as pd\ne = pd.read_csv('employees.csv')\nspan = {use}"
    ns: dict[str, Any] = {}
    ename, evalue = failing(code, ns)
    [hint] = inspect_failure(ns, [code], ename, evalue).hints
    assert hint == ("e's column(s) 'hire_date' hold dates as text, not datetimes: convert first, "
                    "e['hire_date'] = pd.to_datetime(e['hire_date']) "
                    "(or read the file with parse_dates=['hire_date']).")
    # The converted frame is fine, and another error on it gets no date hint.
    fixed = code.replace("pd.read_csv('employees.csv')", "pd.read_csv('employees.csv', parse_dates=['hire_date'])")
    exec(compile(fixed, "<cell>", "exec"), {})
    other = "import pandas as pd\ne = pd.read_csv('employees.csv')\nx = e['salary'].no_such_thing"
    ename, evalue = failing(other, ns)
    assert ename == "AttributeError" and e_has_text_dates(ns)
    assert not any("dates as text" in h for h in inspect_failure(ns, [other], ename, evalue).hints)


def e_has_text_dates(ns: dict[str, Any]) -> bool:
    return bool(ns["e"]["hire_date"].map(type).eq(str).all())


def test_an_attribute_of_no_variable_and_a_module_not_imported(staff_csv: Path) -> None:
    ns: dict[str, Any] = {"pd": pd}
    code = "s = pd.Series(pd.to_datetime(['2024-01-05']))\ns.dt.weekday_name"
    # s itself is not in the namespace: the exception knows the object.
    [hint] = inspect_failure({}, [code], *failing(code, ns), error=sys.last_value).hints
    assert hint == "DatetimeProperties has no attribute 'weekday_name'. Did you mean .day_name?"
    for name, statement in (("scipy", "import scipy.stats"), ("hashlib", "import hashlib")):
        [hint] = inspect_failure(ns, [f"{name}.x"], *failing(f"{name}.x", ns)).hints
        assert f"(`{statement}`)" in hint
    # A file in the working directory named like the missing variable is not a module to import.
    (staff_csv.parent / "totals.py").write_text("raise SystemExit('ran')\n")
    [hint] = inspect_failure(ns, ["totals + 1"], *failing("totals + 1", ns)).hints
    assert "import" not in hint  # a did-you-mean among the names, not `import totals`


@pytest.mark.parametrize(("code", "says"), [
    ("t = e.groupby('dept')['salary', 'emp_id'].sum()", "selected with a list, not a tuple"),
    ("e = e.append(e)", "use pd.concat([df, other])"),
    ("days = pd.to_datetime(e['hire_date']).dt.days", "subtract first, e.g. (end - start).dt.days"),
    ("means = e.groupby('emp_id').mean()", "select the numeric column(s) first"),
    ("for k, v in e['dept'].iteritems(): pass", "use .items()"),
])
def test_an_api_pandas_changed_is_said_in_its_current_form(staff_csv: Path, code: str, says: str) -> None:
    # Code written from older pandas: the exception says what failed, the hint the way that works
    # now (before any "did you mean", which for .dt.days would point at .day).  Real exceptions
    # from the installed pandas, on both the newest and the oldest versions we test.
    ns: dict[str, Any] = {}
    ename, evalue = failing(f"import pandas as pd\ne = pd.read_csv('employees.csv')\n{code}", ns)
    [hint] = inspect_failure(ns, [code], ename, evalue, error=sys.last_value).hints
    assert says in hint
