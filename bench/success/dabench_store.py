"""A DABench run kept question by question, so that a long run can stop and go on.

Three ways over 100 questions take hours on a small machine, longer than one sitting.  Each
finished question is appended to ``questions.jsonl`` in the output folder as soon as it is
graded, and ``run.json`` holds what the run was asked (model, sample, seed, retries, candidates,
the code's commit).  ``--resume`` reads both, refuses when the settings or the commit differ (a
run that mixes two versions of the loop measures neither), and asks only the questions not yet
answered.  Each question's ways are still asked back to back, so they stay comparable even when
the machine is busier in one sitting than in another.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from .dabench_run import Answered, QuestionRun, as_records

RECORDS = "questions.jsonl"
SETTINGS = "run.json"


def commit() -> str:
    """The bench's own commit (``-dirty`` when its tree has changes), or "" outside a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], cwd=here, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _record(raw: dict[str, Any]) -> QuestionRun:
    ways = [Answered(**w) for w in raw.get("ways", [])]
    return QuestionRun(int(raw["id"]), str(raw["level"]), str(raw["file_name"]), ways)


def _parsed(text: str) -> dict[int, QuestionRun]:
    done: dict[int, QuestionRun] = {}
    for line in text.splitlines():
        try:
            run = _record(json.loads(line))
        except (ValueError, KeyError, TypeError):
            continue  # a line cut short when the last sitting was killed: that question is asked again
        done[run.id] = run
    return done


class Store:
    """``questions.jsonl`` and ``run.json`` in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def open(self, settings: dict[str, Any], resume: bool) -> dict[int, QuestionRun]:
        """The questions already answered (none for a new run); raises SystemExit with what to do."""
        records, saved = self.folder / RECORDS, self.folder / SETTINGS
        if not resume:
            if records.exists() and records.stat().st_size:
                raise SystemExit(f"success_rate: {self.folder} holds a run already: --resume goes on with it, "
                                 "or give another --out")
            self.folder.mkdir(parents=True, exist_ok=True)
            saved.write_text(json.dumps(settings, indent=2))
            records.write_text("")
            return {}
        if not saved.exists():
            raise SystemExit(f"success_rate: nothing to resume in {self.folder} (no {SETTINGS}): "
                             "start the run without --resume")
        before = json.loads(saved.read_text())
        differ = sorted(k for k in set(before) | set(settings) if before.get(k) != settings.get(k))
        if differ:
            said = ", ".join(f"{k} {before.get(k)!r} then, {settings.get(k)!r} now" for k in differ)
            raise SystemExit(f"success_rate: cannot resume {self.folder}: {said}. "
                             "Resume with the same settings and code, or start another --out")
        text = records.read_text() if records.exists() else ""
        if text and not text.endswith("\n"):
            with records.open("a") as f:  # a line cut short by a kill: the next record starts a line of its own
                f.write("\n")
        return _parsed(text)

    def answered(self) -> dict[int, QuestionRun]:
        """The questions graded so far, by id."""
        records = self.folder / RECORDS
        return _parsed(records.read_text() if records.exists() else "")

    def settings(self) -> dict[str, Any]:
        saved = self.folder / SETTINGS
        if not saved.exists():
            raise SystemExit(f"success_rate: no DABench run in {self.folder} (no {SETTINGS})")
        loaded: dict[str, Any] = json.loads(saved.read_text())
        return loaded

    def add(self, run: QuestionRun) -> None:
        """One graded question, appended and flushed at once (a kill loses at most the question under way)."""
        with (self.folder / RECORDS).open("a") as f:
            f.write(json.dumps(as_records([run])[0]) + "\n")
