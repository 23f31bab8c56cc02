"""The answer-in-words rule, the loop's extra call, and the one-line summary every driver shows."""

from __future__ import annotations

import html
import re

import pytest

from jupyter_ai_ci.core import prompts
from jupyter_ai_ci.core.answer import is_question, prose, stated, wants_answer
from jupyter_ai_ci.core.loop import LoopSettings, agent_loop
from jupyter_ai_ci.drivers.magic_view import RunView
from jupyter_ai_ci.events import Attempt, CallModel, ErrorInfo, ExecutionResult, Notice, Outcome, Usage
from jupyter_ai_ci.model.client import ScriptedClient
from jupyter_ai_ci.notebook.replay import Record, replaying
from jupyter_ai_ci.run.drive import drive
from jupyter_ai_ci.run.summary import summarize, tokens_text
from jupyter_ai_ci.tokens import count_tokens

PRINTED = ExecutionResult(output="north 24.5\n")


class Fields:
    """A kernel whose code prints the request's field filled in."""

    def execute(self, code: str) -> ExecutionResult:
        return ExecutionResult(output="@top[north]\n")


class Printing:
    def execute(self, code: str) -> ExecutionResult:
        return PRINTED if "print" in code else ExecutionResult()


@pytest.mark.parametrize(("request_", "question"), [
    ("Which region has the highest revenue?", True),
    ("how many rows does df have", True),
    ("Load sales.csv and tell me:\nis revenue rising?", True),
    ("plot revenue per region", False),
    ("Do a groupby by region", False),  # "do" starts commands as often as questions
    ("Can you drop the empty rows", False),
    ("", False),
])
def test_is_question(request_: str, question: bool) -> None:
    assert is_question(request_) is question


def test_the_rule_needs_text_output_and_honours_the_mode() -> None:
    figure = ExecutionResult(displays=("image/png <Figure>",))
    assert wants_answer("auto", "which region?", [PRINTED])
    assert not wants_answer("auto", "which region?", [figure])  # an image nobody described: unseen
    described = ExecutionResult(displays=("image/png <Figure>",), figures=("Matplotlib figure: 1 axes",))
    assert wants_answer("auto", "which region?", [described])  # its description is text it reads
    assert not wants_answer("auto", "plot it", [PRINTED])
    assert wants_answer("always", "plot it", [PRINTED])
    assert wants_answer("auto", "what is it?", [ExecutionResult(result="42")])
    assert not wants_answer("never", "which region?", [PRINTED])
    # A displayed picture that is no chart: said by its size, answered from only by a model that sees it.
    photo = ExecutionResult(displays=("image/png",), figures=("an image 640×480 px, not a chart",))
    assert not wants_answer("auto", "what does it show?", [photo])
    assert wants_answer("auto", "what does it show?", [photo], sees=True)


FORM = "Answer format: @mean_fare[mean_fare_value], @survived[count]"


@pytest.mark.parametrize(("printed", "said"), [
    ("mean 34.6\n@mean_fare[34.65]\n@survived[342]\n", "@mean_fare[34.65]\n@survived[342]"),
    ("@survived[342], @mean_fare[34.65]\n", "@survived[342], @mean_fare[34.65]"),  # one line holds both
    ("@mean_fare[30.1]\n@mean_fare[34.65] @survived[342]\n", "@mean_fare[34.65] @survived[342]"),  # the last
    ("@mean_fare[34.65]\n", ""),  # a field left out: the model says the rest
    ("@mean_fare[mean_fare_value]\n@survived[342]\n", ""),  # the request's placeholder echoed
    ("@mean_fare[]\n@survived[342]\n", ""),  # empty
    ("@mean_fare[{mean_fare:.2f}]\n@survived[342]\n", ""),  # an f-string left unformatted
    ("@mean_fare[mean_fare]\n@survived[342]\n", ""),  # the field's own name
    ("@mean_fare[Mean Fare Value]\n@survived[342]\n", ""),  # the placeholder, in other case and spacing
    ("34.65 342\n", ""),
])
def test_the_output_states_the_answer_when_it_fills_in_every_field_asked(printed: str, said: str) -> None:
    assert stated(f"What is the mean fare?\n{FORM}", [ExecutionResult(output=printed)]) == said


def test_no_field_asked_is_never_stated_and_a_value_counts_too() -> None:
    assert stated("What is the mean fare?", [ExecutionResult(output="@mean_fare[34.65]\n")]) == ""
    assert stated("Give @n[rows]", [ExecutionResult(result="'@n[891]'")]) == "'@n[891]'"
    # The form described in general is no field to fill in (DABench's request says it so) ...
    assert stated("@n[rows]\nPrint one @name[value] for each name.", [ExecutionResult(output="@n[891]\n")]) == "@n[891]"
    # ... but a field called name is one.
    both = "Answer as @name[passenger_name] and @fare[fare_value]"
    printed = ExecutionResult(output="@name[Ward, Miss. Anna]\n@fare[512.33]\n")
    assert stated(both, [printed]) == "@name[Ward, Miss. Anna]\n@fare[512.33]"
    # Code in the request is no form to fill in: x@y[0] is a matrix product, and a fenced block's lines are code.
    assert stated("What is x@y[0]?", [ExecutionResult(output="3\n")]) == ""
    assert stated("Why does\n```\nprint(f'@a[{a}]')\n```\nfail?", [ExecutionResult(output="@a[1]\n")]) == ""


