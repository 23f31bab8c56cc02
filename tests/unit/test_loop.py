"""The agent loop in memory: scripted model replies, a fake executor."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from jupyter_ai_ci.core import prompts
from jupyter_ai_ci.core.loop import LoopSettings, agent_loop, restart_note
from jupyter_ai_ci.core.nocode import declined
from jupyter_ai_ci.events import Attempt, CallModel, ErrorInfo, ExecutionResult, FailureNotes, Message, Notice, Outcome
from jupyter_ai_ci.model.client import OpenAIClient, ScriptedClient
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.run.drive import drive
from jupyter_ai_ci.run.report import Timings
from jupyter_ai_ci.run.summary import summarize
from jupyter_ai_ci.testing import ScriptedOpenAIServer

from .test_trust import Notices


def block(code: str) -> str:
    return f"Here you go:\n```python\n{code}\n```\n"


class FakeExecutor:
    """Runs nothing: decides each block's result with a rule, records the code."""

    def __init__(self, rule: Callable[[str], ExecutionResult]) -> None:
        self.rule = rule
        self.ran: list[str] = []

    def execute(self, code: str) -> ExecutionResult:
        self.ran.append(code)
        return self.rule(code)


def fails_on(marker: str, ename: str = "ZeroDivisionError", line: int = 1) -> Callable[[str], ExecutionResult]:
    def rule(code: str) -> ExecutionResult:
        if marker in code:
            tb = f"Traceback (most recent call last):\n  line {line}\n{ename}: boom {marker}"
            return ExecutionResult(output="partial output\n", error=ErrorInfo(ename, f"boom {marker}", tb, line))
        return ExecutionResult(output=f"ran {code}\n")
    return rule


def run(replies: list[str], rule: Callable[[str], ExecutionResult], **kw: int | bool):
    model = ScriptedClient(replies)
    executor = FakeExecutor(rule)
    outcome = drive(agent_loop("do it", "ctx", LoopSettings(**kw)), model, executor)  # type: ignore[arg-type]
    return outcome, model, executor


def test_success_first_try_runs_every_python_block_in_order() -> None:
    reply = block("a = 1") + "and\n```python\nb = 2\n```\n```bash\nrm -rf /\n```"
    outcome, model, ex = run([reply], fails_on("never"))
    assert outcome.status == "success"
    assert ex.ran == ["a = 1", "b = 2"]
    assert [c.code for c in outcome.cells] == ["a = 1", "b = 2"]
    assert len(outcome.attempts) == 1 and outcome.requests == 1


def test_fix_request_leads_with_the_error_and_carries_output_and_traceback() -> None:
    outcome, model, ex = run([block("x = 1/0  # BAD"), block("x = 1")], fails_on("BAD"))
    assert outcome.status == "success"
    assert len(outcome.attempts) == 2
    sent = model.requests[1]
    fix = sent[-1].content
    assert fix.startswith("The code you wrote raised ZeroDivisionError: boom BAD (line 1).")
    assert "partial output" in fix and "Traceback (most recent call last):" in fix
    # The code is the reply just above it, not written out again (a small model copies it back).
    assert "x = 1/0  # BAD" in sent[-2].content and "x = 1/0  # BAD" not in fix
    assert "do not send it back as it was" in fix and "another way" not in fix
    assert [c.code for c in outcome.cells] == ["x = 1"]


def test_no_output_section_when_nothing_was_printed() -> None:
    quiet = lambda code: ExecutionResult(error=ErrorInfo("KeyError", "'a'", "KeyError: 'a'", 1)) \
        if "BAD" in code else ExecutionResult()  # noqa: E731
    _, model, _ = run([block("BAD"), block("ok")], quiet)
    assert "Output printed" not in model.requests[1][-1].content


def test_retries_bound_total_attempts() -> None:
    replies = [block(f"fail_{i} = 'BAD'") for i in range(10)]
    # Distinct errors each time (the marker differs), so no early stop.
    outcome, model, ex = run(replies, lambda c: fails_on(c)(c), retries=3)
    assert outcome.status == "failed"
    assert len(outcome.attempts) == 4
    assert model.requests and len(model.requests) == 4
    assert not outcome.early_stop


