"""The success-rate benchmark's parts, without kernels: data, tasks and checkers, schedules, figures."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench.success.charts import CHARTS
from bench.success.data import generate
from bench.success.harness import FirstResult, TaskRun, unspent
from bench.success.report import chart, success_at, summarize, table, write_json
from bench.success.schedules import expected_attempts, replies, schedule_names
from bench.success.suite import TASKS
from bench.success.tasks import Task
from jupyter_ai_ci.core.loop import LoopSettings, agent_loop
from jupyter_ai_ci.events import Notice, Outcome
from jupyter_ai_ci.model.client import ScriptedClient
from jupyter_ai_ci.run.drive import drive

from .test_loop import FakeExecutor, fails_on


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data")
    generate(path)
    return path


def test_suite_is_large_and_covers_every_category() -> None:
    assert len(TASKS) >= 30
    assert len({t.id for t in TASKS}) == len(TASKS)
    assert {t.category for t in TASKS} == {"cleaning", "groupby", "join", "dates", "stats", "plot", "import"}
    assert all(t.request().endswith("Store the result in a variable named `answer`.") for t in TASKS)


def test_data_is_deterministic(data_dir: Path, tmp_path: Path) -> None:
    written = generate(tmp_path)
    assert len(written) == 5
    for path in written:
        assert path.read_bytes() == (data_dir / path.name).read_bytes(), path.name


def perturbed(value: Any) -> Any:
    """A near miss of a right answer: what a plausible but wrong analysis returns."""
    if isinstance(value, float):
        return value * 1.05 + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        if "figure" in value:
            return {"figure": []}
        key = next(iter(value))
        return {**value, key: perturbed(value[key])}
    return None


@pytest.mark.parametrize("task", TASKS + CHARTS, ids=[t.id for t in TASKS + CHARTS])
def test_reference_passes_and_near_misses_fail(task: Task, data_dir: Path) -> None:
    expected = task.expected(data_dir)
    assert task.passes(json.loads(json.dumps(expected)), data_dir)  # survives the trip from the kernel
    assert not task.passes(perturbed(expected), data_dir)
    assert not task.passes(None, data_dir)
    assert not task.passes("<no variable named answer>", data_dir)


def test_schedules_script_exact_replies() -> None:
    task = TASKS[0]
    assert schedule_names() == ["fail-0", "fail-1", "fail-2", "fail-3", "fail-4", "fail-5", "never", "wrong"]
    fail3 = replies(task, "fail-3", retries=5)
    assert len(fail3) == 4 and task.reference in fail3[-1].text
    # Each fix is served only if the previous traceback was sent back.
    assert [r.require for r in fail3] == [None, "undefined_name_0", "undefined_name_1", "undefined_name_2"]
    assert len(replies(task, "never", retries=5)) == 6
    assert expected_attempts("fail-3", 5) == (True, 4)
    assert expected_attempts("fail-5", 2) == (False, 3)
    assert expected_attempts("never", 5) == (False, 6)
    with pytest.raises(ValueError, match="unknown schedule"):
        replies(task, "sometimes", retries=5)


def run(task: str, attempts: int, correct: bool, status: str = "success", schedule: str = "s") -> TaskRun:
    return TaskRun(task, "c", schedule, status, attempts, correct, status == "success" and not correct,
                   10, 5, 0.5, 0.25, 0.01, attempts)


def voted(task: str, correct: bool, agreement: str, seconds: float, first: float = 0.0) -> TaskRun:
    sure = agreement in ("", "agreed", "single")
    return TaskRun(task, "c", "model", "success", 3, correct, not correct and sure, 10, 5, 0.5, 0.25, 0.01, 3,
                   candidates=3 if agreement else 1, agreement=agreement, seconds=seconds, first_seconds=first)


def test_candidates_are_reported_beside_the_loop_with_precision_coverage_and_time() -> None:
    runs = [voted("a", True, "", 2.0, 2.0), voted("b", False, "", 4.0, 4.0), voted("c", False, "", 3.0),
            voted("a", True, "agreed", 5.0, 2.1), voted("b", False, "disagree", 9.0, 4.4),
            voted("c", False, "agreed", 7.0, 3.2)]
    summary = summarize(runs, 3)
    loop, k3 = summary["by_candidates"]["loop"], summary["by_candidates"]["candidates 3"]
    assert (loop["silent_wrong"], loop["agreed"], loop["median_seconds"]) == (2, 0, 3.0)
    assert (k3["silent_wrong"], k3["agreed"], k3["agreed_right"], k3["not_sure"]) == (1, 2, 1, 1)
    lines = table(summary, "by_candidates", 3).splitlines()
    # The first result's time: the loop's is its end (a record without it: its end too).
    assert (loop["median_first_seconds"], k3["median_first_seconds"]) == (3.0, 3.2)
    assert lines[2].split() == ["loop", "3", "33%", "2", "0", "(", "0)", "-", "0%", "0", "(", "0)", "3.0", "3.0"]
    assert lines[3].split() == ["candidates", "3", "3", "33%", "1", "2", "(", "1)", "50%", "67%", "1", "(", "0)",
                                "7.0", "3.2"]


def test_the_first_result_is_the_first_candidates_notice() -> None:
    first = FirstResult()
    first.notice(Notice("attempt", "attempt 1"))
    assert first.at is None
    first.notice(Notice("candidate", "candidate 1 of 3: 76 — checking…"))
    at = first.at
    first.notice(Notice("candidate", "candidate 2 of 3: 76 — agrees with 1"))
    assert at is not None and first.at == at


def test_success_at_is_cumulative_and_silent_wrong_is_counted(tmp_path: Path) -> None:
    runs = [run("a", 1, True), run("b", 3, True), run("c", 2, False), run("d", 4, False, "failed"),
            run("e", 0, False, "answered")]
    assert success_at(runs, 4) == [0.2, 0.2, 0.4, 0.4]
    summary = summarize(runs, 4)
    overall = summary["overall"]
    assert (overall["runs"], overall["success"], overall["silent_wrong"], overall["failed"],
            overall["no_code"]) == (5, 2, 1, 1, 1)
    assert overall["executions"] == 10 and overall["prompt_tokens"] == 50
    assert overall["own_ms_per_attempt"] == pytest.approx(1000 * 0.05 / 10)
    text = table(summary, "by_task", 4)
    assert text.splitlines()[0].split()[:6] == ["task", "runs", "ok@1", "ok@2", "ok@3", "ok@4"]
    assert text.splitlines()[-1].split() == ["overall", "5", "20%", "20%", "40%", "40%", "1", "1", "0", "1", "0",
                                             "75", "2.50", "5.00", "10"]
    write_json(tmp_path / "s.json", {"mode": "t"}, [], summary)
    assert json.loads((tmp_path / "s.json").read_text())["summary"]["overall"]["success_at"] == [0.2, 0.2, 0.4, 0.4]
    chart(tmp_path / "s.png", summary, 4, "test", "by_task")
    png = (tmp_path / "s.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_runs_that_fail_with_retries_left_are_counted_unless_the_model_said_it_cannot() -> None:
    def loop(*replies: str) -> Outcome:
        return drive(agent_loop("do it", "", LoopSettings(retries=3)), ScriptedClient(replies),
                     FakeExecutor(fails_on("BAD", "KeyError")))

    fenced = "```python\nBAD\n```"
    # A fix, then the failed code sent back three times: the first ask again is free, the next two
    # are the retries left, so none is unused (the loop stopped with 2 left until 29 Nov).
    sent_back = loop(fenced, fenced, fenced, fenced, fenced)
    left = Outcome(status="failed", retries_left=2)  # a run that ended with 2 unused, as counted
    cannot = loop(fenced, "I cannot fix this without the file.")
    spent = loop(fenced, "It is a typo.", "It is a typo.", "It is a typo.")
    assert [unspent(o) for o in (sent_back, left, cannot, spent)] == [0, 2, 0, 0]
    assert sent_back.status == cannot.status == spent.status == "failed" and cannot.declined
    assert sent_back.early_stop and sent_back.requests == 5
    runs = [replace(run(name, 1, False, "failed"), unspent=unspent(o), declined=o.declined)
            for name, o in (("left", left), ("cannot", cannot), ("spent", spent))]
    overall = summarize(runs, 4)["overall"]
    assert (overall["failed"], overall["unspent"], overall["declined"]) == (3, 1, 1)
    head, _, *rows = table(summarize(runs, 4), "by_task", 4).splitlines()
    column = head.split().index("unspent")
    assert {r.split()[0]: r.split()[column] for r in rows if not r.startswith("-")} == {
        "left": "1", "cannot": "0", "spent": "0", "overall": "1"}


def test_the_one_shot_way_needs_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.success_rate import main

    with pytest.raises(SystemExit) as stop:
        main(["--scripted", "--one-shot"])
    assert stop.value.code == 2 and "--one-shot needs a model" in capsys.readouterr().err


def test_the_one_shot_way_is_named_in_the_table() -> None:
    runs = [voted("a", True, "", 2.0), TaskRun("a", "c", "model", "failed", 1, False, False, 5, 5, 0.1, 0.1, 0.0, 1,
                                               candidates=0, seconds=1.0)]
    assert list(summarize(runs, 3)["by_candidates"]) == ["one-shot", "loop"]


# What a chart that runs but misses the request draws: each one is the reference with one change.
CHART_MISSES = {
    "chart_region_desc": [("ascending=False", "ascending=True"), (".sort_values(ascending=False)", "")],
    "chart_product_barh": [(".sort_values()", ".sort_values(ascending=False)")],  # the largest at the bottom
    "chart_dept_asc": [(".sort_values()", ".sort_values(ascending=False)")],
    "chart_units_month": [("ax.set_title('Units per month')\n", ""), ("'month'", "'date'")],
    "chart_age_salary": [("ax.scatter(e['age'], e['salary'])", "ax.scatter(e['salary'], e['age'])")],
    "chart_sensor_lines": [("ax.legend()\n", ""), ("for name in d.columns:", "for name in d.columns[:2]:")],
    "chart_region_product": [("ax = p.plot.bar()", "ax = p.T.plot.bar()")],
    "chart_weekday_orders": [("ax.bar(n.index", "n = n.sort_index()\nax.bar(n.index")],  # alphabetical
    "chart_segment_desc": [("ascending=False", "ascending=True"), ("ax.set_title('Revenue by segment')\n", "")],
    "chart_conversion": [("ax.bar(r.index, r.values)", "ax.barh(r.index, r.values)"),
                         ("ax.set_ylabel('conversion rate')", "ax.set_ylabel('converted')")],
}


def test_ten_chart_tasks_each_fail_a_chart_that_misses_the_request(data_dir: Path) -> None:
    from bench.success.answer import to_jsonable
    from bench.success.tasks import run_reference

    assert len(CHARTS) == 10 and {t.category for t in CHARTS} == {"chart"}
    assert set(CHART_MISSES) == {t.id for t in CHARTS}
    for task in CHARTS:
        for old, new in CHART_MISSES[task.id]:
            assert old in task.reference, (task.id, old)
            missed = to_jsonable(run_reference(task.reference.replace(old, new), data_dir))
            assert not task.passes(json.loads(json.dumps(missed)), data_dir), (task.id, old, new)