def test_an_answer_the_output_states_costs_no_call_even_when_always_asked() -> None:
    model = ScriptedClient([code("print(t)"), "never asked"])
    outcome = drive(agent_loop("Give the top region as @top[region]", "ctx", LoopSettings(answer="always")),
                    model, Fields())  # type: ignore[arg-type]
    assert outcome.status == "success" and outcome.answer == "@top[north]" and outcome.requests == 1


def test_no_answer_means_none_even_when_the_output_states_it() -> None:
    model = ScriptedClient([code("print(t)")])
    outcome = drive(agent_loop("Which region? Give @top[region]", "ctx", LoopSettings(answer="never")),
                    model, Fields())  # type: ignore[arg-type]
    assert outcome.status == "success" and outcome.answer == "" and outcome.requests == 1


def test_prose_drops_code() -> None:
    assert prose("North.\n```python\nprint(1)\n```\nIt is 24.5.") == "North.\n\nIt is 24.5."


def code(text: str) -> str:
    return f"```python\n{text}\n```"


def test_a_question_costs_one_more_call_that_sees_the_output() -> None:
    model = ScriptedClient([code("print(t)"), "North: 24.5.\n```python\nprint('never run')\n```"])
    outcome = drive(agent_loop("which region?", "ctx", LoopSettings()), model, Printing())  # type: ignore[arg-type]
    assert outcome.status == "success" and outcome.answer == "North: 24.5."
    assert outcome.requests == 2 and len(outcome.attempts) == 1
    assert "north 24.5" in model.requests[1][-1].content


def test_a_request_to_do_something_makes_no_extra_call() -> None:
    model = ScriptedClient([code("print(t)")])
    outcome = drive(agent_loop("add a column", "ctx", LoopSettings()), model, Printing())  # type: ignore[arg-type]
    assert outcome.requests == 1 and outcome.answer == ""


def test_no_answer_over_the_budget() -> None:
    model = ScriptedClient([code("print(t)")])
    # Room for the first request (the system prompt and a little), not for a second one that
    # carries the whole conversation again.
    budget = count_tokens(prompts.SYSTEM) + 100
    outcome = drive(agent_loop("which region?", "ctx", LoopSettings(token_budget=budget)), model,  # type: ignore[arg-type]
                    Printing())
    assert outcome.status == "success" and outcome.requests == 1 and outcome.answer == ""


def test_replay_serves_the_recorded_answer_and_never_asks_for_a_missing_one() -> None:
    def record(*replies: str) -> Record:
        return Record("k", "which region?", "m", "h", replies, 1, 10, 5, 2, "2026-11-23T00:00:00Z")

    for replies, answer in (((code("print(t)"), "North."), "North."), ((code("print(t)"),), "")):
        model = ScriptedClient([])  # any call would raise
        loop = replaying(agent_loop("which region?", "ctx", LoopSettings()), record(*replies))
        outcome = drive(loop, model, Printing())  # type: ignore[arg-type]
        assert outcome.status == "success" and outcome.answer == answer and outcome.requests == 0
        assert model.requests == []


def outcome(status: str, attempts: int = 1, **kw: object) -> Outcome:
    error = ErrorInfo("KeyError", "'regoin'", "tb", 1)
    tries = tuple(Attempt(i + 1, 1, ("x",), (ExecutionResult(error=error),)) for i in range(attempts))
    return Outcome(status, attempts=tries, usage=Usage(1200, 100), requests=attempts, **kw)  # type: ignore[arg-type]


def test_one_line_for_every_ending() -> None:
    assert tokens_text(850) == "850 tokens" and tokens_text(1300) == "1.3k tokens"
    assert tokens_text(12400) == "12k tokens" and tokens_text(2000) == "2k tokens" and tokens_text(1) == "1 token"
    assert tokens_text(2_500_000) == "2.5M tokens"
    assert summarize(outcome("success", 2), 3.44).line() == "✓ done in 2 attempts · 1.3k tokens · 3.4 s"
    assert summarize(Outcome("success"), 0.1, replayed=True).line() == \
        "✓ done in 0 attempts · replayed, no model call · 0.1 s"
    failed = summarize(outcome("failed", 3))
    assert failed.line() == "✗ gave up after 3 attempts; last error: KeyError: 'regoin' (line 1) · 1.3k tokens"
    assert failed.sentence().startswith("Gave up after 3 attempts") and failed.sentence().endswith(".")
    assert summarize(outcome("refused", reason="refused by policy: x")).line().startswith("✗ refused by policy: x")
    assert summarize(Outcome("answered", answer="It has 3 rows.", requests=1, usage=Usage(5, 5))).sentence() == \
        "Answered without code · 10 tokens."