def test_zero_retries_means_one_attempt() -> None:
    outcome, model, _ = run([block("BAD"), block("ok")], fails_on("BAD"), retries=0)
    assert outcome.status == "failed" and len(outcome.attempts) == 1 and len(model.requests) == 1


def test_failed_code_sent_back_is_not_run_and_the_request_is_asked_anew() -> None:
    # The same code, reformatted and with a comment: the same syntax tree, so the same code.
    again = block("# fixed\nBAD  =  1/0")
    outcome, model, ex = run([block("BAD = 1/0"), again, block("ok = 1")], fails_on("BAD"), retries=1)
    assert outcome.status == "success" and len(outcome.attempts) == 2 and not outcome.early_stop
    assert ex.ran == ["BAD = 1/0", "ok = 1"]  # the copy never ran
    assert len(model.requests) == 3
    # Asked anew from the start: the conversation that holds the failed code twice (which a small
    # model copies) is not sent; the error and its line are said in words.
    restarted = model.requests[2]
    assert [m.role for m in restarted] == ["system", "user"]
    assert restarted[1].content == (
        "ctx\n## Request\ndo it\n\nNote: an earlier attempt at this request failed with ZeroDivisionError: "
        "boom BAD, at the line `BAD = 1/0`. Write the code another way, so that it does not raise this error.")
    assert outcome.messages[1:] == (restarted[1], Message("assistant", block("ok = 1")))  # what is kept
    # That one request is sampled, so that it can come out different; the others are not.
    assert model.temperatures == [None, None, 0.7]
    _, model, _ = run([block("BAD = 1/0"), again, block("ok = 1")], fails_on("BAD"), retries=1, repeat_temperature=0)
    assert model.temperatures == [None, None, None]


def test_failed_code_sent_back_in_a_later_step_is_asked_about_in_the_conversation() -> None:
    # Step 2 builds on step 1's results: the conversation is kept and the model told plainly.
    replies = [block("a = 1"), block("BAD = 1/0"), block("BAD = 1/0"), block("ok = 1"), "Done."]
    outcome, model, ex = run(replies, fails_on("BAD"), steps=2, retries=1)
    assert outcome.status == "success" and ex.ran == ["a = 1", "BAD = 1/0", "ok = 1"]
    assert model.requests[3][-1].content.startswith(
        "That is the code that already failed with ZeroDivisionError: boom BAD (line 1)")
    assert "ran a = 1" in model.requests[3][3].content  # step 1's output is still there


def test_fixes_from_the_start_ask_the_request_anew_with_the_failure_in_words() -> None:
    outcome, model, ex = run([block("BAD = 1/0"), block("BAD = 2/0"), block("ok = 1")], fails_on("BAD"),
                             retries=2, fix_from_start=True)
    assert outcome.status == "success" and ex.ran == ["BAD = 1/0", "BAD = 2/0", "ok = 1"]
    for sent, line in ((model.requests[1], "BAD = 1/0"), (model.requests[2], "BAD = 2/0")):
        # Never the conversation with the failed code: the request, and the last failure said.
        assert [m.role for m in sent] == ["system", "user"] and "BAD" not in sent[1].content.split("Note:")[0]
        assert sent[1].content.endswith(f"failed with ZeroDivisionError: boom BAD, at the line `{line}`. Write "
                                        "the code another way, so that it does not raise this error.")
    assert model.temperatures == [None, None, None]  # sampled only when the code comes back the same


def test_fixes_in_a_later_step_stay_in_the_conversation_whatever_the_setting() -> None:
    outcome, model, _ = run([block("a = 1"), block("BAD = 1/0"), block("ok = 1"), "Done."], fails_on("BAD"),
                            steps=2, fix_from_start=True)
    assert outcome.status == "success"
    assert model.requests[2][-1].content.startswith("The code you wrote raised ZeroDivisionError")


def test_a_restart_carries_the_hints_of_the_failure() -> None:
    attempt = Attempt(1, 1, ("import pandas as pd\ndf['dept']",), (ExecutionResult(error=ErrorInfo(
        "KeyError", "'dept'", "KeyError: 'dept'", 2)),), notes=FailureNotes((), ("Did you mean 'department'?",)))
    assert restart_note(attempt).endswith("at the line `df['dept']`. Write the code another way, so that it "
                                          "does not raise this error.\nHints:\n- Did you mean 'department'?")


