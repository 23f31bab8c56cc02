"""Scripted-model schedules: the model's replies are fixed, so the figures are exact.

"fail-k": k replies whose code raises, then the task's reference solution; with
``retries >= k`` the run must succeed at exactly attempt k + 1.  "never": every
reply raises, so the run must fail after retries + 1 attempts.  "wrong": the
code runs but sets a wrong answer, which only the checker can notice (a
silent-wrong run).  Each failing reply is different code raising a different
NameError (the loop does not run code that already failed); each fix
is served only if the request carries the previous traceback (``require``),
so a loop that stopped feeding tracebacks back would fail these runs.
"""

from __future__ import annotations

from jupyter_ai_ci.testing import Reply

from .tasks import Task

MAX_FAILURES = 5


def schedule_names() -> list[str]:
    return [f"fail-{k}" for k in range(MAX_FAILURES + 1)] + ["never", "wrong"]


def fenced(code: str, note: str = "Here is the code.") -> str:
    return f"{note}\n```python\n{code}\n```\n"


def failing(i: int) -> str:
    return fenced(f"answer = undefined_name_{i}", f"Attempt {i + 1}.")


def replies(task: Task, schedule: str, retries: int) -> list[Reply]:
    """The replies the scripted server gives, in order, for one run."""
    if schedule == "wrong":
        return [Reply(fenced("answer = None"))]
    if schedule == "never":
        failures, final = retries + 1, None
    elif schedule.startswith("fail-"):
        failures, final = int(schedule[len("fail-"):]), task.reference
    else:
        raise ValueError(f"unknown schedule {schedule!r}: expected one of {schedule_names()}")
    out = [Reply(failing(i), require=f"undefined_name_{i - 1}" if i else None) for i in range(failures)]
    if final is not None:
        out.append(Reply(fenced(final), require=f"undefined_name_{failures - 1}" if failures else None))
    return out


def expected_attempts(schedule: str, retries: int) -> tuple[bool, int]:
    """(succeeds?, attempts) that a correct loop must report for a schedule."""
    if schedule == "wrong":
        return False, 1
    if schedule == "never":
        return False, retries + 1
    k = int(schedule[len("fail-"):])
    return (True, k + 1) if k <= retries else (False, retries + 1)