def test_an_attempt_run_again_mended_shows_its_code_as_it_ran_once() -> None:
    """A mend (core/mends.py) runs the same reply again, changed: the section shows the code that ran
    and its cells once, not the line that changed a copy beside the assignment."""
    view = RunView("m")
    view.started(CallModel((), "first"))
    view.current.text = ("df['a'].fillna(0, inplace=True)\nis what I will run:\n"  # quoted first, in the prose
                         + code("df['a'].fillna(0, inplace=True)"))  # type: ignore[union-attr]
    view.current.streaming = False  # type: ignore[union-attr]
    mended = "import pandas as pd\ndf['a'] = df['a'].fillna(0)"
    for number, ran in ((1, "df['a'].fillna(0, inplace=True)"), (2, mended)):
        view.notice(Notice("attempt", f"attempt {number}: running 1 cell", attempt=number))
        view.current.blocks.append((ran, ExecutionResult(output="done")))  # type: ignore[union-attr]
    shown = html.unescape(re.sub("<[^>]+>", "", view.html()))  # as read, highlighting aside
    assert "✓ attempt 2 · 1 cell" in shown and mended in shown, shown
    assert shown.count("inplace") == 1 and shown.index("inplace") < shown.index("is what I will run"), shown


def test_the_views_text_has_no_markup_and_folds_at_the_end() -> None:
    view = RunView("m")
    view.started(CallModel((), "first"))
    view.current.text = "Try <b>this</b>:\n" + code("x = 1/0")  # type: ignore[union-attr]
    view.current.streaming = False  # type: ignore[union-attr]
    view.notice(Notice("attempt", "attempt 1: running 1 cell", attempt=1))
    view.current.blocks.append(("x = 1/0", None))  # type: ignore[union-attr]
    # Running: no ▶ under the fold's ▼ (it read as a second, closed section).
    assert "<summary><b>⟳ attempt 1 · running</b></summary>" in view.html() and "▶" not in view.html()
    error = ErrorInfo("ZeroDivisionError", "division by zero", "Traceback …\nZeroDivisionError: division by zero", 1)
    view.current.blocks[-1] = ("x = 1/0", ExecutionResult(output="<partial>", error=error))  # type: ignore[union-attr]
    view.notice(Notice("retrying", "attempt 1 failed", attempt=1))
    # Under way, the current attempt's title is the head, once (found by hand: it showed twice).
    assert view.html().count("✗ attempt 1 · ZeroDivisionError: division by zero (line 1)") == 1
    assert "<summary><b>✗ attempt 1 · ZeroDivisionError" in view.html()
    assert "&lt;b&gt;this&lt;/b&gt;" in view.html() and "&lt;partial&gt;" in view.html()
    view.final, view.answer = "✗ gave up after 1 attempt", "Because <x>."
    html, text = view.html(), view.text()
    assert "<details open>" not in html and '<span style="color:var(--jp-error-color1' in html
    assert text.splitlines()[0] == "✗ gave up after 1 attempt" and "<" not in text.replace("<x>", "")


def test_a_reply_whose_code_was_not_run_is_not_called_without_code() -> None:
    view = RunView("m")
    for text, title in ((code("def f(): pass"), "reply, its code not run"), ("Just words.", "reply without code")):
        view.started(CallModel((), "first"))
        view.current.text = text  # type: ignore[union-attr]
        view.current.streaming = False  # type: ignore[union-attr]
        assert view.current.title("m") == title  # type: ignore[union-attr]


class _Handle:
    def __init__(self, bundle: dict[str, str]) -> None:
        self.bundle = bundle

    def update(self, bundle: dict[str, str], **kwargs: object) -> None:
        self.bundle = bundle


class _Failing:
    def execute(self, code: str) -> ExecutionResult:
        return ExecutionResult(error=ErrorInfo("IndexError", "list index out of range", "IndexError: …", 1))


def test_the_last_failed_attempt_is_marked_failed_too() -> None:
    # Found by hand: the attempt after which the run gave up (no retry notice follows it) showed ✓.
    from jupyter_ai_ci.drivers.magic_view import RichReporter

    shown: list[_Handle] = []

    def display(bundle: dict[str, str], **kwargs: object) -> _Handle:
        shown.append(_Handle(bundle))
        return shown[-1]

    reporter = RichReporter("m", display)
    client = ScriptedClient([code("x = [][0]"), code("x = [][1]")])
    outcome = drive(agent_loop("set x", "", LoopSettings(retries=1)), client, _Failing(), reporter)
    assert outcome.status == "failed"
    reporter.finish("✗ gave up after 2 attempts")
    text = shown[-1].bundle["text/plain"]
    assert "✗ attempt 2 · IndexError" in text and "✓ attempt" not in text, text
    assert "✓ attempt" not in shown[-1].bundle["text/html"]
