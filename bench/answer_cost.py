"""What the answer in words costs on a DABench run, and what it would without the calls the output
makes needless (issue #37: "no model call the answer does not need").

Reads a run made with ``bench/success_rate.py --suite dabench … --log`` (its ``questions.jsonl`` and
``requests.jsonl``, each call's seconds and the way that asked it).  For the loop and the candidates:
the answer calls' seconds, how many answers the output already stated in the form asked
(``core.answer.stated``: every ``@name[value]`` field printed), and for those the same question
without the call -- its seconds less the call's, graded on the output alone.  Nothing is asked.

    python bench/answer_cost.py OUT DATA    # OUT: the run's --out folder; DATA: the DABench folder
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from success.dabench import grade, load

from jupyter_ai_ci.core.answer import stated
from jupyter_ai_ci.core.prompts import ANSWER
from jupyter_ai_ci.events import ExecutionResult

ASKED = ANSWER.split("{output}", 1)[0]  # how an answer call's last message starts
WAYS = ("loop", "consensus")  # as the run names them, and its log's task suffix


def answer_seconds(log: Path) -> dict[tuple[int, str], float]:
    """Seconds spent on answer calls, per question and way."""
    spent: dict[tuple[int, str], float] = defaultdict(float)
    for line in log.read_text(encoding="utf-8").splitlines():
        call = json.loads(line)
        task = str(call.get("task", ""))
        if not task.startswith("dabench-") or ":" not in task:
            continue
        qid, way = task[len("dabench-"):].split(":", 1)
        last = call["messages"][-1]["content"]
        if isinstance(last, str) and last.startswith(ASKED):
            spent[(int(qid), way)] += float(call.get("seconds", 0.0))
    return spent


def costs(out: Path, data: Path) -> dict[str, dict[str, Any]]:
    questions = {q.id: q for q in load(data)}
    spent = answer_seconds(out / "requests.jsonl")
    rows: dict[str, dict[str, Any]] = {}
    runs = [json.loads(line) for line in (out / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line]
    for way in WAYS:
        before, after = [], []
        calls = said = right_before = right_after = 0
        answer_s = 0.0
        for run in runs:
            q = questions[run["id"]]
            answered = next((w for w in run["ways"] if w["way"] == way), None)
            if answered is None:
                continue
            seconds = float(answered["seconds"])
            right = bool(answered["correct"]) and all(answered["correct"].values())
            took = spent.get((q.id, way), 0.0)
            calls += took > 0
            answer_s += took
            before.append(seconds)
            right_before += right
            lines = stated(q.request(), [ExecutionResult(output=answered.get("outputs", ""))])
            if took > 0 and lines and answered["status"] != "failed":
                said += 1
                after.append(seconds - took)
                graded = grade(lines, q.labels)  # the answer the run now gives: the lines that state it
                right_after += bool(graded) and all(graded.values())
            else:
                after.append(seconds)
                right_after += right
        rows[way] = {"questions": len(before), "answer calls": calls, "answer seconds": round(answer_s, 1),
                     "stated by the output": said, "right (words asked)": right_before,
                     "right (stated ones not asked)": right_after,
                     "median s (words asked)": round(statistics.median(before), 1) if before else 0.0,
                     "median s (stated ones not asked)": round(statistics.median(after), 1) if after else 0.0}
    return rows


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    for way, row in costs(Path(sys.argv[1]), Path(sys.argv[2])).items():
        print(way + ": " + ", ".join(f"{k} {v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
