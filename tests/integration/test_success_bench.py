"""The success-rate benchmark end to end: real kernels, a real scripted HTTP model per worker,
every schedule; the figures at N attempts must come out exact."""

from __future__ import annotations

import json
from pathlib import Path

from bench.success.schedules import expected_attempts, fenced, schedule_names
from bench.success.suite import TASKS as SUITE
from bench.success_rate import main
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

TASKS = "dedupe_count,welch_ttest,bar_revenue_region"
RETRIES = 5


def test_every_schedule_gives_exact_figures(tmp_path: Path, capsys: object) -> None:
    assert main(["--scripted", "--tasks", TASKS, "--jobs", "2", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "success.json").read_text())
    runs = record["runs"]
    schedules = schedule_names()
    assert len(runs) == 3 * len(schedules)
    for r in runs:
        succeeds, attempts = expected_attempts(r["schedule"], RETRIES)
        assert (r["correct"], r["attempts"]) == (succeeds, attempts), r
        assert r["executions"] == attempts  # one block per reply, each run once
        assert r["silent_wrong"] == (r["schedule"] == "wrong"), r
        assert r["status"] == {"never": "failed"}.get(r["schedule"], "success"), r
        assert r["prompt_tokens"] > 0 and r["model_seconds"] > 0 and r["execute_seconds"] > 0
        assert (r["unspent"], r["declined"]) == (0, False), r  # "never" fails with its retries spent
    overall = record["summary"]["overall"]
    assert (overall["unspent"], overall["declined"]) == (0, 0)
    # fail-k succeeds at attempt k+1 (k = 0..5); "never" and "wrong" never count.
    assert overall["success_at"] == [round(n / 8, 6) for n in range(1, 7)]
    assert (overall["silent_wrong"], overall["failed"], overall["errors"]) == (3, 3, 0)
    by_schedule = record["summary"]["by_schedule"]
    assert by_schedule["fail-2"]["success_at"] == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    assert by_schedule["never"]["attempts"] == 3 * 6
    png = (tmp_path / "success.png").read_bytes()
    assert png[:4] == b"\x89PNG"
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "overall" in out and "24 runs in" in out
    totals = [line.split() for line in out.splitlines() if line.startswith("overall")]
    assert totals[0][:8] == ["overall", "24", "12%", "25%", "38%", "50%", "62%", "75%"]


