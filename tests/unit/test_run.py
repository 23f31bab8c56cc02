"""The shared run, in memory: a scripted model, a namespace as the kernel, no I/O but the replay file."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.context.build import Context
from jupyter_ai_ci.context.snapshot import Snapshot
from jupyter_ai_ci.errors import NoEndpoint, UsageProblem
from jupyter_ai_ci.events import FailureNotes, ErrorInfo, ExecutionResult, Outcome, TransactionReport
from jupyter_ai_ci.model.client import ScriptedClient
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.notebook.replay import Record, ReplayStore, replay_key
from jupyter_ai_ci.run.drive import drive
from jupyter_ai_ci.run.report import SilentReporter, Timings
from jupyter_ai_ci.run.flow import run_sync
from jupyter_ai_ci.run.request import Options, Run
from jupyter_ai_ci.run.session import Session

SECRET = "Zk8qW2nR5tY7uI1oP3aS6dF9gH4jK0lX"


class NamespaceExecutor:
    """Runs code with exec in a dict: enough for the run's bookkeeping."""

    def __init__(self) -> None:
        self.ns: dict[str, object] = {}

    def execute(self, code: str) -> ExecutionResult:
        try:
            exec(code, self.ns)  # noqa: S102 - scripted test code
        except Exception as exc:  # noqa: BLE001
            return ExecutionResult(error=ErrorInfo(type(exc).__name__, str(exc), f"{type(exc).__name__}: {exc}"))
        return ExecutionResult()


def session(*replies: str, **settings: object) -> tuple[Session, ScriptedClient]:
    client = ScriptedClient(replies)
    return Session(AICISettings(**settings), (Endpoint("scripted", base_url="http://x/v1"), client)), client


def snapshot(run: Run | None = None, named: tuple[str, ...] = ("x: int = 1",)) -> Snapshot:
    """What the kernel would answer: here, the run's conversation fitted whole."""
    history = run.query().conversation if run is not None else ()
    return Snapshot(Context("ctx", history, 1, 3000, "estimate"), named, (SECRET,))


def ask(s: Session, request: str, folder: Path | None, options: Options | None = None,
        named: tuple[str, ...] = ("x: int = 1",)) -> Run:
    run = Run(s, request, options or Options(), replay_dir=folder, source="test")
    loop, model = run.start(snapshot(run, named))
    run.finish(drive(loop, model, NamespaceExecutor()))
    return run


def test_a_second_run_replays_without_the_model_and_nothing_secret_is_stored(tmp_path: Path) -> None:
    s, client = session("```python\ny = 2\n```", "```python\ny = 3\n```")
    first = ask(s, f"set y (token {SECRET})", tmp_path)
    assert len(client.requests) == 1 and SECRET not in json.dumps([m.content for m in client.requests[0]])
    [stored] = [p.read_text() for p in (tmp_path / ".jupyter-ai-ci-replay").glob("*.json")]
    assert SECRET not in stored and "set y (token ***)" in stored
    again = ask(s, f"set y (token {SECRET})", tmp_path)
    assert len(client.requests) == 1  # answered from the record
    assert again.key == first.key and s.usage.entries[-1].replayed
    fresh = ask(s, f"set y (token {SECRET})", tmp_path, Options(regenerate=True))
    assert fresh.record is None and len(client.requests) == 2


