"""Figures from a list of runs: success by attempts allowed, a table, JSON, a PNG chart.

"Success at N" is cumulative: the share of runs that ended with a correct
answer using at most N attempts.  A run that ran without error but whose
answer the checker rejects is *silent-wrong*: the failure users never see.
A run that failed with retries it never used, though the model did not say it
cannot, is *unspent* (issue #37: there should be none).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .harness import TaskRun


def success_at(runs: list[TaskRun], max_attempts: int) -> list[float]:
    """Cumulative success rate with 1 … max_attempts attempts allowed."""
    if not runs:
        return [0.0] * max_attempts
    return [sum(r.correct and r.attempts <= n for r in runs) / len(runs) for n in range(1, max_attempts + 1)]


def aggregate(runs: list[TaskRun], max_attempts: int) -> dict[str, Any]:
    attempts = sum(r.attempts for r in runs)
    agreed = [r for r in runs if r.agreement == "agreed"]
    seconds = sorted(r.seconds for r in runs)
    first = sorted(r.first_seconds or r.seconds for r in runs)  # records from before first_seconds: the end
    return {
        "runs": len(runs),
        "success": sum(r.correct for r in runs),
        "success_at": [round(x, 6) for x in success_at(runs, max_attempts)],
        "silent_wrong": sum(r.silent_wrong for r in runs),
        "failed": sum(r.status == "failed" for r in runs),
        "no_code": sum(r.status == "answered" for r in runs),  # the model answered in prose only
        # Failed with retries left though the model never said it cannot (#37 wants 0); and said it cannot.
        "unspent": sum(r.unspent > 0 for r in runs),
        "declined": sum(r.declined for r in runs),
        "errors": sum(r.status == "error" for r in runs),
        "attempts": attempts,
        "executions": sum(r.executions for r in runs),
        "prompt_tokens": sum(r.prompt_tokens for r in runs),
        "completion_tokens": sum(r.completion_tokens for r in runs),
        "model_seconds": round(sum(r.model_seconds for r in runs), 4),
        "execute_seconds": round(sum(r.execute_seconds for r in runs), 4),
        "own_seconds": round(sum(r.own_seconds for r in runs), 4),
        "own_ms_per_attempt": round(1000 * sum(r.own_seconds for r in runs) / attempts, 3) if attempts else 0.0,
        # Candidates that must agree: how often they did (coverage) and how often that was right.
        "agreed": len(agreed),
        "agreed_right": sum(r.correct for r in agreed),
        "not_sure": sum(r.agreement in ("disagree", "unconfirmed") for r in runs),
        "not_sure_right": sum(r.correct and r.agreement in ("disagree", "unconfirmed") for r in runs),
        "median_seconds": seconds[len(seconds) // 2] if seconds else 0.0,
        "median_first_seconds": first[len(first) // 2] if first else 0.0,
    }


def _group(runs: Iterable[TaskRun], key: str) -> dict[str, list[TaskRun]]:
    groups: dict[str, list[TaskRun]] = {}
    for r in runs:
        groups.setdefault(str(getattr(r, key)), []).append(r)
    return groups


def _way(candidates: str) -> str:
    return {"0": "one-shot", "1": "loop"}.get(candidates, f"candidates {candidates}")


def summarize(runs: list[TaskRun], max_attempts: int) -> dict[str, Any]:
    return {
        "overall": aggregate(runs, max_attempts),
        "by_schedule": {k: aggregate(v, max_attempts) for k, v in _group(runs, "schedule").items()},
        "by_category": {k: aggregate(v, max_attempts) for k, v in _group(runs, "category").items()},
        "by_task": {k: aggregate(v, max_attempts) for k, v in _group(runs, "task").items()},
        "by_candidates": {_way(k): aggregate(v, max_attempts) for k, v in sorted(_group(runs, "candidates").items())},
    }


def table(summary: dict[str, Any], group: str, max_attempts: int) -> str:
    """A plain-text table of one grouping (by_task, by_schedule, by_category) and the total."""
    shown = list(range(1, max_attempts + 1)) if max_attempts <= 8 else sorted({1, 2, 3, max_attempts})
    head = (f"{group[3:]:<26}{'runs':>5}" + "".join(f"{'ok@' + str(n):>7}" for n in shown)
            + f"{'silent':>7}{'failed':>7}{'unspent':>8}{'prose':>6}{'errors':>7}{'tokens':>9}{'model s':>9}"
            + f"{'own ms/att':>11}{'execs':>7}")
    lines = [head, "-" * len(head)]
    rows = [*summary[group].items(), ("overall", summary["overall"])]
    if group == "by_candidates":
        return _sureness(rows)
    for name, a in rows:
        if name == "overall":
            lines.append("-" * len(head))
        lines.append(
            f"{name:<26}{a['runs']:>5}" + "".join(f"{a['success_at'][n - 1]:>7.0%}" for n in shown)
            + f"{a['silent_wrong']:>7}{a['failed']:>7}{a['unspent']:>8}{a['no_code']:>6}{a['errors']:>7}"
            f"{a['prompt_tokens'] + a['completion_tokens']:>9}{a['model_seconds']:>9.2f}"
            f"{a['own_ms_per_attempt']:>11.2f}{a['executions']:>7}")
    return "\n".join(lines)


def _sureness(rows: list[tuple[str, dict[str, Any]]]) -> str:
    """Each way (today's loop, candidates that must agree) side by side."""
    head = (f"{'way':<14}{'runs':>5}{'right':>7}{'silently wrong':>16}{'agreed (right)':>16}{'precision':>10}"
            f"{'coverage':>9}{'not sure (right)':>18}{'median s':>9}{'1st result':>11}")
    lines = [head, "-" * len(head)]
    for name, a in rows:
        if name == "overall":
            continue
        precision = f"{a['agreed_right'] / a['agreed']:.0%}" if a["agreed"] else "-"
        coverage = f"{a['agreed'] / a['runs']:.0%}" if a["runs"] else "-"
        lines.append(f"{name:<14}{a['runs']:>5}{a['success'] / a['runs']:>7.0%}{a['silent_wrong']:>16}"
                     f"{a['agreed']:>9} ({a['agreed_right']:>2}){precision:>10}{coverage:>9}"
                     f"{a['not_sure']:>11} ({a['not_sure_right']:>2}){a['median_seconds']:>9.1f}"
                     f"{a['median_first_seconds']:>11.1f}")
    return "\n".join(lines)


def write_json(path: Path, meta: dict[str, Any], runs: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    path.write_text(json.dumps({"meta": meta, "summary": summary, "runs": runs}, indent=2))


def chart(path: Path, summary: dict[str, Any], max_attempts: int, title: str, group: str) -> None:
    """Cumulative success against attempts allowed: overall, and one line per group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = list(range(1, max_attempts + 1))
    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    for name, a in sorted(summary[group].items()):
        ax.plot(xs, [100 * y for y in a["success_at"]], marker=".", linewidth=1, alpha=0.7, label=name)
    overall = summary["overall"]
    ax.plot(xs, [100 * y for y in overall["success_at"]], color="black", linewidth=2.5, marker="o",
            label=f"overall ({overall['runs']} runs)")
    ax.set_xlabel("attempts allowed (1 = no fix)")
    ax.set_ylabel("runs with a correct answer (%)")
    ax.set_xticks(xs)
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    silent = overall["silent_wrong"] / overall["runs"] if overall["runs"] else 0.0
    ax.set_title(f"{title}\nsilent-wrong: {silent:.0%} of runs", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title=group[3:])
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
