"""DABench's parts without kernels: the benchmark's grading rule, loading a data folder, the fixed
sample, and the figures (by question, by sub-question, how answers were shown).  The data folders
here are made up by the tests; the real data (CC BY-NC) is never in the project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.success.dabench import Question, choose, extract, grade, is_equal, load
from bench.success.dabench_report import summarize, table
from bench.success.dabench_run import Answered, QuestionRun


def test_equal_as_text_or_as_floats_within_1e_6() -> None:
    assert is_equal("Male", "Male")
    assert not is_equal("male", "Male")  # text is compared exactly
    assert not is_equal("Male ", "Male")
    assert is_equal("0.21", "0.21") and is_equal("0.2100004", "0.21") and is_equal("3", "3.0")
    assert not is_equal("0.211", "0.21") and not is_equal("0.2100011", "0.21")
    assert not is_equal(None, "0.21")  # the response lacks the name
    assert not is_equal("nan", "0.21") and not is_equal("", "0")


def test_grade_every_sub_answer_of_the_label() -> None:
    labels = (("mean_fare", "34.65"), ("median_age", "28.0"))
    assert grade("@mean_fare[34.65] and @median_age[28]", labels) == {"mean_fare": True, "median_age": True}
    # One missing, one wrong, a name the label does not ask for ignored.
    assert grade("@mean_fare[34.6] @extra[1]", labels) == {"mean_fare": False, "median_age": False}
    assert grade("@median_age[28.0000001]", labels) == {"mean_fare": False, "median_age": True}
    # A name given twice keeps its last value, as the benchmark's dict(zip(...)) does.
    assert grade("printed @mean_fare[1.0]\nso: @mean_fare[34.65]", labels[:1]) == {"mean_fare": True}
    assert extract("@a[x]@b[[1, 2]") == {"a": "x", "b": "[1, 2"}  # the benchmark's non-greedy regex
    assert grade("", labels) == {"mean_fare": False, "median_age": False}


def write_folder(root: Path, questions: list[dict[str, object]], labels: list[dict[str, object]]) -> Path:
    (root / "da-dev-tables").mkdir(parents=True)
    (root / "da-dev-tables" / "t.csv").write_text("a,b\n1,2\n")
    (root / "da-dev-questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    (root / "da-dev-labels.jsonl").write_text("".join(json.dumps(lb) + "\n" for lb in labels))
    return root


def q(qid: int, file_name: str = "t.csv") -> dict[str, object]:
    return {"id": qid, "question": f"Question {qid}?", "constraints": "Round to 2 decimals.",
            "format": f"@v{qid}[value]", "file_name": file_name, "level": "easy", "concepts": ["x"]}


def test_load_reads_questions_with_their_labels(tmp_path: Path) -> None:
    folder = write_folder(tmp_path, [q(7), q(3), q(9)], [
        {"id": 3, "common_answers": [["v3", "1"]]}, {"id": 7, "common_answers": [["v7", "a"], ["w7", "2.5"]]}])
    questions = load(folder)
    assert [x.id for x in questions] == [3, 7]  # id order; 9 has no label, so nothing to grade
    assert questions[1].labels == (("v7", "a"), ("w7", "2.5"))
    request = questions[0].request()
    for part in ("Question 3?", "Data file: t.csv", "Constraints: Round to 2 decimals.", "Answer format: @v3[value]"):
        assert part in request


def test_load_says_what_is_wrong_with_a_folder(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="lacks da-dev-questions.jsonl, da-dev-labels.jsonl, da-dev-tables"):
        load(tmp_path)
    folder = write_folder(tmp_path / "a", [q(1, "gone.csv")], [{"id": 1, "common_answers": [["v1", "1"]]}])
    with pytest.raises(SystemExit, match="not in .*da-dev-tables: gone.csv"):
        load(folder)
    folder = write_folder(tmp_path / "b", [q(1)], [{"id": 1, "common_answers": [["v1", "1"]]}])
    (folder / "da-dev-tables" / "t.csv").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\n")
    with pytest.raises(SystemExit, match="Git LFS pointer"):
        load(folder)
    (folder / "da-dev-labels.jsonl").write_text("{not json\n")
    with pytest.raises(SystemExit, match="cannot read"):
        load(folder)


def question(qid: int) -> Question:
    return Question(qid, "q", "", "", "t.csv", "easy", (("v", "1"),))


def test_sample_is_fixed_by_its_seed() -> None:
    questions = [question(i) for i in range(50)]
    first = choose(questions, sample=10, seed=1)
    assert [x.id for x in first] == [x.id for x in choose(questions, sample=10, seed=1)]
    assert [x.id for x in first] == sorted(x.id for x in first) and len({x.id for x in first}) == 10
    assert [x.id for x in first] != [x.id for x in choose(questions, sample=10, seed=2)]
    assert [x.id for x in choose(questions, "4,2")] == [2, 4]
    with pytest.raises(SystemExit, match="no question with id 99"):
        choose(questions, "2,99")
    with pytest.raises(SystemExit, match="takes question ids"):
        choose(questions, "mean_fare")
    with pytest.raises(SystemExit, match="more than the 50 questions"):
        choose(questions, sample=51)


def answered(way: str, status: str, *right: bool) -> Answered:
    return Answered(way, status, {f"s{i}": r for i, r in enumerate(right)}, "", attempts=1, seconds=2.0)


def test_figures_by_question_by_sub_question_and_how_shown() -> None:
    runs = [
        QuestionRun(1, "easy", "t.csv", [answered("loop", "success", True, True),
                                         answered("one-shot", "ran", True, False)]),
        QuestionRun(2, "hard", "t.csv", [answered("loop", "success", True, False, False),  # ✓ and wrong
                                         answered("one-shot", "no-code", True, True, True)]),
        QuestionRun(3, "hard", "t.csv", [answered("loop", "answered", False),  # words, no code
                                         answered("one-shot", "raised", False)]),
        QuestionRun(4, "easy", "t.csv", [answered("loop", "failed", False), answered("one-shot", "error", False)]),
    ]
    s = summarize(runs)
    loop, one = s["loop"], s["one-shot"]
    assert (loop["right"], loop["accuracy_by_question"]) == (1, 0.25)
    assert (loop["sub_right"], loop["sub_questions"], loop["accuracy_by_sub_question"]) == (3, 7, 0.4286)
    assert (loop["shown_done"], loop["silently_wrong"], loop["no_code"], loop["no_code_right"]) == (2, 1, 1, 0)
    assert (loop["failed"], loop["errors"]) == (1, 0)
    assert (one["right"], one["sub_right"], one["accuracy_by_sub_question"]) == (1, 4, 0.5714)
    assert (one["shown_done"], one["silently_wrong"], one["no_code"], one["no_code_right"]) == (1, 1, 1, 1)
    assert (one["failed"], one["errors"]) == (1, 1)
    assert s["loop"]["by_level"]["hard"]["sub_right"] == 1 and s["one-shot"]["by_level"]["easy"]["right"] == 0
    text = table(runs, s)
    assert "✓ done    wrong 1/3" in text and "no code   right 3/3" in text
    assert [line.split()[:5] for line in text.splitlines() if line.startswith(("loop", "one-shot"))] == [
        ["loop", "25.0%", "1/4", "42.9%", "3/7"], ["one-shot", "25.0%", "1/4", "57.1%", "4/7"]]


def test_not_answered_and_flagged_answers_are_never_counted_as_shown_done() -> None:
    # The loop's "not answered" (a data question with no code) and ⚠ (a number no output showed).
    runs = [QuestionRun(n, "easy", "t.csv", [answered("loop", status, right), answered("one-shot", "ran", right)])
            for n, status, right in ((1, "not-answered", False), (2, "unchecked", False), (3, "unchecked", True))]
    loop = summarize(runs)["loop"]
    assert (loop["shown_done"], loop["silently_wrong"], loop["failed"]) == (0, 0, 0)
    assert (loop["no_code"], loop["flagged"], loop["flagged_right"], loop["right"]) == (1, 2, 1, 1)
    text = table(runs, summarize(runs))
    assert "✗ no code wrong" in text and "⚠ done    right" in text


def test_failed_runs_with_retries_left_are_counted_unless_the_model_said_it_cannot() -> None:
    early = Answered("loop", "failed", {"s0": False}, "", attempts=1, unspent=2)
    cannot = Answered("loop", "failed", {"s0": False}, "", attempts=1, declined=True)
    runs = [QuestionRun(n, "easy", "t.csv", [a, answered("one-shot", "raised", False)])
            for n, a in ((1, early), (2, cannot), (3, answered("loop", "failed", False)))]
    loop = summarize(runs)["loop"]
    assert (loop["failed"], loop["unspent"], loop["declined"]) == (3, 1, 1)
    lines = table(runs, summarize(runs)).splitlines()
    head = next(line for line in lines if "unspent" in line)
    [row] = [line for line in lines if line.startswith("loop ")]
    assert row[:len(head.split("unspent")[0]) + len("unspent")].split()[-2:] == ["3", "1"]  # failed, unspent


@pytest.mark.parametrize(("argv", "says"), [
    (["--model", "m", "--suite", "dabench"], "a PATH goes with --suite dabench"),
    (["--model", "m", "DATA"], "a PATH goes with --suite dabench"),
    (["--scripted", "--suite", "dabench", "DATA"], "DABench needs a model"),
    (["--model", "m", "--suite", "dabench", "DATA", "--repeat", "3"], "--repeat and --schedules are for the task"),
    (["--model", "m", "--suite", "dabench", "DATA", "--sample", "-1"], "--sample takes a number"),
    (["--model", "m", "--suite", "dabench", "NOWHERE"], "NOWHERE lacks da-dev-questions.jsonl"),
    (["--model", "m", "--resume"], "--resume is for --suite dabench"),
])
def test_bad_command_lines_say_what_to_do(argv: list[str], says: str, tmp_path: Path) -> None:
    from bench.success_rate import main

    folder = write_folder(tmp_path / "d", [q(1)], [{"id": 1, "common_answers": [["v1", "1"]]}])
    with pytest.raises(SystemExit, match=says):
        main([str(folder) if a == "DATA" else str(tmp_path / a) if a == "NOWHERE" else a for a in argv])


def test_the_other_candidates_listed_under_a_not_sure_answer_are_not_graded() -> None:
    from bench.success.dabench_run import graded

    labels = (("mean", "-0.14"), ("std", "0.94"))
    response = ("@mean[-0.14], @std[0.94]\n\nThe mean is -0.14.\n\n⚠ Not sure: candidates disagree: "
                "@mean[-0.14], @std[0.94] (1 of 2) vs @mean[99.86], @std[0.94].")
    assert graded(response, labels) == {"mean": True, "std": True}  # the answer given, not the alternative
    assert graded("@mean[99.86] @std[0.94]", labels) == {"mean": False, "std": True}
