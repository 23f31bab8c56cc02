"""`success_rate.py --suite dabench PATH` end to end: a tiny DABench-format folder the test writes
(made-up questions and a CSV; never the real data), a real kernel, the scripted HTTP model standing
in for the endpoint, the loop and the one-shot baseline in one run; the report's figures exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.success.dabench_run import ONE_SHOT_SYSTEM
from bench.success.schedules import fenced
from bench.success_rate import main
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

QUESTIONS = [
    {"id": 1, "question": "What is the mean score?", "constraints": "Round to two decimals.",
     "format": "@mean_score[mean] where mean is a float.", "file_name": "scores.csv", "level": "easy"},
    {"id": 2, "question": "The highest score in each group.", "constraints": "Groups x and y.",
     "format": "@max_x[value] @max_y[value]", "file_name": "scores.csv", "level": "medium"},
    {"id": 3, "question": "How many rows does the file have?", "constraints": "Count every row.",
     "format": "@rows[count]", "file_name": "scores.csv", "level": "easy"},
]
LABELS = [{"id": 1, "common_answers": [["mean_score", "3.00"]]},
          {"id": 2, "common_answers": [["max_x", "2"], ["max_y", "6"]]},
          {"id": 3, "common_answers": [["rows", "4"]]}]
READ = "import pandas as pd\ns = pd.read_csv('scores.csv')\n"


def write_dataset(root: Path) -> Path:
    (root / "da-dev-tables").mkdir(parents=True)
    (root / "da-dev-tables" / "scores.csv").write_text("name,score,group\na,1,x\nb,2,x\nc,3,y\nd,6,y\n")
    (root / "da-dev-questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    (root / "da-dev-labels.jsonl").write_text("".join(json.dumps(lb) + "\n" for lb in LABELS))
    return root


def test_loop_and_one_shot_graded_in_one_run(tmp_path: Path, model_server: ScriptedOpenAIServer,
                                             capsys: object) -> None:
    data = write_dataset(tmp_path / "dabench")
    model_server.script(
        # 1, loop: right, printed without the field and then said (the words' 3.0000000001 is 3.00
        # within 1e-6).
        fenced(READ + "print(f\"mean: {s['score'].mean():.2f}\")"),
        "The mean score is @mean_score[3.0000000001].",
        # 1, one-shot: the code raises.
        fenced("print(1 / 0)"),
        # 2, loop: a NameError, the fix (served only with the traceback sent back) runs and is half
        # wrong: shown as done, silently wrong, one sub-question of two right.  Its output fills in
        # both fields: those lines are the answer, no words asked (core/answer.py).
        fenced("print(undefined_name)"),
        Reply(fenced(READ + "print('@max_x[2]', '@max_y[3]')"), require="undefined_name"),
        # 2, one-shot: right.
        fenced(READ + "m = s.groupby('group')['score'].max()\nprint(f\"@max_x[{m['x']}] @max_y[{m['y']}]\")"),
        # 3, loop: right, stated by its output; one-shot: a number in words, no code, wrong.
        fenced(READ + "print(f'@rows[{len(s)}]')"),
        "The file has @rows[5] rows.",
    )
    out = tmp_path / "out"
    assert main(["--model", "stand-in", "--suite", "dabench", str(data), "--jobs", "1", "--retries", "2",
                 "--out", str(out)]) == 0
    assert model_server.misses == [] and model_server.replies == []  # every reply used, in order
    record = json.loads((out / "dabench.json").read_text())
    loop, one = record["summary"]["loop"], record["summary"]["one-shot"]
    assert (loop["right"], loop["accuracy_by_question"], loop["sub_right"], loop["sub_questions"]) == (2, 0.6667, 3, 4)
    assert (loop["shown_done"], loop["silently_wrong"], loop["no_code"], loop["failed"], loop["attempts"]) == (
        3, 1, 0, 0, 4)
    assert (one["right"], one["accuracy_by_question"], one["sub_right"], one["accuracy_by_sub_question"]) == (
        1, 0.3333, 2, 0.5)
    assert one["statuses"] == {"raised": 1, "ran": 1, "no-code": 1}
    assert (one["no_code"], one["no_code_right"], one["silently_wrong"], one["failed"]) == (1, 0, 0, 1)
    runs = {r["id"]: {a["way"]: a for a in r["ways"]} for r in record["runs"]}
    assert runs[2]["loop"]["correct"] == {"max_x": True, "max_y": False}
    assert runs[1]["one-shot"]["error"].startswith("ZeroDivisionError")
    assert "mean: 3.00" in runs[1]["loop"]["response"]  # the printed output is graded too
    assert runs[3]["loop"]["response"].endswith("@rows[4]")  # the printed field, no words
    assert runs[1]["loop"]["shown"] == [runs[1]["loop"]["outputs"]]  # each clean attempt's result, for a re-vote
    # One candidate: its result is first shown when the run ends (the way's own time, words included).
    assert 0 < runs[1]["loop"]["first_seconds"] <= runs[1]["loop"]["seconds"]
    assert loop["median_first_seconds"] <= loop["median_seconds"]
    assert record["meta"]["questions"] == [1, 2, 3] and record["meta"]["answer"] == "always"
    # The baseline's requests: a minimal system prompt and the question alone, no notebook context;
    # the loop's first request describes the file in its working directory (a link, not a copy).
    bodies = model_server.requests
    one_shot = [b["messages"] for b in bodies if b["messages"][0]["content"] == ONE_SHOT_SYSTEM]
    assert len(one_shot) == 3 and all(len(m) == 2 for m in one_shot)
    assert one_shot[1][1]["content"].startswith("The highest score in each group.\n\nData file: scores.csv")
    assert "Constraints: Groups x and y." in one_shot[1][1]["content"]
    context = "columns: name: str, score: int64, group: str"  # the working folder's one table, described
    assert context in bodies[0]["messages"][-1]["content"]
    assert all(context not in m[1]["content"] and "Notebook context" not in m[1]["content"] for m in one_shot)
    assert (out / "work" / "q1" / "scores.csv").is_symlink()
    text = capsys.readouterr().out  # type: ignore[attr-defined]
    assert [line.split()[:5] for line in text.splitlines() if line.startswith(("loop", "one-shot"))] == [
        ["loop", "66.7%", "2/3", "75.0%", "3/4"], ["one-shot", "33.3%", "1/3", "50.0%", "2/4"]]


def _answers(*qids: int) -> list[str]:
    """Questions ``qids`` of QUESTIONS answered right by the loop (code whose output fills in the
    fields: no words asked) and by the one-shot."""
    code = {1: "print(f\"@mean_score[{s['score'].mean():.2f}]\")", 2: "print('@max_x[2]', '@max_y[6]')",
            3: "print(f'@rows[{len(s)}]')"}
    return [reply for q in qids for reply in (fenced(READ + code[q]), fenced(READ + code[q]))]


def test_a_stopped_run_resumes_where_it_stopped(tmp_path: Path, model_server: ScriptedOpenAIServer,
                                                capsys: object) -> None:
    data, out = write_dataset(tmp_path / "dabench"), tmp_path / "out"
    argv = ["--model", "stand-in", "--suite", "dabench", str(data), "--jobs", "1", "--retries", "1", "--out", str(out)]
    model_server.script(*_answers(1, 2, 3))
    assert main(argv) == 0
    whole = json.loads((out / "dabench.json").read_text())
    assert whole["summary"]["loop"]["right"] == 3 and whole["summary"]["one-shot"]["right"] == 3
    # As if the sitting had been killed while question 3 was written: 1 kept, 2 and a cut line lost.
    lines = (out / "questions.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [1, 2, 3]
    (out / "questions.jsonl").write_text(lines[0] + "\n" + lines[2][:40])
    with pytest.raises(SystemExit, match="holds a run already: --resume goes on"):
        main(argv)  # never started over on top of a run's records
    with pytest.raises(SystemExit, match="retries 1 then, 2 now"):
        main([*argv[:-4], "--retries", "2", "--out", str(out), "--resume"])
    model_server.script(*_answers(2, 3))
    assert main([*argv, "--resume"]) == 0
    assert model_server.misses == [] and model_server.replies == []
    new = model_server.requests  # script() starts the record anew
    assert len(new) == 4 and not any("mean score" in m["content"] for b in new for m in b["messages"])
    resumed = json.loads((out / "dabench.json").read_text())
    assert [r["id"] for r in resumed["runs"]] == [1, 2, 3] and resumed["meta"]["resumed"] == 1
    graded = ("right", "sub_right", "questions", "shown_done", "silently_wrong", "statuses", "attempts")
    for way in ("loop", "one-shot"):
        assert {k: resumed["summary"][way][k] for k in graded} == {k: whole["summary"][way][k] for k in graded}
    assert "3 DABench questions (all, 1 of them answered before --resume)" in capsys.readouterr().out  # type: ignore[attr-defined]
    with pytest.raises(SystemExit, match="--resume goes on with the run in --out OUT"):
        main([*argv[:-2], "--resume"])
    # The figures so far, read from the records alone: no model, no data folder needed.
    (out / "questions.jsonl").write_text("\n".join((out / "questions.jsonl").read_text().splitlines()[:-1]) + "\n")
    capsys.readouterr()  # type: ignore[attr-defined]
    assert main(["--report", str(out)]) == 0
    said = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "2 of 3 questions answered so far, graded again from the responses (model stand-in, candidates 1" in said
    assert [line.split()[:3] for line in said.splitlines() if line.startswith("loop")] == [["loop", "100.0%", "2/2"]]
    with pytest.raises(SystemExit, match="no DABench run in"):
        main(["--report", str(tmp_path)])