def test_a_request_asked_again_at_once_replays_in_a_long_chat(tmp_path: Path) -> None:
    # Found by hand in the panel: from the fourth request of a chat on, asking the same thing
    # again called the model (its first turn had pushed the oldest out of the conversation).
    s, client = session(*(f"```python\nv{i} = {i}\n```" for i in range(4)))
    for request in ("one", "two", "three", "the smallest units"):
        ask(s, request, tmp_path)
    assert len(client.requests) == 4
    ask(s, "the smallest units", tmp_path)
    assert len(client.requests) == 4 and s.usage.entries[-1].replayed
    # A record keyed the old way (on all three earlier requests) still replays.
    store = ReplayStore(tmp_path / ".jupyter-ai-ci-replay")
    store.clear()
    old = replay_key("the smallest units", {"steps": 1, "run": True}, "scripted", ("x: int = 1",),
                     ["one", "two", "three"])
    store.put(Record(old, "the smallest units", "scripted", "x", ("```python\nv9 = 9\n```",), 1, 1, 1, 1,
                     "2026-11-20T00:00:00Z"))
    fresh, client = session()
    for request in ("one", "two", "three"):
        fresh.remember("", request, Outcome("success"))
    ask(fresh, "the smallest units", tmp_path)
    assert client.requests == [] and fresh.usage.entries[-1].replayed


def test_the_same_request_in_another_notebook_of_the_folder_asks_the_model(tmp_path: Path) -> None:
    # Found by hand: `jupyter ai-ci run c.ipynb d.ipynb --prompt "double it"` replayed c's code into d.
    s, client = session("```python\nc = 1\n```", "```python\nd = 2\n```", "```python\nm = 3\n```")
    keys = []
    for thread in ("c.ipynb", "sub/d.ipynb", "c.ipynb", "sub/d.ipynb", ""):
        run = Run(s, "double it", replay_dir=tmp_path, thread=thread, source="test")
        loop, model = run.start(snapshot(run))
        run.finish(drive(loop, model, NamespaceExecutor()))
        keys.append(run.key)
    # One model request each; asked again, each notebook replays its own code.
    assert [e.replayed for e in s.usage.entries] == [False, False, True, True, False]
    assert len(client.requests) == 3 and len(set(keys)) == 3
    # The magic (no thread) knows no notebook for sure: its key is the folder's, as before.
    assert keys[-1] == replay_key("double it", {"steps": 1, "run": True}, "scripted", ("x: int = 1",), [])


def test_a_request_run_again_at_once_is_one_turn_of_the_conversation() -> None:
    s, _ = session()
    for request in ("load", "plot", "plot "):
        s.remember("", request, Outcome("answered", answer=f"did {request.strip()}"))
    assert [m.content for m in s.conversation()] == ["load", "did load", "plot ", "did plot"]


def test_usage_and_the_conversation_are_the_sessions(tmp_path: Path) -> None:
    s, client = session("```python\ny = 1 / 0\n```", "```python\ny = 2\n```", "All good.", "Fresh.")
    ask(s, "set y", None)
    assert s.usage.total()[0] == 2 and [m.role for m in s.conversation()] == ["user", "assistant"]
    ask(s, "say hello?", None, named=())  # answered in words (a question about data would need code)
    assert client.requests[-1][1].content == "set y" and s.usage.total()[0] == 3
    ask(s, "again", None, Options(new=True), named=())  # --new / New chat: no earlier exchange sent
    assert [m.role for m in client.requests[-1]] == ["system", "user"]


def test_preview_shows_the_masked_request_and_sends_nothing(tmp_path: Path) -> None:
    s, client = session()
    messages, stopped = Run(s, f"use {SECRET}", replay_dir=tmp_path).preview(snapshot())
    assert stopped == "" and SECRET not in messages[-1].content and "use ***" in messages[-1].content
    assert client.requests == []


def test_a_replay_whose_budget_is_spent_stops_cleanly(tmp_path: Path) -> None:
    s, client = session("```python\ny = 2\n```")
    ask(s, "set y", tmp_path)
    tight = Session(AICISettings(max_tokens_per_request=5), s.fixed_model)
    run = Run(tight, "set y", replay_dir=tmp_path)
    loop, model = run.start(snapshot())
    assert run.record is not None
    assert drive(loop, model, NamespaceExecutor()).status == "over-budget"


