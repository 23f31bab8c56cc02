from __future__ import annotations

from pathlib import Path

from jupyter_ai_ci.core.loop import LoopSettings, agent_loop
from jupyter_ai_ci.events import ExecutionResult, Message
from jupyter_ai_ci.model.client import ScriptedClient
from jupyter_ai_ci.notebook.replay import (
    Record,
    ReplayStore,
    earlier_requests,
    record_from_outcome,
    replay_key,
    replaying,
)
from jupyter_ai_ci.run.drive import drive

from .test_loop import FakeExecutor, block, fails_on


def first_run(replies: list[str], settings: LoopSettings = LoopSettings(), marker: str = "BAD"):  # noqa: B008
    outcome = drive(agent_loop("req", "", settings), ScriptedClient(replies), FakeExecutor(fails_on(marker)))
    return record_from_outcome("k", "req", outcome, "gpt-x", "api.example.org"), outcome


def test_replay_serves_recorded_code_without_the_model() -> None:
    record, first = first_run([block("a = BAD"), block("a = 1")])
    assert record.replies == ("```python\na = 1\n```",) and record.attempts == 2 and record.requests == 2
    model = ScriptedClient([])
    executor = FakeExecutor(fails_on("BAD"))
    again = drive(replaying(agent_loop("req", "", LoopSettings()), record), model, executor)
    assert again.status == "success" and again.requests == 0 and model.requests == []
    assert executor.ran == ["a = 1"]
    assert [c.code for c in again.cells] == [c.code for c in first.cells]


def test_replayed_code_that_fails_enters_the_retry_loop() -> None:
    record, _ = first_run([block("a = 1  # now BAD")], marker="no failure the first time")
    model = ScriptedClient([block("a = 2")])
    again = drive(replaying(agent_loop("req", "", LoopSettings()), record), model, FakeExecutor(fails_on("BAD")))
    assert again.status == "success" and again.requests == 1
    # The model sees the replayed code as its own reply, and the fix request after it.
    fix = model.requests[0]
    assert fix[-2].role == "assistant" and "a = 1  # now BAD" in fix[-2].content
    assert fix[-1].content.startswith("The code you wrote raised ZeroDivisionError")
    assert [c.code for c in again.cells] == ["a = 2"]


def test_multi_step_replay_includes_the_closing_prose() -> None:
    record, _ = first_run([block("s1"), block("s2"), "Done."], LoopSettings(steps=3))
    assert record.replies == ("```python\ns1\n```", "```python\ns2\n```", "Done.")
    model = ScriptedClient([])
    again = drive(replaying(agent_loop("req", "", LoopSettings(steps=3)), record), model,
                  FakeExecutor(lambda c: ExecutionResult()))
    assert again.answer == "Done." and model.requests == []


def test_key_depends_on_what_decides_the_code() -> None:
    base = replay_key("plot df", {"steps": 1}, "m", ["df: DataFrame [a:int64]"], [])
    assert base == replay_key("plot df ", {"steps": 1}, "m", ["df: DataFrame [a:int64]"], [])
    assert base != replay_key("plot df by month", {"steps": 1}, "m", ["df: DataFrame [a:int64]"], [])
    assert base != replay_key("plot df", {"steps": 2}, "m", ["df: DataFrame [a:int64]"], [])
    assert base != replay_key("plot df", {"steps": 1}, "other", ["df: DataFrame [a:int64]"], [])
    assert base != replay_key("plot df", {"steps": 1}, "m", ["df: DataFrame [a:float64]"], [])


def test_a_rerun_in_the_same_kernel_sees_the_conversation_it_was_first_asked_in() -> None:
    convo = [Message("user", "load"), Message("assistant", "x"), Message("user", "plot"), Message("assistant", "y")]
    assert earlier_requests("plot", convo) == ["load"]
    assert earlier_requests("new one", convo) == ["load", "plot"]
    # Run a third time: the first two runs are in the conversation, and it is still the first's.
    again = [*convo, Message("user", "plot "), Message("assistant", "y")]
    assert earlier_requests("plot", again) == ["load"]


def test_a_request_asked_again_at_once_in_a_full_conversation_has_the_same_key() -> None:
    def convo(*asked: str) -> list[Message]:
        return [m for a in asked for m in (Message("user", a), Message("assistant", "ok"))]

    first = earlier_requests("smallest", convo("one", "two", "three"), keep=2)  # three turns kept
    again = earlier_requests("smallest", convo("two", "three", "smallest"), keep=2)
    assert first == again == ["two", "three"]
    assert earlier_requests("smallest", convo("one", "two", "three")) == ["one", "two", "three"]


def test_store_roundtrip_clear_and_corrupt_file(tmp_path: Path) -> None:
    store = ReplayStore(tmp_path / "r.json")
    record, _ = first_run([block("a = 1")])
    store.put(record)
    assert store.get("k") == record
    assert store.all() == [record]
    (tmp_path / "r" / "k.json").write_text("{not json")
    assert store.get("k") is None  # a damaged record costs a regeneration, never an error …
    assert (tmp_path / "r" / "k.json.damaged").read_text() == "{not json"  # … and is kept aside
    assert store.notes == ["the replay record k.json is damaged: kept as k.json.damaged, and this request "
                           "asks the model again"]
    store.put(record)
    assert store.clear() == 1 and store.get("k") is None


def test_a_record_says_how_its_request_ended_steps_and_answer() -> None:
    two_steps = Record("k", "r", "m", "h", ("```python\na = 1\n```\n\n```python\nb = 2\n```", "```python\nc = 3\n```",
                                            "The total is 6."), 1, 1, 1, 3, "2026-11-26T00:00:00Z")
    outcome = two_steps.as_outcome()
    assert [(c.code, c.step) for c in outcome.cells] == [("a = 1", 1), ("b = 2", 1), ("c = 3", 2)]
    assert outcome.answer == "The total is 6." and outcome.status == "success"
    prose_only = Record("k", "r", "m", "h", ("Nothing to run: 42.",), 1, 1, 1, 1, "2026-11-26T00:00:00Z")
    assert prose_only.as_outcome().answer == "Nothing to run: 42." and not prose_only.as_outcome().cells
    code_only = Record("k", "r", "m", "h", ("```python\na = 1\n```",), 1, 1, 1, 1, "2026-11-26T00:00:00Z")
    assert code_only.as_outcome().answer == ""
    # An answer quoting an output in an untagged fence (which parses as Python) is no step.
    quoted = Record("k", "r", "m", "h", ("```python\nprint(155.0)\n```", "The total is\n```\n155.0\n```"),
                    1, 1, 1, 2, "2026-11-26T00:00:00Z")
    assert [c.code for c in quoted.as_outcome().cells] == ["print(155.0)"]
    assert quoted.as_outcome().answer.startswith("The total is")
