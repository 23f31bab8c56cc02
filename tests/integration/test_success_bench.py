"""The success-rate benchmark end to end: real kernels, a real scripted HTTP model per worker,
every schedule; the figures at N attempts must come out exact."""

from __future__ import annotations

import json
from pathlib import Path

from bench.success.schedules import expected_attempts, schedule_names
from bench.success_rate import main

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
    overall = record["summary"]["overall"]
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