def test_bad_requests_and_no_endpoint_say_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageProblem, match="the request is empty"):
        Run(Session(AICISettings()), "   ")
    with pytest.raises(UsageProblem, match=r"^the request is 2\.1 kB; the limit is 2 kB — put large data in a file"):
        Run(Session(AICISettings(max_request_kb=2)), "é" * 1050)  # bytes, not characters
    Run(Session(AICISettings(max_request_kb=2)), "x" * 2000)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(NoEndpoint, match="OPENAI_API_KEY"):
        Run(Session(AICISettings(local_fallback=False)), "hi").check()


class SlowKernel:
    """The magic's kernel as run_sync sees it, whose secrets take a known time to read."""

    PAUSE = 0.02

    def snapshot(self, query: object) -> Snapshot:
        return snapshot()

    def secrets(self) -> tuple[str, ...]:
        time.sleep(self.PAUSE)
        return (SECRET,)

    def inspect(self, action: object) -> FailureNotes:
        return FailureNotes()

    def names(self) -> tuple[tuple[str, str], ...]:
        return ()

    def import_source(self, module: str) -> str:
        return ""


class ShowingReporter(SilentReporter):
    def model_text(self, text: str) -> None:
        time.sleep(SlowKernel.PAUSE)


def test_own_time_counts_starting_masking_showing_and_recording() -> None:
    # Reading the secrets before the model call, masking, and showing the streamed text are
    # ours: the model's time is only its own call.  (The start takes the snapshot's secrets,
    # found a moment before with nothing run since: it reads them no more.)
    s, _ = session("```python\ny = 2\n```")
    run = Run(s, "set y", Options(), source="test")
    timings = Timings()
    result = run_sync(run, SlowKernel(), NamespaceExecutor(), ShowingReporter(), None, timings)  # type: ignore[arg-type]
    assert result.outcome.status == "success" and result.timings is timings
    assert timings.model < SlowKernel.PAUSE
    assert timings.own >= 2 * SlowKernel.PAUSE


def test_a_token_typed_into_the_request_is_stored_masked_in_the_record_and_the_cell_metadata(tmp_path: Path) -> None:
    typed = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # shaped like a GitHub token, known to nothing
    s, client = session("```python\ny = 2\n```")
    run = Run(s, f"set y (my token is {typed})", replay_dir=tmp_path, source="test")
    loop, model = run.start(snapshot(run))
    result = run.finish(drive(loop, model, NamespaceExecutor()))
    assert typed not in json.dumps([m.content for m in client.requests[0]])  # not sent …
    assert typed not in json.dumps(result.provenance) and "my token is" in result.provenance["request"]  # … nor kept
    assert [typed in p.read_text() for p in (tmp_path / ".jupyter-ai-ci-replay").glob("*.json")] == [False]


def test_a_kernel_whose_key_the_server_kept_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUPYTER_AI_CI_KEY_KEPT", "1")
    # Not the tiny local model in its place, even with [local] installed: the user has a key.
    with pytest.raises(NoEndpoint, match="kept OPENAI_API_KEY out of this kernel"):
        Run(Session(AICISettings()), "hi").check()


@pytest.mark.parametrize(("setting", "local", "expected"), [
    ("auto", False, False), ("auto", True, True), ("always", False, True), ("never", True, False)])
def test_fixes_are_asked_anew_for_the_local_model_unless_told(setting: str, local: bool, expected: bool) -> None:
    client = ScriptedClient([])
    if local:
        client.runs_locally = True  # type: ignore[attr-defined]  # as the [local] extra's client says
    s = Session(AICISettings(fix_from_start=setting), (Endpoint("scripted", base_url="http://x/v1"), client))
    assert Run(s, "do it").settings.fix_from_start is expected
    from jupyter_ai_ci.model.local import LocalClient

    assert LocalClient.runs_locally is True  # what "auto" reads on the [local] extra's client


