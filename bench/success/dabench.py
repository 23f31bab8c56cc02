"""InfiAgent-DABench's closed-form questions: loading, the request, and the benchmark's own grading.

The data (github.com/InfiAgent/InfiAgent, ``examples/DA-Agent/data``: ``da-dev-questions.jsonl``,
``da-dev-labels.jsonl``, ``da-dev-tables/``) is licensed CC BY-NC 4.0: it is read from a folder the
user names and never copied into the project; nothing here downloads it.

Grading follows the benchmark's ``eval_closed_form.py``: the response's ``@name[value]`` pairs
are found with the regex ``@(\\w+)\\[(.*?)\\]`` (a name given twice keeps its last value), and a
sub-question is right when its value equals the label's as text, or as floats within 1e-6.  A
question is right when all its sub-questions are.  One difference, on purpose: the benchmark
drops a question whose response is empty from both counts; here every question asked counts,
so a run that gave nothing is a wrong answer, not a smaller denominator.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

QUESTIONS = "da-dev-questions.jsonl"
LABELS = "da-dev-labels.jsonl"
TABLES = "da-dev-tables"
_ANSWER = re.compile(r"@(\w+)\[(.*?)\]")


@dataclass(frozen=True)
class Question:
    id: int
    question: str
    constraints: str
    format: str
    file_name: str
    level: str
    labels: tuple[tuple[str, str], ...]  # (name, value) for each sub-question

    def request(self) -> str:
        """What the model is asked: the question, its constraints and its answer format, as the
        benchmark's own prompt gives them, and the file it is about."""
        return (f"{self.question}\n\nData file: {self.file_name}\n\nConstraints: {self.constraints}\n\n"
                f"Answer format: {self.format}\n\n"
                "Print the final answer in that format, one @name[value] for each name.")


def extract(response: str) -> dict[str, str]:
    """The response's answers by name, as the benchmark reads them."""
    return dict(_ANSWER.findall(response))


def is_equal(got: str | None, want: str) -> bool:
    """The benchmark's rule: equal as text, or as floats within 1e-6."""
    if got == want:
        return True
    try:
        return abs(float(got) - float(want)) < 1e-6  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def grade(response: str, labels: tuple[tuple[str, str], ...]) -> dict[str, bool]:
    """Each sub-question's name -> right or not; a name the response lacks is wrong."""
    found = extract(response)
    return {name: is_equal(found.get(name), value) for name, value in labels}


def _read_jsonl(path: Path) -> list[dict[str, object]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]
    except (OSError, ValueError) as exc:
        raise SystemExit(f"dabench: cannot read {path}: {exc}") from None


def load(folder: Path) -> list[Question]:
    """The questions of a DABench data folder, each with its labels; one clear line if it is not one."""
    missing = [name for name in (QUESTIONS, LABELS, TABLES) if not (folder / name).exists()]
    if missing:
        raise SystemExit(f"dabench: {folder} lacks {', '.join(missing)}: give the folder holding "
                         f"{QUESTIONS}, {LABELS} and {TABLES}/ (InfiAgent's examples/DA-Agent/data)")
    labels = {int(str(r["id"])): tuple((str(n), str(v)) for n, v in r["common_answers"])  # type: ignore[attr-defined]
              for r in _read_jsonl(folder / LABELS)}
    questions = []
    for r in _read_jsonl(folder / QUESTIONS):
        qid = int(str(r["id"]))
        if qid not in labels:
            continue  # no label, nothing to grade against (the benchmark skips it too)
        questions.append(Question(qid, str(r["question"]), str(r.get("constraints", "")), str(r.get("format", "")),
                                  str(r["file_name"]), str(r.get("level", "")), labels[qid]))
    absent = sorted({q.file_name for q in questions if not (folder / TABLES / q.file_name).is_file()})
    if absent:
        raise SystemExit(f"dabench: {len(absent)} table(s) named by the questions are not in {folder / TABLES}: "
                         f"{', '.join(absent[:5])}")
    pointers = [name for name in {q.file_name for q in questions}
                if (folder / TABLES / name).read_bytes()[:40].startswith(b"version https://git-lfs")]
    if pointers:
        raise SystemExit(f"dabench: {pointers[0]} is a Git LFS pointer, not the table: fetch the files themselves")
    return sorted(questions, key=lambda q: q.id)


def choose(questions: list[Question], ids: str = "", sample: int = 0, seed: int = 0) -> list[Question]:
    """Questions by id (``ids``: comma-separated), or a fixed random sample of ``sample`` of them
    (the same ``seed`` always gives the same questions), in id order."""
    chosen = questions
    if ids:
        try:
            wanted = {int(i) for i in ids.split(",") if i.strip()}
        except ValueError:
            raise SystemExit(f"dabench: --tasks takes question ids (--tasks 0,5,6), not {ids!r}") from None
        chosen = [q for q in questions if q.id in wanted]
        unknown = wanted - {q.id for q in chosen}
        if unknown:
            raise SystemExit(f"dabench: no question with id {', '.join(map(str, sorted(unknown)))}")
    if sample:
        if sample > len(chosen):
            raise SystemExit(f"dabench: --sample {sample} is more than the {len(chosen)} questions")
        chosen = sorted(random.Random(seed).sample(chosen, sample), key=lambda q: q.id)
    return chosen
