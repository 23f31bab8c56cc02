"""Candidates that must agree (#28): results compared, the vote driven in memory, the words shown.

The kernel is played by canned results here; tests/integration/test_consensus_shell.py and the
conformance tests run the same in real kernels through every driver."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_ai_ci.core.loop import agent_loop
from jupyter_ai_ci.core.sameresult import key, same, shown
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.drivers.magic_view import RichReporter, RunView
from jupyter_ai_ci.drivers.server.protocol import AskMessage, RequestRefused
from jupyter_ai_ci.events import (
    Attempt,
    Approval,
    AskApproval,
    CallModel,
    Checkpoint,
    Commit,
    ErrorInfo,
    Execute,
    ExecutionResult,
    FailureNotes,
    Inspect,
    ModelReply,
    NO_ANSWER,
    STOPPED,
    Notice,
    Outcome,
    Rollback,
    TransactionReport,
    Usage,
)
from jupyter_ai_ci.run.summary import summarize
from jupyter_ai_ci.tokens import estimate_usage


@pytest.mark.parametrize("a, b", [
    ("76", "76.0"), ("The count is 76", "76"), ("34.65", "34.6543"), ("np.int64(3)", "3"),
    ("{'b': 2, 'a': 1.5}", "a    1.5\nb    2.0\ndtype: float64"),  # a dict and a Series, any order
    ("'Male'", "Most common: male"), ("0.511", "0.5112"), ("nan", "NaN"),
    ("yes    36\nno     40\nName: count, dtype: int64", "{'no': 40, 'yes': 36}"),
    # Fields to fill in: their words compare too, case, spaces and punctuation aside.
    ("@corr[0.12]\n@kind[non-linear]", "@corr[0.1234] @kind[Nonlinear]"),
    ("@corr[0.12]\n@kind[linear]", "@corr[0.12]"),  # a field only one shows is not compared
    ("@kind[linear]\n@test['t-test']", "@kind[Linear]\n@test[t test]"),
    ("@kind[None]", "@kind[none]"), ("@cols[Age, Fare]", "@cols[fare; age]"), ("@p[1.2e-05]", "@p[0.000012]"),
])
def test_the_same_answer_computed_two_ways_compares_equal(a: str, b: str) -> None:
    assert same(key(shown([ExecutionResult(result=a)])), key(shown([ExecutionResult(result=b)])))


@pytest.mark.parametrize("a, b", [
    ("76", "36"), ("1000", "1004"), ("0.511", "51.1"), ("male", "female"), ("(1, 2)", "(1, 2, 3)"),
    ("", ""),  # nothing shown: nothing to compare, never "the same"
    ("@corr[0.12]\n@kind[none]", "@corr[0.12]\n@kind[nonlinear]"),  # DABench 429: the same numbers
    ("@kind[linear]\n@test[t-test]", "@kind[none]\n@test[t-test]"),  # not the last line alone
    ("@kind[linear]", "@type[linear]"),  # no field in common: nothing compared
    ("@col[col2]", "@col[col3]"), ("@quarter[Q1]", "@quarter[Q4]"),  # a digit in a word is the word's
    ("@kind[linear]\nBest model: Ridge", "@kind[linear]\nBest model: Lasso"),  # fields and words
])
def test_different_answers_do_not(a: str, b: str) -> None:
    assert not same(key(a), key(b))


def test_a_result_that_leaves_a_field_out_does_not_join_two_that_differ_on_it() -> None:
    from jupyter_ai_ci.core.grouping import Ran, grouped

    texts = ["@corr[0.12]", "@corr[0.13]", "@corr[0.12]\n@kind[none]", "@corr[0.12]\n@kind[nonlinear]"]
    ran = [Ran(i, Attempt(i, 1, ("pass",), (ExecutionResult(output=t),)), key(t), t) for i, t in enumerate(texts, 1)]
    # The fourth is the same as the first, not as the third: it is a group of its own, not "3 of 4".
    assert [[r.number for r in g] for g in grouped(ran)] == [[1, 3], [2], [4]]


def test_a_value_is_the_result_and_a_print_beside_it_is_commentary() -> None:
    assert shown([ExecutionResult(output="loaded 891 rows\n", result="76")]) == "76"
    assert shown([ExecutionResult(output="loaded\n"), ExecutionResult(output="76\n")]) == "loaded\n\n76\n"


def py(code: str) -> str:
    return f"```python\n{code}\n```"


class Kernel:
    """Plays the driver: canned replies and results, and what the loop asked of it.  A reply or a
    result that is an exception is thrown into the loop there, as a driver does with a Stop."""

    def __init__(self, replies: list[str | ModelReply | BaseException], results: list[ExecutionResult | BaseException],
                 notes: FailureNotes | None = None):
        self.replies, self.results, self.notes = list(replies), list(results), notes
        self.log: list[str] = []
        self.calls: list[CallModel] = []

    def run(self, request: str = "How many said yes in survey.csv?", **settings: Any) -> Outcome:
        loop = agent_loop(request, "", LoopSettings(**{"candidates": 3, "answer": "never", **settings}))
        sent: Any = None
        try:
            while True:
                action = loop.throw(sent) if isinstance(sent, BaseException) else loop.send(sent)
                sent = None
                if isinstance(action, CallModel):
                    self.calls.append(action)
                    reply = self.replies.pop(0)
                    sent = reply if isinstance(reply, (ModelReply, BaseException)) else \
                        ModelReply(reply, usage=Usage(10, 5))
                elif isinstance(action, Execute):
                    self.log.append(f"run {action.attempt}")
                    sent = self.results.pop(0)
                elif isinstance(action, (Checkpoint, Rollback, Commit)):
                    self.log.append(f"{type(action).__name__.lower()} {action.attempt}")
                    sent = TransactionReport()
                elif isinstance(action, Inspect):
                    sent = self.notes or FailureNotes()
                elif isinstance(action, AskApproval):
                    self.log.append(f"asked about {action.attempt}")
                    sent = Approval(True)
                elif isinstance(action, Notice) and action.kind == "candidate":
                    self.log.append(action.text)
                elif isinstance(action, Notice) and action.kind == "candidate-text":
                    self.log.append(f"shown {action.text!r}")
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


def test_the_first_two_agree_so_the_third_is_never_asked_and_the_second_is_committed() -> None:
    k = Kernel([py("a"), py("b")], [ExecutionResult(result="76"), ExecutionResult(output="76\n")])
    outcome = k.run()
    assert k.log == ["checkpoint 1", "run 1", "candidate 1 of 3: 76 — checking…", "rollback 1",
                     "checkpoint 2", "run 2", "candidate 2 of 3: 76 — agrees with 1", "commit 2"]
    assert [c.purpose for c in k.calls] == ["first", "candidate"]
    assert k.calls[1].temperature == 0.7 and k.calls[0].temperature is None
    assert [c.code for c in outcome.cells] == ["b"]
    assert outcome.requests == 2 and outcome.usage == Usage(20, 10)
    facts = summarize(outcome)
    assert facts.line() == "✓ done · 2 of 2 candidates agree · 30 tokens"


def test_the_rest_are_asked_for_in_one_request_and_its_other_choices_run_in_turn() -> None:
    k = Kernel([py("a"), ModelReply(py("b"), usage=Usage(10, 10), alternatives=(py("c"),))],
               [ExecutionResult(result=r) for r in ("76", "36", "76")])
    outcome = k.run()
    assert [(c.purpose, c.n) for c in k.calls] == [("first", 1), ("candidate", 2)]
    # The second choice is shown where a reply would stream, once the first is rolled back.
    assert k.log[k.log.index("candidate 2 of 3: 36 — differs"):] == [
        "candidate 2 of 3: 36 — differs", "rollback 2", "shown '```python\\nc\\n```'", "checkpoint 3", "run 3",
        "candidate 3 of 3: 76 — agrees with 1", "commit 3"]
    assert [c.code for c in outcome.cells] == ["c"]
    assert outcome.requests == 2 and outcome.usage == Usage(20, 15)  # the one call's usage, once


def test_fewer_choices_than_asked_are_asked_again_for_the_rest() -> None:
    # An endpoint that ignores n (or is never sent it: llama.cpp, Ollama) gives one choice a request.
    k = Kernel([py("a"), py("b"), py("c")], [ExecutionResult(result=r) for r in ("76", "36", "12", "76")])
    outcome = k.run()
    assert [(c.purpose, c.n) for c in k.calls] == [("first", 1), ("candidate", 2), ("candidate", 1)]
    assert outcome.requests == 3 and not any(line.startswith("shown") for line in k.log)


def test_two_that_agree_drop_the_choices_still_waiting() -> None:
    k = Kernel([py("a"), ModelReply(py("b"), alternatives=(py("c"), py("d")))],
               [ExecutionResult(result="76"), ExecutionResult(result="76")])
    outcome = k.run(candidates=4)
    assert [c.n for c in k.calls] == [1, 3]
    assert k.log[-2:] == ["candidate 2 of 4: 76 — agrees with 1", "commit 2"]
    assert outcome.requests == 2 and summarize(outcome).what() == "done · 2 of 2 candidates agree"


def test_no_majority_applies_the_first_again_and_is_never_a_tick() -> None:
    k = Kernel([py("a"), py("b"), py("c")], [ExecutionResult(result="76"), ExecutionResult(result="36"),
                                             ExecutionResult(result="12"), ExecutionResult(result="76")])
    outcome = k.run()
    assert k.log[-5:] == ["rollback 3", "applying candidate 1 (1 of 3)", "checkpoint 4", "run 4", "commit 4"]
    assert [c.code for c in outcome.cells] == ["a"]
    assert summarize(outcome).line() == "⚠ candidates disagree: 76 (1 of 3) vs 36 vs 12 · 45 tokens"


def test_a_tie_of_two_groups_goes_to_the_first_candidates() -> None:
    k = Kernel([py("a"), py("b"), py("c"), py("d")],
               [ExecutionResult(result=r) for r in ("76", "36", "36.0", "76.0", "76")])
    outcome = k.run(candidates=4)
    assert [c.code for c in outcome.cells] == ["d"]  # 76 (1 and 4) against 36 (2 and 3): the first's group
    assert "commit 4" in k.log and "run 5" not in k.log  # the last run is of it: committed, not run again
    assert summarize(outcome).what() == "candidates disagree: 76.0 (2 of 4) vs 36 (2)"


def test_the_answer_in_words_comes_before_the_check_and_says_it_is_not_sure() -> None:
    # Asked as soon as the first candidate's result is in: shown when the result is, and read from
    # the model's cache, which still holds that candidate's reply.
    k = Kernel([py("a"), "There are 76.", py("b"), py("c")],
               [ExecutionResult(result=r) for r in ("76", "36", "12", "76")])
    outcome = k.run(answer="always")
    assert [c.purpose for c in k.calls] == ["first", "answer", "candidate", "candidate"]
    assert "76" in k.calls[1].messages[-1].content and k.log.index("candidate 1 of 3: 76 — checking…") == 2
    assert outcome.answer == "There are 76.\n\n⚠ Not sure: candidates disagree: 76 (1 of 3) vs 36 vs 12."
    assert outcome.requests == 4 and outcome.messages[-1].content == "There are 76."


def test_an_answer_said_of_a_candidate_the_vote_did_not_keep_is_asked_again_of_the_winner() -> None:
    k = Kernel([py("a"), "There are 76.", py("b"), py("c"), "There are 36."],
               [ExecutionResult(result=r) for r in ("76", "36", "36")])
    outcome = k.run(answer="always")
    assert [c.purpose for c in k.calls] == ["first", "answer", "candidate", "candidate", "answer"]
    assert "36" in k.calls[-1].messages[-1].content
    # The first answer left the conversation (a follow-up reads it): it was of a result not kept.
    assert all("There are 76." not in m.content for m in k.calls[-1].messages)
    assert outcome.answer.startswith("There are 36.\n\n⚠ Not sure") and [c.code for c in outcome.cells] == ["c"]
    assert outcome.requests == 5  # the answer not kept was paid for, and is counted


def test_a_stop_while_the_answer_is_written_before_the_check_ends_the_check_too() -> None:
    # What the driver sends back when the person stops an answer in words (run/drive.py).
    k = Kernel([py("a"), ModelReply("", finish_reason=STOPPED)], [ExecutionResult(result="76")])
    outcome = k.run(candidates=2, answer="always")
    assert [c.purpose for c in k.calls] == ["first", "answer"]  # no other candidate asked
    assert k.log == ["checkpoint 1", "run 1", "check stopped: candidate 1's result is kept, not checked", "commit 1"]
    assert outcome.status == "success" and outcome.unanswered and outcome.requests == 1
    assert summarize(outcome).what() == "done, not checked: you stopped the check (no answer in words)"


def test_a_cancellation_while_the_answer_before_the_check_is_written_rolls_the_first_back() -> None:
    # An agent's cancellation, the panel closed, an error of the client: not a Stop that keeps what ran.
    import asyncio

    k = Kernel([py("a"), asyncio.CancelledError()], [ExecutionResult(result="76")])
    with pytest.raises(asyncio.CancelledError):
        k.run(candidates=2, answer="always")
    assert k.log == ["checkpoint 1", "run 1", "rollback 1"]


def test_a_stop_that_keeps_another_groups_result_drops_the_answer_said_of_the_first() -> None:
    k = Kernel([py("a"), "It is 76.", py("b"), py("c"), KeyboardInterrupt()],
               [ExecutionResult(result=r) for r in ("76", "36", "36", "36")])
    outcome = k.run(candidates=4, answer="always")
    assert [c.purpose for c in k.calls] == ["first", "answer", "candidate", "candidate", "candidate"]
    assert outcome.answer == "" and outcome.unanswered and [c.code for c in outcome.cells] == ["c"]
    assert all("It is 76." not in m.content for m in outcome.messages)
    assert summarize(outcome).what().endswith("(no answer in words)")


def test_under_a_token_budget_the_answer_waits_for_the_check() -> None:
    # Asked first, it would spend what the check needs (the budget counts every call).
    k = Kernel([py("a"), py("b"), "It is 76."], [ExecutionResult(result="76"), ExecutionResult(result="76")])
    outcome = k.run(candidates=2, answer="always", token_budget=100_000)
    assert [c.purpose for c in k.calls] == ["first", "candidate", "answer"]
    assert outcome.answer == "It is 76." and summarize(outcome).what() == "done · 2 of 2 candidates agree"


def test_a_variable_set_and_not_shown_is_read_in_the_kernel() -> None:
    notes = FailureNotes(("answer: int = 76   (set by the failed code)",))
    k = Kernel([py("answer = 76"), py("answer = 76")], [ExecutionResult(), ExecutionResult()], notes)
    outcome = k.run()
    assert summarize(outcome).what() == "done · 2 of 2 candidates agree"


def test_lasting_effects_and_results_with_nothing_to_compare_are_one_candidate() -> None:
    k = Kernel([py("import shutil\nshutil.rmtree('old')\n1")], [ExecutionResult(result="1")])
    outcome = k.run(policy=LoopSettings().policy.__class__("auto"))
    assert k.log == ["checkpoint 1", "run 1", "commit 1"] and len(k.calls) == 1
    assert summarize(outcome).line() == "✓ done · 1 candidate (has side effects) · 15 tokens"
    k = Kernel([py("plot()")], [ExecutionResult(displays=("<Figure size 640x480>",))])
    assert summarize(k.run()).what() == "done · 1 candidate (nothing to compare)"


def test_the_person_is_asked_about_the_first_candidate_alone() -> None:
    """Code the policy asks about: asked once, for the first; a later candidate that would need
    asking is not run (nobody is asked K times for one request), the same code is."""
    risky = "eval('38 * 2')"  # asked about, and nothing outlives a rollback: voted on
    k = Kernel([py(risky), py("exec('n = 76')\nn"), py(risky)],
               [ExecutionResult(result="76"), ExecutionResult(result="76")])
    outcome = k.run(retries=0)
    assert k.log.count("asked about 1") == 1 and not any(line.startswith("asked about") for line in k.log[1:])
    assert any(line.startswith("candidate 2 of 3 not run: it would need your approval (") for line in k.log)
    assert "candidate 3 of 3: 76 — agrees with 1" in k.log  # the code approved for 1: not asked again
    assert summarize(outcome).what() == "done · 2 of 2 candidates agree (1 more did not run cleanly)"


def test_policy_ask_runs_one_candidate_and_says_why() -> None:
    """Every run asked about: the others would never run (a person is asked once), so none is asked for."""
    from jupyter_ai_ci.safety.policy import PolicySettings

    k = Kernel([py("76")], [ExecutionResult(result="76")])
    outcome = k.run(policy=PolicySettings("ask"))
    assert k.log == ["asked about 1", "checkpoint 1", "run 1", "commit 1"] and len(k.calls) == 1
    assert summarize(outcome).what() == "done · 1 candidate (policy 'ask': every run needs your approval)"


def test_candidates_that_fail_are_not_counted_and_one_left_is_not_confirmed() -> None:
    boom = ExecutionResult(error=ErrorInfo("ZeroDivisionError", "division by zero", ""))
    k = Kernel([py("a"), "It is 76.", py("1/0")], [ExecutionResult(result="76"), boom, ExecutionResult(result="76")])
    outcome = k.run(retries=0)
    assert "candidate 2 of 3 gave no code: not counted" in k.log
    assert any(line.startswith("candidate 3 of 3 raised ZeroDivisionError") for line in k.log)
    facts = summarize(outcome)
    assert facts.line() == "⚠ done, not confirmed: 2 other candidates did not run cleanly · 45 tokens"
    assert [c.code for c in outcome.cells] == ["a"]


def test_a_candidate_that_raises_is_asked_anew_with_the_error_in_words_and_then_counts() -> None:
    boom = ExecutionResult(error=ErrorInfo("KeyError", "'Yes'", "", lineno=1))
    k = Kernel([py("a"), py("b"), py("c")], [ExecutionResult(result="76"), boom, ExecutionResult(result="76.0")])
    outcome = k.run()
    assert [c.purpose for c in k.calls] == ["first", "candidate", "candidate"]
    fix = k.calls[2].messages[-1].content
    assert "KeyError: 'Yes'" in fix and "b" not in fix.split("KeyError")[0][-20:]  # the error in words
    assert k.calls[2].messages[:-1] == k.calls[1].messages[:-1]  # the request anew, not a conversation
    assert "candidate 2 of 3 raised KeyError: 'Yes' (line 1) — asking it anew (2 tries left)" in k.log
    assert summarize(outcome).what() == "done · 2 of 2 candidates agree"
    assert outcome.requests == 3


def test_a_candidates_missing_import_costs_no_model_call() -> None:
    missing = ExecutionResult(error=ErrorInfo("NameError", "name 'np' is not defined", "", lineno=1))
    k = Kernel([py("a"), py("np.mean([76])")], [ExecutionResult(result="76"), missing, ExecutionResult(result="76.0")])
    outcome = k.run()
    assert len(k.calls) == 2 and summarize(outcome).what() == "done · 2 of 2 candidates agree"
    assert outcome.cells[0].code == "import numpy as np\nnp.mean([76])"


def test_a_candidates_inplace_change_on_a_copy_is_mended_with_no_model_call() -> None:
    warned = ("/tmp/ipykernel_1/2.py:1: ChainedAssignmentError: A value is being set on a copy of a DataFrame or "
              "Series through chained assignment using an inplace method.\n  df['a'].fillna(0, inplace=True)\n")
    k = Kernel([py("a"), py("df['a'].fillna(0, inplace=True)\ndf['a'].sum()")],
               [ExecutionResult(result="76"), ExecutionResult(output=warned, result="70"),
                ExecutionResult(result="76")])
    outcome = k.run()
    assert len(k.calls) == 2 and summarize(outcome).what() == "done · 2 of 2 candidates agree"
    assert outcome.cells[0].code == "df['a'] = df['a'].fillna(0)\ndf['a'].sum()"


def test_the_token_budget_stops_asking_for_candidates() -> None:
    first = next(agent_loop("How many said yes in survey.csv?", "", LoopSettings()))
    assert isinstance(first, CallModel)
    need = sum(estimate_usage(m.content) for m in first.messages)
    k = Kernel([py("a")], [ExecutionResult(result="76"), ExecutionResult(result="76")])
    outcome = k.run(token_budget=need + 5)  # the first call fits; after its 15 tokens the next does not
    assert len(k.calls) == 1
    assert any("not asked: the token budget" in line for line in k.log)
    assert [c.code for c in outcome.cells] == ["a"]
    assert k.log[-1] == "commit 1" and "run 2" not in k.log  # still held: committed, not run again


def test_an_endpoint_that_fails_for_the_second_candidate_keeps_the_first_without_running_it_again() -> None:
    k = Kernel([py("a"), ModelReply("", finish_reason=NO_ANSWER)], [ExecutionResult(result="76")])
    outcome = k.run(candidates=2)
    assert k.log == ["checkpoint 1", "run 1", "candidate 1 of 2: 76 — checking…", "commit 1"]
    assert [c.code for c in outcome.cells] == ["a"] and summarize(outcome).what() == "done, not confirmed"


def test_a_stop_while_the_model_writes_another_candidate_keeps_the_first_result_unchecked() -> None:
    """The first candidate stays held while the next is asked: a Stop (the driver throws Ctrl-C into
    the loop at the call) ends the check, and the result shown is kept -- committed, not run again,
    never a plain tick, and nothing more is asked; the answer in words, asked before the check, stays."""
    k = Kernel([py("a"), "It is 76.", KeyboardInterrupt()], [ExecutionResult(result="76")])
    outcome = k.run(candidates=2, answer="always")
    assert k.log == ["checkpoint 1", "run 1", "candidate 1 of 2: 76 — checking…",
                     "check stopped: candidate 1's result is kept, not checked", "commit 1"]
    assert [c.purpose for c in k.calls] == ["first", "answer", "candidate"]  # nothing asked after the Stop
    assert outcome.status == "success" and [c.code for c in outcome.cells] == ["a"]
    assert outcome.answer == "It is 76.\n\n⚠ Not sure: not checked: you stopped the check."
    assert summarize(outcome).line() == "⚠ done, not checked: you stopped the check · 30 tokens"
    assert outcome.consensus is not None and not outcome.consensus.sure


def test_a_stop_while_a_candidate_that_raised_is_asked_anew_applies_the_first_again() -> None:
    boom = ExecutionResult(error=ErrorInfo("KeyError", "'Yes'", "", lineno=1))
    k = Kernel([py("a"), py("b"), KeyboardInterrupt()], [ExecutionResult(result="76"), boom,
                                                         ExecutionResult(result="76")])
    outcome = k.run(candidates=2)
    assert k.log[k.log.index("check stopped: the result shown is applied again, not checked"):] == [
        "check stopped: the result shown is applied again, not checked", "applying candidate 1 (1 of 1)",
        "checkpoint 3", "run 3", "commit 3"]
    assert [c.code for c in outcome.cells] == ["a"]
    assert summarize(outcome).what() == "done, not checked: you stopped the check"


def test_a_stop_after_two_candidates_differ_votes_with_those_in() -> None:
    k = Kernel([py("a"), py("b"), KeyboardInterrupt()], [ExecutionResult(result="76"), ExecutionResult(result="36"),
                                                         ExecutionResult(result="76")])
    outcome = k.run(candidates=3)
    assert k.log[k.log.index("check stopped: the 2 candidates in are compared"):] == [
        "check stopped: the 2 candidates in are compared", "rollback 2", "applying candidate 1 (1 of 2)",
        "checkpoint 3", "run 3", "commit 3"]
    assert [c.code for c in outcome.cells] == ["a"]
    assert summarize(outcome).what() == "candidates disagree: 76 (1 of 2) vs 36"  # never a plain tick


def test_a_stop_while_a_candidates_code_runs_stops_the_request_with_nothing_held() -> None:
    k = Kernel([py("a"), py("b")], [ExecutionResult(result="76"), KeyboardInterrupt()])
    with pytest.raises(KeyboardInterrupt):
        k.run(candidates=2)
    assert k.log[-4:] == ["rollback 1", "checkpoint 2", "run 2", "rollback 2"]  # both undone


def test_anything_else_raised_at_the_candidates_call_rolls_the_held_one_back_first() -> None:
    k = Kernel([py("a"), RuntimeError("the run was cancelled")], [ExecutionResult(result="76")])
    with pytest.raises(RuntimeError, match="cancelled"):
        k.run(candidates=2)
    assert k.log[-2:] == ["candidate 1 of 2: 76 — checking…", "rollback 1"]


def test_an_automatic_check_does_not_run_a_slow_first_candidate_again() -> None:
    slow = ExecutionResult(result="76", seconds=12.5)
    k = Kernel([py("a")], [slow])
    outcome = k.run(candidates=2, check_within=10.0)  # 'auto': the person did not ask for the check
    assert len(k.calls) == 1 and k.log == ["checkpoint 1", "run 1", "commit 1"]
    assert summarize(outcome).what() == "done · 1 candidate (its code took 12.5 s)"
    asked = Kernel([py("a"), py("b")], [slow, ExecutionResult(result="76", seconds=12.0)])
    assert asked.run(candidates=2).consensus.agreed  # type: ignore[union-attr]  # --candidates 2: checked
    assert len(asked.calls) == 2


def test_one_candidate_and_no_run_do_not_vote() -> None:
    k = Kernel([py("a")], [ExecutionResult(result="76")])
    outcome = k.run(candidates=1)
    assert outcome.consensus is None and k.log == ["checkpoint 1", "run 1", "commit 1"]
    assert Kernel([py("a")], []).run(run=False).consensus is None


def test_the_magic_view_titles_each_candidate_by_its_result() -> None:
    view = RunView("m")
    for number, result in ((1, "76"), (2, "36")):
        view.started(CallModel((), "first" if number == 1 else "candidate"))
        view.current.text, view.current.streaming = py("n"), False  # type: ignore[union-attr]
        view.notice(Notice("attempt", "", attempt=number))
        view.current.blocks.append(("n", ExecutionResult(result=result)))  # type: ignore[union-attr]
        view.notice(Notice("candidate", f"candidate {number} of 3: {result} — "
                           + ("checking…" if number == 1 else "differs"), attempt=number))
    view.notice(Notice("candidate", "applying candidate 1 (1 of 2)", attempt=3))
    view.notice(Notice("attempt", "", attempt=3))
    view.current.blocks.append(("n", ExecutionResult(result="76")))  # type: ignore[union-attr]
    view.final = "⚠ candidates disagree: 76 (1 of 2) vs 36"
    assert view.text().splitlines() == ["⚠ candidates disagree: 76 (1 of 2) vs 36",
                                        "  ◆ candidate 1 of 3: 76", "  ◆ candidate 2 of 3: 36 — differs",
                                        "  ◆ applying candidate 1 (1 of 2)"]


def test_the_magic_view_titles_the_first_candidate_when_the_answer_in_words_came_between() -> None:
    # The answer is asked before the check (core/check.py): "checking…" comes while its section is last.
    view = RunView("m")
    view.started(CallModel((), "first"))
    view.current.text, view.current.streaming = py("n"), False  # type: ignore[union-attr]
    view.notice(Notice("attempt", "", attempt=1))
    view.current.blocks.append(("n", ExecutionResult(result="76")))  # type: ignore[union-attr]
    view.started(CallModel((), "answer"))
    view.current.text, view.current.streaming = "It is 76.", False  # type: ignore[union-attr]
    view.notice(Notice("candidate", "candidate 1 of 2: 76 — checking…", attempt=1))
    assert view.sections[0].verdict == "candidate 1 of 2: 76 — checking…" and view.sections[1].notes == []
    view.started(CallModel((), "candidate"))
    view.current.text, view.current.streaming = py("m"), False  # type: ignore[union-attr]
    view.notice(Notice("attempt", "", attempt=2))
    view.current.blocks.append(("m", ExecutionResult(result="76")))  # type: ignore[union-attr]
    view.notice(Notice("candidate", "candidate 2 of 2: 76 — agrees with 1", attempt=2))
    assert view.sections[0].verdict == "candidate 1 of 2: 76"  # no longer "checking…"


def test_the_magic_view_gives_another_choice_of_the_same_reply_a_section_of_its_own() -> None:
    class Handle:
        def update(self, bundle: dict[str, str], **kwargs: object) -> None:
            self.bundle = bundle

    reporter = RichReporter("m", lambda bundle, **kwargs: Handle())
    reporter.model_started(CallModel((), "candidate", n=2))
    reporter.model_text(py("b"))
    reporter.model_finished()
    for section, (number, result, verdict) in enumerate(((2, "36", "differs"), (3, "76", "agrees with 1"))):
        if section:  # no call: the reply's second choice
            reporter.notice(Notice("candidate-text", py("c")))
        reporter.notice(Notice("attempt", "", attempt=number))
        reporter.executing(Execute("n", number, 1, 0))
        reporter.executed(Execute("n", number, 1, 0), ExecutionResult(result=result))
        reporter.notice(Notice("candidate", f"candidate {number} of 3: {result} — {verdict}", attempt=number))
    view = reporter.view
    assert [(s.purpose, s.attempt) for s in view.sections] == [("candidate", 2), ("candidate", 3)]
    assert view.sections[1].text == py("c")
    view.final = "⚠ candidates disagree"
    assert view.text().splitlines()[1:] == ["  ◆ candidate 2 of 3: 36 — differs",
                                            "  ◆ candidate 3 of 3: 76 — agrees with 1"]


@pytest.mark.parametrize("value", [0, 10, True, "3", 2.0, "AUTO", "two"])
def test_the_panel_cannot_ask_for_a_count_out_of_range(value: Any) -> None:
    msg = {"request": "count", "path": "a.ipynb", "kernel_id": "k", "candidates": value}
    with pytest.raises(RequestRefused, match="candidates must be 'auto' or a whole number from 1 to 9"):
        AskMessage.parse(msg, ["m"])
    assert AskMessage.parse({**msg, "candidates": 3}, ["m"]).candidates == 3
    assert AskMessage.parse({**msg, "candidates": "auto"}, ["m"]).candidates == "auto"


@pytest.mark.parametrize("value", [0, 10, True, "2", None])
def test_the_panel_names_a_candidate_to_use_by_its_number(value: Any) -> None:
    msg = {"request": "count", "path": "a.ipynb", "kernel_id": "k"}
    if value is None:
        assert AskMessage.parse(msg, ["m"]).use is None
        return
    with pytest.raises(RequestRefused, match="use names a candidate by its number, from 1 to 9"):
        AskMessage.parse({**msg, "use": value}, ["m"])
    assert AskMessage.parse({**msg, "use": 2}, ["m"]).use == 2