@pytest.mark.parametrize(("setting", "chosen", "local", "asked", "expected"), [
    ("auto", None, True, "How many rows does sales.csv have?", 2),  # data on the local model: checked
    ("auto", None, True, "Explain what overfitting means", 1),  # words are its answer: nothing to compare
    ("auto", None, False, "How many rows does sales.csv have?", 1),  # an endpoint: a second request
    ("auto", 3, True, "How many rows does sales.csv have?", 3),  # the request's own choice wins
    ("auto", 1, True, "How many rows does sales.csv have?", 1),
    (2, None, False, "Explain what overfitting means", 2),  # a count is a count, wherever
    (1, "auto", True, "Print the mean of x", 2),  # --candidates auto on one request
    ("auto", None, True, "Say hello", 1),  # nothing about data: no number to compare
])
def test_two_candidates_check_a_question_about_data_on_the_local_model_by_default(
        setting: object, chosen: object, local: bool, asked: str, expected: int) -> None:
    assert AICISettings().candidates == "auto"
    s = Session(AICISettings(candidates=setting), (Endpoint("scripted", base_url="http://x/v1"), _client(local)))
    run = Run(s, asked, Options(candidates=chosen))  # type: ignore[arg-type]
    run.start(snapshot(run, named=()))
    assert run.settings.candidates == expected
    # The check 'auto' adds skips a first candidate whose code ran long; one the person chose does not.
    assert run.settings.check_within == (10.0 if (chosen or setting) == "auto" else 0.0)


def _client(local: bool) -> ScriptedClient:
    client = ScriptedClient([])
    if local:
        client.runs_locally = True  # type: ignore[attr-defined]  # as the [local] extra's client says
    return client


@pytest.mark.parametrize("options", [Options(run=False), Options(candidates=2, run=False)])
def test_auto_is_one_candidate_where_nothing_runs(options: Options) -> None:
    s = Session(AICISettings(), (Endpoint("scripted", base_url="http://x/v1"), _client(True)))
    run = Run(s, "How many rows does sales.csv have?", options)
    run.start(snapshot(run))
    assert run.settings.needs_code is False and run.settings.candidates == (2 if options.candidates == 2 else 1)


def test_auto_under_policy_ask_and_a_fix_of_a_cell_are_one_candidate() -> None:
    from jupyter_ai_ci.run import fixcell

    asks = Session(AICISettings(policy="ask"), (Endpoint("scripted", base_url="http://x/v1"), _client(True)))
    run = Run(asks, "How many rows does sales.csv have?")
    run.start(snapshot(run))
    assert run.settings.candidates == 1  # every candidate would need the person's approval
    s = Session(AICISettings(), (Endpoint("scripted", base_url="http://x/v1"), _client(True)))
    cell = fixcell.FailedCell("total = df['Revenue'].sum()", "KeyError: 'Revenue'", "KeyError: 'Revenue'", 4)
    fix = fixcell.make_run(s, cell, "fix")
    fix.start(snapshot(fix))
    assert fix.settings.needs_code and fix.settings.candidates == 1  # tried, then offered to accept or reject


def test_the_default_check_on_the_local_model_asks_the_same_request_again_and_shows_the_vote() -> None:
    class Valued(NamespaceExecutor):  # the value of n is each attempt's result; undo is a no-op here
        def execute(self, code: str) -> ExecutionResult:
            ran = super().execute(code)
            return ran if ran.error else ExecutionResult(result=str(self.ns.get("n")))

        def checkpoint(self, code: str) -> TransactionReport:
            return TransactionReport()

        rollback = commit = lambda self: TransactionReport()  # noqa: E731

    client = ScriptedClient(["```python\nn = 76\n```", "```python\nn = 38 * 2\n```"])
    client.runs_locally = True  # type: ignore[attr-defined]
    s = Session(AICISettings(answer="never"), (Endpoint("scripted", base_url="http://x/v1"), client))
    run = Run(s, "How many answers in survey say yes?", source="test")
    loop, model = run.start(snapshot(run))
    outcome = drive(loop, model, Valued())
    assert len(client.requests) == 2 and client.requests[1] == client.requests[0]  # the prefix llama.cpp keeps
    assert outcome.consensus is not None and outcome.consensus.asked == 2 and outcome.consensus.agreed