def test_failed_code_sent_back_again_spends_the_retries_then_stops() -> None:
    # Sent back once, asked again for free; each time after, one retry: never a run ended with
    # retries left while the model still answers (issue #37: DABench question 593 did, with 1).
    outcome, model, ex = run([block("BAD"), block("BAD"), block("BAD"), block("BAD"), block("ok")],
                             fails_on("BAD"), retries=2)
    assert outcome.status == "failed" and outcome.early_stop and outcome.retries_left == 0
    assert len(outcome.attempts) == 1 and ex.ran == ["BAD"] and len(model.requests) == 4
    assert outcome.last_error is not None and outcome.last_error.ename == "ZeroDivisionError"
    # With a retry left, the next ask can come out different (it is sampled) and is run.
    outcome, model, ex = run([block("BAD"), block("BAD"), block("BAD"), block("ok")], fails_on("BAD"), retries=5)
    assert outcome.status == "success" and ex.ran == ["BAD", "ok"] and len(model.requests) == 4
    assert model.temperatures == [None, None, 0.7, 0.7]


def test_the_same_error_from_new_code_is_retried_and_said_to_be_the_same() -> None:
    rule = fails_on("BAD")
    outcome, model, ex = run([block("BAD = 1"), block("BAD = 2"), block("ok")], rule, retries=2)
    assert outcome.status == "success" and len(outcome.attempts) == 3 and not outcome.early_stop
    # Both failures raise "boom BAD" on line 1: the second fix request says the change did not help.
    assert "another way" not in model.requests[1][-1].content
    assert "the previous change did not fix it, so try another way" in model.requests[2][-1].content


def test_reply_without_code_is_an_answer() -> None:
    outcome, _, ex = run(["The mean is 3."], fails_on("never"))
    assert outcome.status == "answered" and outcome.answer == "The mean is 3." and ex.ran == []


def test_no_run_executes_nothing() -> None:
    outcome, _, ex = run([block("a = 1")], fails_on("never"), run=False)
    assert outcome.status == "not-run" and ex.ran == [] and outcome.cells[0].code == "a = 1"


def test_later_blocks_do_not_run_after_a_failure() -> None:
    reply = block("first = 'BAD'") + block("second")
    outcome, model, ex = run([reply, block("fixed")], fails_on("BAD"))
    assert ex.ran == ["first = 'BAD'", "fixed"]
    assert "Block 1 of 2 failed" in model.requests[1][-1].content


def test_steps_feed_outputs_back_until_prose() -> None:
    outcome, model, ex = run([block("step1"), block("step2 = 42"), "All done: the answer is 42."],
                             fails_on("never"), steps=5)
    assert outcome.status == "success"
    assert [c.step for c in outcome.cells] == [1, 2]
    assert outcome.answer == "All done: the answer is 42."  # the output showed it: not flagged
    assert "ran step1" in model.requests[1][-1].content
    assert len(model.requests) == 3


def test_steps_stop_at_the_limit() -> None:
    outcome, model, _ = run([block("s1"), block("s2"), block("s3")], fails_on("never"), steps=2)
    assert len(model.requests) == 2 and [c.code for c in outcome.cells] == ["s1", "s2"]


def served(server: ScriptedOpenAIServer, replies: list[str], rule: Callable[[str], ExecutionResult],
           **kw: int) -> tuple[Outcome, FakeExecutor, list[Notice]]:
    """The loop with the real client over HTTP to the scripted server (issue #37's reproduction)."""
    server.script(*replies)
    executor, notices = FakeExecutor(rule), Notices()
    client = OpenAIClient(Endpoint("scripted", base_url=server.base_url, max_retries=0, timeout=10.0))
    outcome = drive(agent_loop("do it", "ctx", LoopSettings(**kw)), client, executor, notices)  # type: ignore[arg-type]
    return outcome, executor, notices.seen


KEY_ERROR = fails_on("BAD", "KeyError")
EXPLAINED = "The error means the column 'regoin' does not exist; the column is called 'region'."