def test_any_openai_endpoint_as_the_model(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    """The --model path, with the scripted server standing in for a real endpoint."""
    by_id = {t.id: t for t in SUITE}
    model_server.script(
        # Right first time, and flagged (a process): the benchmark runs with policy 'auto', never refused.
        fenced("import subprocess\nsubprocess.run(['true'], check=True)\n" + by_id["dedupe_count"].reference),
        fenced("import pandas as pd\nanswer = pd.read_csv('sales.csv')['date'].iloc[0]"),  # runs, wrong
        fenced("answer = 1 / 0"), Reply(fenced(by_id["units_p90"].reference), require="ZeroDivisionError"),
    )
    assert main(["--model", "stand-in", "--tasks", "dedupe_count,busiest_weekday,units_p90", "--jobs", "1",
                 "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "success.json").read_text())
    assert [(r["task"], r["correct"], r["silent_wrong"], r["attempts"]) for r in record["runs"]] == [
        ("dedupe_count", True, False, 1), ("busiest_weekday", False, True, 1), ("units_p90", True, False, 2)]
    assert {r["model"] for r in model_server.requests} == {"stand-in"}
    assert record["meta"]["endpoint"] == f"127.0.0.1:{model_server.port}"
    overall = record["summary"]["overall"]
    assert overall["success_at"][:2] == [round(1 / 3, 6), round(2 / 3, 6)]
    assert set(record["summary"]["by_category"]) == {"cleaning", "dates", "stats"}


def test_the_one_shot_baseline_beside_the_loop_in_one_run(
        tmp_path: Path, model_server: ScriptedOpenAIServer, capsys: object) -> None:
    """--one-shot: each task also asked once, no notebook context, no retry, its code run once;
    checked as the loop's answer is, and reported beside it."""
    from bench.success.oneshot import SUITE_SYSTEM

    by_id = {t.id: t for t in SUITE}
    model_server.script(
        # dedupe_count: the loop fixes a ZeroDivisionError; the one-shot's same first code fails.
        fenced("answer = 1 / 0"), Reply(fenced(by_id["dedupe_count"].reference), require="ZeroDivisionError"),
        fenced("answer = 1 / 0"),
        # units_p90: the loop is right; the one-shot runs and is wrong (shown done: silently wrong).
        fenced(by_id["units_p90"].reference), fenced("answer = 0"),
    )
    assert main(["--model", "stand-in", "--tasks", "dedupe_count,units_p90", "--retries", "1", "--one-shot",
                 "--jobs", "1", "--out", str(tmp_path)]) == 0
    assert model_server.misses == [] and model_server.replies == []
    record = json.loads((tmp_path / "success.json").read_text())
    assert [(r["task"], r["candidates"], r["status"], r["correct"], r["silent_wrong"], r["attempts"])
            for r in record["runs"]] == [
        ("dedupe_count", 1, "success", True, False, 2), ("dedupe_count", 0, "failed", False, False, 1),
        ("units_p90", 1, "success", True, False, 1), ("units_p90", 0, "success", False, True, 1)]
    assert all(r["execute_seconds"] > 0 for r in record["runs"] if r["candidates"] == 0)  # its code ran
    ways = record["summary"]["by_candidates"]
    assert (ways["loop"]["success"], ways["one-shot"]["success"], ways["one-shot"]["silent_wrong"]) == (2, 0, 1)
    # The baseline's request: a minimal system prompt and the task's words alone, no notebook context.
    asked = [r["messages"] for r in model_server.requests if r["messages"][0]["content"] == SUITE_SYSTEM]
    assert len(asked) == 2 and all(len(m) == 2 and m[1]["content"] == by_id[t].request()
                                   for m, t in zip(asked, ("dedupe_count", "units_p90"), strict=True))
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert [line.split()[0] for line in out.splitlines() if line.startswith(("one-shot", "loop"))] == [
        "one-shot", "loop"]


def test_the_chart_tasks_run_with_the_scripted_model(tmp_path: Path) -> None:
    """--suite charts: the suite's plot tasks and the ten chart tasks; each reference passes its
    checker in a real kernel, and no reference is taken for a chart that contradicts its request."""
    assert main(["--scripted", "--suite", "charts", "--schedules", "fail-0", "--jobs", "2",
                 "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "success.json").read_text())
    runs = record["runs"]
    assert len(runs) == 13 and {r["category"] for r in runs} == {"plot", "chart"}
    assert [r["task"] for r in runs if not (r["correct"] and r["attempts"] == 1)] == []
    assert record["meta"]["described"] is True


def test_a_chart_drawn_in_the_wrong_order_with_descriptions_and_without(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    """What --no-descriptions measures: the same wrong chart is fixed when the model reads it, and
    shown done (silently wrong) when it does not."""
    from bench.success.charts import CHARTS

    task = next(t for t in CHARTS if t.id == "chart_region_desc")
    wrong = fenced(task.reference.replace("ascending=False", "ascending=True"))
    sentence = "the bars ascend from left to right, but the request asked for largest first"
    model_server.script(wrong, Reply(fenced(task.reference), require=sentence))
    args = ["--model", "stand-in", "--suite", "charts", "--tasks", task.id, "--jobs", "1"]
    assert main([*args, "--out", str(tmp_path / "on")]) == 0
    assert model_server.misses == []
    model_server.script(wrong)
    assert main([*args, "--no-descriptions", "--out", str(tmp_path / "off")]) == 0
    on, off = (json.loads((tmp_path / name / "success.json").read_text()) for name in ("on", "off"))
    assert [(r["correct"], r["attempts"]) for r in on["runs"]] == [(True, 2)]
    assert [(r["correct"], r["silent_wrong"], r["attempts"]) for r in off["runs"]] == [(False, True, 1)]
    assert off["meta"]["described"] is False


def test_the_follow_up_tasks_run_with_the_scripted_model(tmp_path: Path) -> None:
    """--suite followups: each task's earlier requests through the loop in the same session, then
    its last request; every reference passes its checker in a real kernel."""
    assert main(["--scripted", "--suite", "followups", "--schedules", "fail-0", "--jobs", "2",
                 "--out", str(tmp_path)]) == 0
    runs = json.loads((tmp_path / "success.json").read_text())["runs"]
    assert len(runs) == 10 and {r["category"] for r in runs} == {"follow-up"}
    assert [r["task"] for r in runs if not (r["correct"] and r["attempts"] == 1)] == []


def test_a_follow_up_is_asked_both_ways_in_one_run(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    """A real model (the scripted server stands in): the last request as a follow-up, after the
    earlier one as it was sent plus what changed, and as after New chat, with the whole context."""
    from bench.success.followups import FOLLOWUPS, scripted

    task = next(t for t in FOLLOWUPS if t.id == "fu_top_product")
    (earlier,) = scripted(task)
    model_server.script(earlier, fenced(task.reference), earlier, fenced(task.reference))
    assert main(["--model", "stand-in", "--suite", "followups", "--tasks", task.id, "--jobs", "1",
                 "--out", str(tmp_path)]) == 0
    assert model_server.misses == [] and len(model_server.requests) == 4
    record = json.loads((tmp_path / "success.json").read_text())
    assert [(r["schedule"], r["correct"]) for r in record["runs"]] == [("follow-up", True), ("fresh", True)]
    first, follow_up, _, fresh = (r["messages"] for r in model_server.requests)
    assert follow_up[:len(first)] == first and len(follow_up) == len(first) + 2  # + its reply, + what changed
    assert "what changed since the last request" in follow_up[-1]["content"]
    assert len(fresh) == 2 and "sales.csv" in fresh[-1]["content"]  # system + the whole context
    assert task.request() in follow_up[-1]["content"] and task.request() in fresh[-1]["content"]
    assert set(record["summary"]["by_schedule"]) == {"follow-up", "fresh"}


def test_a_cold_bench_empties_the_models_cache_before_each_run(tmp_path: Path,
                                                                model_server: ScriptedOpenAIServer) -> None:
    """BenchConfig.cold (the local model's): one short unrelated request before a run, so the way
    asked second does not read the first way's prompt from the cache (a temperature-0 reply
    differs when the whole prompt is cached: bench/bench_cache_determinism.py)."""
    import asyncio

    from bench.success.harness import BenchConfig, Worker
    from jupyter_ai_ci.model.client import OpenAIClient
    from jupyter_ai_ci.model.endpoint import Endpoint

    endpoint = Endpoint(model="stand-in", base_url=model_server.base_url, max_retries=0)
    for cold, sent in ((False, 0), (True, 1)):
        model_server.script("Ready.")
        worker = Worker(BenchConfig(data_dir=tmp_path, endpoint=endpoint, cold=cold))
        worker.model = (endpoint, OpenAIClient(endpoint))
        asyncio.run(worker.chill())
        assert len(model_server.requests) == sent, cold
    assert [m["content"] for m in model_server.requests[0]["messages"]] == ["Answer in one word.", "Ready?"]