def test_a_store_that_cannot_be_written_costs_one_line_in_every_driver_and_not_the_run(
        readonly_folder: Path) -> None:
    # The run says it through ``say``, which every driver hands it: the magic prints it, the panel
    # shows it as a notice, the command line reports it (drivers/magic.py, server/run.py, headless.py).
    s, client = session("```python\ny = 2\n```", "```python\ny = 2\n```")
    for attempt in (1, 2):
        said: list[str] = []
        run = Run(s, "set y", replay_dir=readonly_folder, source="test", say=said.append)
        loop, model = run.start(snapshot(run))
        executor = NamespaceExecutor()
        result = run.finish(drive(loop, model, executor))
        assert result.outcome.status == "success" and executor.ns["y"] == 2 and len(client.requests) == attempt
        [line] = said
        assert line.startswith("· this request's replay record was not kept: cannot write in ")
        assert line.endswith("; the run itself is not affected\n")


def test_the_cells_metadata_holds_the_request_masked_before_the_run_starts() -> None:
    # Review #30, finding 2: the panel writes it into each cell it inserts, before the run ends.
    typed = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    s, _ = session("```python\ny = 2\n```")
    run = Run(s, f"set y with {typed} and {SECRET}", source="sidebar")
    held = run.interim
    assert held["request"] == f"set y with *** and {SECRET}" and held["source"] == "sidebar"
    run.start(snapshot(run))  # the kernel's secrets: masked in place, in the dict a driver holds
    assert held["request"] == "set y with *** and ***"


def test_a_secret_the_code_loads_is_masked_after_the_rollback_took_it_away() -> None:
    # Review #30, finding 4: the failed attempt printed it and was rolled back before the fix request.
    loaded = "vault-horse-battery-staple-42"
    s, client = session(f"```python\napi_secret = {loaded!r}\nprint(api_secret)\n1 / 0\n```",
                        "```python\ny = 2\n```")
    executor = NamespaceExecutor()
    run = Run(s, "set y", source="test")
    loop, model = run.start(snapshot(run))

    def watch() -> None:  # as the flow does: the kernel's secrets after each step
        from jupyter_ai_ci.context.privacy import secret_values
        run.keep(secret_values({k: v for k, v in executor.ns.items() if k != "__builtins__"}, {}))

    class Forgetting(NamespaceExecutor):
        def execute(self, code: str) -> ExecutionResult:
            result = executor.execute(code)
            output = loaded if "print(api_secret)" in code else ""
            return ExecutionResult(output=output, error=result.error)

        def checkpoint(self, code: str) -> TransactionReport:
            return TransactionReport()

        def rollback(self) -> TransactionReport:
            executor.ns.pop("api_secret", None)
            return TransactionReport(dropped=("api_secret",))

    assert drive(loop, model, Forgetting(), watch=watch).status == "success"
    assert "api_secret" not in executor.ns  # rolled back ...
    assert loaded not in json.dumps([m.content for m in client.requests[1]])  # ... and still masked


@pytest.mark.parametrize("run_code, status, calls", [(True, "failed", 3), (False, "answered", 1)])
def test_a_question_about_a_variable_needs_code_only_when_code_may_run(run_code: bool, status: str,
                                                                       calls: int) -> None:
    # x is in the kernel: "what is the total of x?" is about data; with nothing to run (--no-run, an
    # explanation of a failed cell) an answer in words is the answer.
    s, client = session("It is 1 because you set it.", "Still 1.", "1.")
    run = Run(s, "what is the total of x?", Options(run=run_code), source="test")
    loop, model = run.start(snapshot(run))
    outcome = drive(loop, model, NamespaceExecutor())
    assert outcome.status == status and len(client.requests) == calls