def test_a_fix_answered_in_words_is_asked_again_for_code_within_the_retries(
        model_server: ScriptedOpenAIServer) -> None:
    outcome, ex, notices = served(model_server, [block("x = df['BAD']"), EXPLAINED, block("x = df['region']")],
                                  KEY_ERROR, retries=2)
    assert outcome.status == "success" and ex.ran == ["x = df['BAD']", "x = df['region']"]
    assert len(model_server.requests) == 3 and outcome.requests == 3 and outcome.retries_left == 0
    # Asked as a first reply to a question about data is: the same words, after the reply in words.
    assert model_server.requests[2]["messages"][-1]["content"] == prompts.NEED_CODE
    assert model_server.requests[2]["messages"][-2]["content"] == EXPLAINED
    assert any(n.kind == "again" and "answered the fix request without code — asking it for code (1 try left)"
               in n.text for n in notices)
    assert summarize(outcome).line().startswith("✓ done in 2 attempts")


class Calls(Notices):
    def __init__(self) -> None:
        super().__init__()
        self.purposes: list[str] = []

    def model_started(self, call: CallModel) -> None:
        self.purposes.append(call.purpose)


def test_a_reply_in_words_asked_again_for_code_is_not_called_a_fix() -> None:
    # Every driver labels a model call by its purpose: the re-ask is "asked again for code", where the
    # panel headed it "fix" (a fix had not been asked for: the reply before it was in words).
    calls = Calls()
    outcome = drive(agent_loop("do it", "ctx", LoopSettings(retries=2)),  # type: ignore[arg-type]
                    ScriptedClient([block("x = df['BAD']"), EXPLAINED, block("x = df['region']")]),
                    FakeExecutor(KEY_ERROR), calls)
    assert outcome.status == "success"
    assert calls.purposes == ["first", "fix", "again"]


def test_a_model_that_answers_fixes_in_words_forever_ends_when_the_retries_are_spent(
        model_server: ScriptedOpenAIServer) -> None:
    outcome, ex, _ = served(model_server, [block("x = df['BAD']"), EXPLAINED, EXPLAINED, EXPLAINED, block("ok")],
                            KEY_ERROR, retries=2)
    assert outcome.status == "failed" and ex.ran == ["x = df['BAD']"]
    assert len(model_server.requests) == 3 and outcome.retries_left == 0 and not outcome.declined
    assert outcome.answer == EXPLAINED  # the words are kept, never shown as the result
    line = summarize(outcome).line()
    assert line.startswith("✗ gave up after 1 attempt (the retries are spent; the last fix came back in words, "
                           "without code); last error: KeyError: boom BAD"), line
    assert summarize(outcome).advice("--retries") != ""  # more retries may help: it says so


def test_a_model_that_says_it_cannot_ends_the_run_with_retries_left_and_is_quoted(
        model_server: ScriptedOpenAIServer) -> None:
    cannot = "I'm sorry, but I cannot fix this without access to the file. You could check its path."
    outcome, ex, _ = served(model_server, [block("x = df['BAD']"), cannot, block("ok")], KEY_ERROR, retries=3)
    assert outcome.status == "failed" and outcome.declined and outcome.retries_left == 2
    assert len(model_server.requests) == 2 and ex.ran == ["x = df['BAD']"]
    line = summarize(outcome).line()
    assert line.startswith("✗ the model said it cannot: I'm sorry, but I cannot fix this without access to the "
                           "file. ·"), line
    assert "gave up" not in line


def test_a_fix_in_words_in_a_later_step_is_asked_again_too() -> None:
    outcome, model, ex = run([block("s1"), block("BAD"), "It failed because of the data.", block("s2")],
                             fails_on("BAD"), steps=2, retries=2)
    assert outcome.status == "success" and ex.ran == ["s1", "BAD", "s2"]
    assert model.requests[3][-1].content == prompts.NEED_CODE


def test_with_one_retry_a_fix_in_words_ends_the_run_at_once() -> None:
    outcome, model, ex = run([block("BAD"), "It is a typo.", block("ok")], fails_on("BAD"), retries=1)
    assert outcome.status == "failed" and len(model.requests) == 2 and outcome.retries_left == 0


