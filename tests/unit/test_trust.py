"""Answers you can trust, in memory: a number about data comes from code that ran, a missing
conventional import costs no model call, and an answer's numbers are checked against the output."""

from __future__ import annotations

import pytest

from jupyter_ai_ci.core.datarequest import about_data
from jupyter_ai_ci.core.grounding import unsupported_numbers
from jupyter_ai_ci.core.imports import missing_import
from jupyter_ai_ci.core.loop import LoopSettings, agent_loop
from jupyter_ai_ci.events import ErrorInfo, ExecutionResult, Notice
from jupyter_ai_ci.model.client import ScriptedClient
from jupyter_ai_ci.run.drive import drive
from jupyter_ai_ci.run.report import SilentReporter
from jupyter_ai_ci.run.summary import summarize


def block(code: str) -> str:
    return f"```python\n{code}\n```"


class Kernel:
    """Runs nothing: a block that uses ``pd`` without importing it raises NameError, as a fresh
    kernel would; every other block prints what its rule says."""

    def __init__(self, prints: str = "") -> None:
        self.ran: list[str] = []
        self.prints = prints

    def execute(self, code: str) -> ExecutionResult:
        self.ran.append(code)
        for alias, line in (("pd.", "import pandas as pd"), ("json.", "import json"), ("dt.", "import dt")):
            if alias in code and line not in code:
                name = alias[:-1]
                return ExecutionResult(error=ErrorInfo("NameError", f"name '{name}' is not defined",
                                                       f"NameError: name '{name}' is not defined", 1))
        return ExecutionResult(output=self.prints)


class Notices(SilentReporter):
    def __init__(self) -> None:
        self.seen: list[Notice] = []

    def notice(self, notice: Notice) -> None:
        self.seen.append(notice)


def run(replies: list[str], request: str = "do it", prints: str = "", **kw: object):
    model, kernel, reporter = ScriptedClient(replies), Kernel(prints), Notices()
    outcome = drive(agent_loop(request, "ctx", LoopSettings(**kw)), model, kernel, reporter)  # type: ignore[arg-type]
    return outcome, model, kernel, reporter.seen


def test_a_missing_pd_import_is_added_and_run_again_with_no_model_call() -> None:
    outcome, model, kernel, notices = run([block("df = pd.DataFrame({'a': [1]})\ndf")])
    assert outcome.status == "success"
    assert len(model.requests) == 1  # the first request only: no fix was asked for
    assert kernel.ran == ["df = pd.DataFrame({'a': [1]})\ndf", "import pandas as pd\ndf = pd.DataFrame({'a': [1]})\ndf"]
    assert outcome.cells[0].code.startswith("import pandas as pd\n")  # the cell holds its import
    said = [n.text for n in notices if n.kind == "install"]
    assert said == ["attempt 1 failed: NameError: name 'pd' is not defined (line 1) — added `import pandas as pd` "
                    "and running it again (no model call)"]


def test_a_standard_module_by_its_own_name_is_imported_too() -> None:
    outcome, model, kernel, _ = run([block("print(json.dumps(1))")])
    assert outcome.status == "success" and len(model.requests) == 1
    assert kernel.ran[-1] == "import json\nprint(json.dumps(1))"


@pytest.mark.parametrize("evalue, code, expected", [
    ("name 'np' is not defined", "np.mean(x)", "import numpy as np"),
    ("name 'plt' is not defined", "plt.plot(x)", "import matplotlib.pyplot as plt"),
    ("name 'sns' is not defined", "sns.histplot(x)", "import seaborn as sns"),
    ("name 're' is not defined", "re.sub('a', 'b', s)", "import re"),
    # A name with two meanings is the model's to fix: `import datetime` breaks datetime.now().
    ("name 'datetime' is not defined", "datetime.now()", ""),
    ("name 'revenue' is not defined", "revenue + 1", ""),
    # Imported already, yet undefined (in a function, a typo'd scope): not an import's fault.
    ("name 'pd' is not defined", "import pandas as pd\ndef f():\n    pd", ""),
])
def test_which_names_get_an_import(evalue: str, code: str, expected: str) -> None:
    assert missing_import(ErrorInfo("NameError", evalue, "", 1), [code]) == expected


def test_the_import_added_once_then_a_second_name_error_goes_to_the_model() -> None:
    # The import did not help (the kernel raises the same NameError again): a fix is asked.
    always = Kernel()
    always.execute = lambda code: (always.ran.append(code), ExecutionResult(  # type: ignore[method-assign]
        error=ErrorInfo("NameError", "name 'pd' is not defined", "NameError", 1)))[1]
    model = ScriptedClient([block("pd.x"), block("y = 1")])
    outcome = drive(agent_loop("do it", "ctx", LoopSettings(retries=1)), model, always)  # type: ignore[arg-type]
    assert len(model.requests) == 2 and len(always.ran) == 3  # import added once, then one fix
    assert outcome.status == "failed"


def test_a_data_question_answered_in_words_is_asked_for_code() -> None:
    outcome, model, kernel, notices = run(
        ["The mean fare is 32.2.", block("print(df['Fare'].mean())")],
        request="What is the mean fare in titanic.csv?", prints="32.204\n", needs_code=True, answer="never")
    assert outcome.status == "success" and kernel.ran == ["print(df['Fare'].mean())"]
    assert "computes the answer from the data and prints it" in model.requests[1][-1].content
    assert any(n.kind == "again" and "asking it for code (2 tries left)" in n.text for n in notices)


