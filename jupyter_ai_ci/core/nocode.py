"""A reply with no code where code is needed: asked again for code, or the run ends, and why.

Two replies need code: the first reply to a question about data (its numbers would come from
nowhere) and a fix after a failed attempt (the attempt was undone: words change nothing).  Both
are asked again for code the same way (``prompts.NEED_CODE``), and each time costs one of the
retries, as a fix does: a model that answers in words forever ends when they are spent.  A fix
answered in words once ended the run with retries unused (issue #37: a 1.5B model explained the
error instead of fixing it, "gave up after 1 attempt" under ``--retries 2``).

The run ends before its retries are spent only when the model says it cannot (``declined``):
asking again would only ask it to pretend.  The line says which of the two it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NOT_ANSWERED = ("not answered: the model gave no code for a question about data ({times}), so no result "
                "was computed and its words are not shown as fact — ask again, or say which data to use")
DECLINED = "the model said it cannot: {words}"

# The model speaking of itself ("I cannot", "I'm unable to", "I am not able to") or of the task
# ("it is not possible to"): "you cannot sum strings" explains the error, and is asked again.
_CANNOT = re.compile(
    r"\b(?:I|we)(?:'m| am| are|'re)?\s+(?:\w+\s+)?(?:cannot|can't|can ?not|unable to|not able to)\b"
    r"|\b(?:it is|it's|this is)\s+(?:not possible|impossible)\b", re.I)
_SENTENCE = re.compile(r"[^.!?\n]*[.!?]?")


def declined(text: str) -> str:
    """The sentence in which the model says it cannot do it, or "" (one line, at most 200 chars)."""
    found = _CANNOT.search(text)
    if found is None:
        return ""
    start = max(text.rfind(mark, 0, found.start()) for mark in ".!?\n") + 1
    sentence = _SENTENCE.match(text, start)
    words = " ".join((sentence.group(0) if sentence else "").split())
    return words if len(words) <= 200 else words[:199] + "…"


@dataclass(frozen=True)
class NoCode:
    """What the loop does with a reply without code: ``notice`` is said; ``end``: the run fails
    (with ``reason`` when the line says more than "gave up after N attempts")."""

    notice: str
    end: bool = False
    reason: str = ""
    declined: bool = False


def no_code(text: str, fixes: int, retries: int, fix: bool) -> NoCode:
    """``fix``: the reply answers a fix request (else the first reply to a question about data);
    ``fixes``: the retries spent so far in this step."""
    if fix and (words := declined(text)):
        return NoCode("the model said it cannot fix the error", end=True, reason=DECLINED.format(words=words),
                      declined=True)
    if fixes >= retries:
        if fix:  # "gave up after N attempts (…in words…)": summary.py says it, from the outcome
            return NoCode("the model answered the fix request without code; no retries left", end=True)
        return NoCode("the model answered without code again", end=True, reason=NOT_ANSWERED.format(
            times="asked once" if not fixes else f"asked {fixes + 1} times"))
    left = retries - fixes
    what = "the fix request" if fix else "a question about data"
    return NoCode(f"the model answered {what} without code — asking it for code "
                  f"({left} {'try' if left == 1 else 'tries'} left)")