@pytest.mark.parametrize("text, words", [
    ("I'm sorry, but I cannot fix this. It needs the file.", "I'm sorry, but I cannot fix this."),
    ("The package is missing.\nI am unable to install packages here", "I am unable to install packages here"),
    ("We can't know the units without the data dictionary.", "We can't know the units without the data dictionary."),
    ("It is not possible to convert 'Switzerland'.", "It is not possible to convert 'Switzerland'."),
    ("You cannot sum a string column; convert it with pd.to_numeric first.", ""),
    ("The error is a KeyError: the column is 'Region'.", ""),
    ("AI cannot be blamed; use df.columns.", ""),
])
def test_which_replies_say_the_model_cannot(text: str, words: str) -> None:
    assert declined(text) == words


def test_loop_yields_notices_and_model_calls_in_order() -> None:
    loop = agent_loop("req", "", LoopSettings(retries=1))
    kinds = []
    action = next(loop)
    replies = iter([block("BAD"), block("ok")])
    from jupyter_ai_ci.events import Execute, ModelReply
    with pytest.raises(StopIteration) as stop:
        while True:
            kinds.append(type(action).__name__ + (f":{action.kind}" if isinstance(action, Notice) else ""))
            if isinstance(action, CallModel):
                action = loop.send(ModelReply(next(replies)))
            elif isinstance(action, Execute):
                action = loop.send(fails_on("BAD")(action.code))
            else:  # notices; Checkpoint/Rollback/Commit answered by a driver that cannot undo
                action = loop.send(None)
    assert stop.value.value.status == "success"
    assert kinds == ["CallModel", "Notice:attempt", "Checkpoint", "Execute", "Inspect", "Rollback", "Notice:undone",
                     "Notice:retrying", "CallModel", "Notice:attempt", "Checkpoint", "Execute", "Commit"]


def test_usage_and_timings_are_summed() -> None:
    timings = Timings()
    model = ScriptedClient([block("BAD"), block("ok")])
    outcome = drive(agent_loop("r", "", LoopSettings()), model, FakeExecutor(fails_on("BAD")), timings=timings)
    assert outcome.requests == 2
    assert outcome.usage.prompt_tokens > 0 and outcome.usage.completion_tokens > 0
    assert timings.total >= timings.model + timings.execute >= 0


def test_long_traceback_keeps_head_and_tail() -> None:
    long_tb = "HEAD-LINE\n" + "x" * 50_000 + "\nTAIL-LINE ValueError"
    def rule(code: str) -> ExecutionResult:
        return ExecutionResult(error=ErrorInfo("ValueError", "v", long_tb, 1)) if "BAD" in code else ExecutionResult()

    outcome, model, _ = run([block("BAD"), block("ok")], rule, max_traceback_chars=2000)
    fix = model.requests[1][-1].content
    assert "HEAD-LINE" in fix and "TAIL-LINE ValueError" in fix and "characters cut" in fix
    assert len(fix) < 4000


def test_async_driver_runs_the_same_loop() -> None:
    import asyncio

    class AsyncFake(FakeExecutor):
        async def aexecute(self, code: str) -> ExecutionResult:
            return self.execute(code)

    model = ScriptedClient([block("BAD"), block("ok")])
    executor = AsyncFake(fails_on("BAD"))
    from jupyter_ai_ci.run.drive import adrive

    outcome = asyncio.run(adrive(agent_loop("r", "", LoopSettings()), model, executor))
    assert outcome.status == "success" and executor.ran == ["BAD", "ok"]


def test_a_fix_request_says_what_the_failed_attempts_figures_show() -> None:
    def rule(code: str) -> ExecutionResult:
        drawn = ("Matplotlib figure: 1 axes\naxes 1: lines",)
        if "BAD" in code:
            return ExecutionResult(error=ErrorInfo("KeyError", "'x'", "KeyError: 'x'", 2), figures=drawn)
        return ExecutionResult(figures=drawn)
    _, model, _ = run([block("plot; BAD"), block("plot")], rule)
    fix = model.requests[1][-1].content
    assert fix.startswith("The code you wrote raised KeyError: 'x' (line 2).")
    assert "The figures it drew show:\n```\nMatplotlib figure: 1 axes\naxes 1: lines\n```" in fix
    # Nothing drawn: no such part.
    _, model, _ = run([block("x = 1/0  # BAD"), block("x = 1")], fails_on("BAD"))
    assert "figures it drew" not in model.requests[1][-1].content