def test_a_data_question_still_answered_in_words_is_not_answered_never_a_tick() -> None:
    outcome, model, kernel, _ = run(["It is 0.17.", "About 0.17.", "0.17, I am sure."],
                                    request="What is the skewness of fare?", needs_code=True, retries=2)
    assert outcome.status == "failed" and not kernel.ran and len(model.requests) == 3
    assert outcome.reason.startswith("not answered: the model gave no code for a question about data (asked 3 times)")
    line = summarize(outcome).line()
    assert line.startswith("✗ not answered") and "✓" not in line
    assert summarize(outcome).advice("--retries") == ""  # the reason says what to do


def test_a_question_that_is_not_about_data_may_be_answered_in_words() -> None:
    outcome, model, _, _ = run(["A p-value is the chance of …"], request="What is a p-value?")
    assert outcome.status == "answered" and len(model.requests) == 1


@pytest.mark.parametrize("request_, named, expected", [
    ("What is the mean fare in titanic.csv?", (), True),
    ("Load sales.xlsx", (), True),
    ("plot revenue per region", ("df: DataFrame",), True),
    ("How many passengers survived?", (), True),
    ("Run a t-test of fare between the classes", (), True),
    ("What is a p-value?", (), False),
    ("Explain the correlation matrix above", (), False),
    ("Write a haiku about notebooks", (), False),
    ("Why did my last cell fail?", (), False),
    ("Explain the columns of df", ("df: DataFrame",), False),  # words about named data
    ("Why is the total of sales.csv so low?", (), True),  # a number about named data
])
def test_which_requests_are_about_data(request_: str, named: tuple[str, ...], expected: bool) -> None:
    assert about_data(request_, named) is expected


def test_an_answer_stating_a_number_the_output_does_not_show_is_flagged() -> None:
    outcome, model, _, _ = run([block("print(df['Fare'].skew())"), "The skewness of fare is 0.17."],
                               request="What is the skewness of fare?", prints="4.787316519674893\n")
    assert outcome.status == "success" and outcome.unchecked == ("0.17",)
    assert outcome.answer.endswith("⚠ Not checked: this number is not in the output the code printed: 0.17.")
    facts = summarize(outcome)
    assert facts.line().startswith("⚠ done in 1 attempt (1 number in the answer not in the output)")


def test_an_answer_whose_numbers_the_output_shows_is_not_flagged() -> None:
    outcome, _, _, _ = run([block("print(df['Fare'].skew())"), "The skewness is about 4.79, over 2 columns."],
                           request="What is the skewness of fare?", prints="4.787316519674893\n")
    assert outcome.unchecked == () and "⚠" not in outcome.answer
    assert summarize(outcome).line().startswith("✓ done in 1 attempt")


@pytest.mark.parametrize("answer, shown, expected", [
    ("It is 4.79.", ["4.787316"], ()),
    ("It is 4.8.", ["4.787316"], ()),
    ("It is 4.79.", ["4.8"], ("4.79",)),  # more digits than anything shown: made up
    ("51.1% of them", ["0.5112"], ()),  # a share written as a percentage
    ("42.25 percent", ["0.511"], ("42.25 percent",)),
    ("1,234 rows", ["1234"], ()),
    ("3 regions, 2 columns", [""], ()),  # digits alone count what the answer names
    ("top 10 by revenue: 76", ["top 10", "76"], ()),
    ("fell by 12", ["-12.0"], ()),
    ("in 2023 there were 36", ["2023-01-05 36"], ()),
    ("the count is 36, not 76", ["36"], ("76",)),
    ("column Q4 and x2", [""], ()),  # part of a name, not a number
])
def test_which_numbers_count_as_shown(answer: str, shown: list[str], expected: tuple[str, ...]) -> None:
    assert unsupported_numbers(answer, shown) == expected


def test_an_import_a_file_of_the_folder_would_shadow_is_left_to_the_model() -> None:
    # The kernel says a file beside the notebook would be imported (context/importsource.py):
    # no import is added, one line says why, and the NameError goes to the model as usual.
    model, kernel, reporter = ScriptedClient([block("df = pd.DataFrame({'a': [1]})\ndf"), block("x = 1")]), \
        Kernel(), Notices()
    asked: list[str] = []

    def importer(module: str) -> str:
        asked.append(module)
        return "pandas.py in this folder would shadow the installed package"

    outcome = drive(agent_loop("do it", "ctx", LoopSettings()), model, kernel, reporter,  # type: ignore[arg-type]
                    importer=importer)
    assert outcome.status == "success" and asked == ["pandas"]
    assert len(model.requests) == 2 and "NameError" in model.requests[1][-1].content
    assert not any("import pandas" in code for code in kernel.ran)
    said = [n.text for n in reporter.seen if n.kind == "install"]
    assert said == ["not importing pandas automatically: pandas.py in this folder would shadow the installed package"]


def test_the_kernel_is_asked_about_the_top_level_package() -> None:
    model, kernel = ScriptedClient([block("plt.plot([1])")]), Kernel()
    kernel.execute = lambda code: (kernel.ran.append(code), ExecutionResult(  # type: ignore[method-assign]
        error=ErrorInfo("NameError", "name 'plt' is not defined", "NameError", 1)) if "import" not in code
        else ExecutionResult())[1]
    asked: list[str] = []
    drive(agent_loop("do it", "ctx", LoopSettings()), model, kernel, importer=lambda m: asked.append(m) or "")  # type: ignore[arg-type, func-returns-value]
    assert asked == ["matplotlib.pyplot"] and kernel.ran[-1].startswith("import matplotlib.pyplot as plt\n")
