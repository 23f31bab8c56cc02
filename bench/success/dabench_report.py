"""DABench figures: accuracy by question and by sub-question, for the loop and the one-shot baseline,
and how each answer was shown, so that wrong answers shown as done are counted.

"Shown as done" is the loop's ✓ (status ``success``: code ran, the run ended well) and, for the
baseline, code that ran without an error.  A wrong answer shown as done is *silently wrong*.
"No code" is an answer in words only (the loop's ``answered``, or ``not-answered`` when the question
was about data and the model wrote no code when asked again; a baseline reply without a python
block): a number in it was not computed.  "Flagged" is the loop's ⚠ (``unchecked``): code ran, and
the answer in words states a number no output showed -- not a plain ✓, so not silently wrong.
"Unspent" counts runs that failed with retries left though the model never said it cannot (#37: none).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .dabench_run import Answered, QuestionRun

WAYS = ("loop", "consensus", "one-shot")
DONE = {"success", "ran"}
NO_CODE = {"answered", "no-code", "not-answered"}
FLAGGED = {"unchecked", "not-sure"}
_SHOWN = {"success": "✓ done", "answered": "✓ no code", "ran": "ran", "no-code": "no code", "raised": "raised",
          "not-answered": "✗ no code", "unchecked": "⚠ done", "not-sure": "⚠ unsure"}


def _figures(answers: list[Answered]) -> dict[str, Any]:
    n = len(answers)
    sub = sum(len(a.correct) for a in answers)
    sub_right = sum(sum(a.correct.values()) for a in answers)
    right = sum(a.right for a in answers)
    return {
        "questions": n,
        "right": right,
        "accuracy_by_question": round(right / n, 4) if n else 0.0,
        "sub_questions": sub,
        "sub_right": sub_right,
        "accuracy_by_sub_question": round(sub_right / sub, 4) if sub else 0.0,
        "shown_done": sum(a.status in DONE for a in answers),
        "silently_wrong": sum(a.status in DONE and not a.right for a in answers),
        "no_code": sum(a.status in NO_CODE for a in answers),
        "no_code_right": sum(a.status in NO_CODE and a.right for a in answers),
        "flagged": sum(a.status in FLAGGED for a in answers),
        "flagged_right": sum(a.status in FLAGGED and a.right for a in answers),
        "failed": sum(a.status not in DONE | NO_CODE | FLAGGED | {"error"} for a in answers),
        "errors": sum(a.status == "error" for a in answers),
        "unspent": sum(a.unspent > 0 for a in answers),  # failed with retries left, not declined (#37: 0)
        "declined": sum(a.declined for a in answers),
        "statuses": dict(Counter(a.status for a in answers)),
        "agreed": sum(a.agreement == "agreed" for a in answers),
        "agreed_right": sum(a.agreement == "agreed" and a.right for a in answers),
        "attempts": sum(a.attempts for a in answers),
        "prompt_tokens": sum(a.prompt_tokens for a in answers),
        "completion_tokens": sum(a.completion_tokens for a in answers),
        "model_seconds": round(sum(a.model_seconds for a in answers), 3),
        "seconds_per_question": round(sum(a.seconds for a in answers) / n, 3) if n else 0.0,
        "median_seconds": _median([a.seconds for a in answers]),
        "median_first_seconds": _median([a.first_seconds or a.seconds for a in answers]),
    }


def _median(values: list[float]) -> float:
    return round(sorted(values)[len(values) // 2], 3) if values else 0.0


def _way(run: QuestionRun, way: str) -> Answered:
    return next(a for a in run.ways if a.way == way)


def _ways(runs: list[QuestionRun]) -> list[str]:
    return [w for w in WAYS if runs and any(a.way == w for a in runs[0].ways)]


def summarize(runs: list[QuestionRun]) -> dict[str, Any]:
    levels = sorted({r.level for r in runs})
    return {
        way: {**_figures([_way(r, way) for r in runs]),
              "by_level": {lv: _figures([_way(r, way) for r in runs if r.level == lv]) for lv in levels}}
        for way in _ways(runs)
    }


def _cell(a: Answered) -> str:
    return f"{_SHOWN.get(a.status, a.status):<10}{'right' if a.right else 'wrong':<6}" \
           f"{sum(a.correct.values())}/{len(a.correct)}"


def table(runs: list[QuestionRun], summary: dict[str, Any]) -> str:
    """Each question's answers, one per way, then the figures of each way."""
    ways = _ways(runs)
    lines = [f"{'id':>5}  {'level':<7}" + "".join(f"{w:<22}" for w in ways) + "file", "-" * (50 + 22 * len(ways))]
    lines += [f"{r.id:>5}  {r.level:<7}" + "".join(f"{_cell(_way(r, w)):<22}" for w in ways) + r.file_name
              for r in runs]
    head = (f"\n{'':<10}{'by question':>14}{'by sub-q':>14}{'shown done':>11}{'silently wrong':>15}"
            f"{'no code (right)':>16}{'⚠ (right)':>10}{'failed':>7}{'unspent':>8}{'errors':>7}{'tokens':>9}"
            f"{'s/question':>11}")
    lines += [head, "-" * (len(head) - 1)]
    for way in ways:
        f = summary[way]
        lines.append(
            f"{way:<10}{f['accuracy_by_question']:>7.1%} {f['right']:>2}/{f['questions']:<3}"
            f"{f['accuracy_by_sub_question']:>7.1%} {f['sub_right']:>2}/{f['sub_questions']:<3}"
            f"{f['shown_done']:>11}{f['silently_wrong']:>15}{f['no_code']:>12} ({f['no_code_right']})"
            f"{f['flagged']:>6} ({f['flagged_right']})"
            f"{f['failed']:>7}{f['unspent']:>8}{f['errors']:>7}{f['prompt_tokens'] + f['completion_tokens']:>9}"
            f"{f['seconds_per_question']:>11.1f}")
    agreed = [(w, summary[w]) for w in ways if summary[w]["agreed"] or w == "consensus"]
    for way, f in agreed:  # how far "N of N agree" can be trusted, and how often it is said
        precision = f"{f['agreed_right'] / f['agreed']:.0%}" if f["agreed"] else "-"
        lines.append(f"\n{way}: agreed on {f['agreed']} of {f['questions']} ({f['agreed'] / f['questions']:.0%} "
                     f"coverage), {f['agreed_right']} of them right ({precision} precision)")
    return "\n".join(lines)
