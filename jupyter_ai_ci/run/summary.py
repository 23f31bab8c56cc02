"""What a run came to, in one line: the same facts and words for every driver.

The magic shows ``line()`` as its compact status (``✓ done in 2 attempts ·
1.3k tokens · 3.4 s``), the command line puts the same facts in each
notebook's result line, and the sidebar's done message carries
``sentence()``.  Written once here so that the three never drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_ai_ci.core.consensus import sureness
from jupyter_ai_ci.errors import GAVE_UP_ADVICE, gave_up_why
from jupyter_ai_ci.events import Outcome


def tokens_text(n: int) -> str:
    """``850 tokens``, ``1.3k tokens``, ``12k tokens``, ``2k tokens``: read at a glance, not
    audited; written as the chat panel writes its numbers (widget.tsx ``compact``)."""
    if n < 1000:
        return f"{n} token{'' if n == 1 else 's'}"
    value, unit = (n / 1e3, "k") if n < 1e6 else (n / 1e6, "M")
    number = f"{value:.1f}".removesuffix(".0") if value < 10 else f"{round(value)}"
    return f"{number}{unit} tokens"


def seconds_text(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"


@dataclass(frozen=True)
class Summary:
    status: str  # Outcome.status
    attempts: int
    requests: int  # model calls made (0: replayed, or nothing asked)
    prompt_tokens: int
    completion_tokens: int
    seconds: float | None  # the run's own wall time, when the driver measured it
    replayed: bool
    error: str  # the last error in one line, for a failed run
    early_stop: bool
    reason: str  # why a refused or over-budget run stopped
    answered: bool  # the run ends with an answer in words
    unanswered: bool = False  # one was wanted and the model failed to give it (the code ran)
    unchecked: int = 0  # numbers in the answer in words that no output showed (core/grounding.py)
    sureness: str = ""  # with candidates: "3 of 3 candidates agree", "candidates disagree: …"
    sure: bool = True  # False: the candidates disagree, or none confirmed the result
    in_words: bool = False  # a failed run whose last fix came back in words (its retries spent)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def ok(self) -> bool:
        return self.status in ("success", "answered", "not-run")

    def what(self, brief: bool = False) -> str:
        """The verdict without mark or figures: ``done in 2 attempts``.  ``brief``: without the
        last error, for a line that sits right above the error itself."""
        n = self.attempts
        tries = f"{n} attempt{'' if n == 1 else 's'}"
        if self.status == "success" and self.sureness:
            # Candidates ran as attempts too: their count says nothing; how sure says it all.
            if self.sure:
                return f"done · {self.sureness}{self.missing()}"
            lead = "" if self.sureness.startswith("candidates") else "done, "
            return f"{lead}{self.sureness}{self.missing()}"
        if self.status == "success":
            return f"done in {tries}{self.missing()}"
        if self.status == "answered":
            return "answered without code"
        if self.status == "not-run":
            return "not run (--no-run)"
        if self.status == "failed" and self.reason:  # not answered: the reason says what to do
            return self.reason
        if self.status == "failed":
            why = gave_up_why(self.early_stop, self.in_words)
            last = self.error or "the model answered the traceback without code"
            return f"gave up after {tries}{why}" + ("" if brief else f"; last error: {last}")
        if self.status == "refused":
            return self.reason or "refused"  # it says by whom: "refused by policy: …", "not run: …"
        if self.status == "over-budget":
            return f"stopped: {self.reason}"
        return self.status

    def missing(self) -> str:
        """`` (no answer in words)`` when one was wanted and failed: the magic's folded line and
        the command line's result line are all a user reads, and the note is inside."""
        if self.unchecked:
            n = self.unchecked
            return f" ({n} number{'' if n == 1 else 's'} in the answer not in the output)"
        return " (no answer in words)" if self.unanswered else ""

    def advice(self, retries: str) -> str:
        """What to do next, after a run that gave up ("" after any other); ``retries``: how this
        driver's user raises them (--retries, AICISettings.retries)."""
        return GAVE_UP_ADVICE.format(retries) if self.status == "failed" and not self.reason else ""

    def figures(self) -> list[str]:
        """Tokens (or that no model was called) and time."""
        parts = [tokens_text(self.tokens) if self.requests else
                 ("replayed, no model call" if self.replayed else "no model call")]
        if self.seconds is not None:
            parts.append(seconds_text(self.seconds))
        return parts

    def line(self, brief: bool = False) -> str:
        """``✓ done in 2 attempts · 1.3k tokens · 3.4 s``"""
        mark = "✓" if self.ok and self.status != "not-run" else ("·" if self.ok else "✗")
        if (self.unchecked or not self.sure) and self.ok:  # a number nothing showed, candidates that
            mark = "⚠"  # disagree: never a plain ✓
        return " · ".join([f"{mark} {self.what(brief)}", *self.figures()])

    def sentence(self) -> str:
        """The line as a sentence, for a chat message: ``Done in 2 attempts · 1.3k tokens.``"""
        text = " · ".join([self.what(), *self.figures()])
        return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def summarize(outcome: Outcome, seconds: float | None = None, replayed: bool = False) -> Summary:
    error = outcome.last_error
    return Summary(
        status=outcome.status,
        attempts=len(outcome.attempts),
        requests=outcome.requests,
        prompt_tokens=outcome.usage.prompt_tokens,
        completion_tokens=outcome.usage.completion_tokens,
        seconds=seconds,
        replayed=replayed,
        error=error.one_line() if error is not None else "",
        early_stop=outcome.early_stop,
        reason=outcome.reason,
        answered=bool(outcome.answer.strip()) and outcome.status in ("success", "answered"),
        unanswered=outcome.unanswered,
        unchecked=len(outcome.unchecked),
        sureness=sureness(outcome.consensus) if outcome.consensus is not None else "",
        sure=outcome.consensus is None or outcome.consensus.sure,
        in_words=fix_in_words(outcome),
    )


def fix_in_words(outcome: Outcome) -> bool:
    """The run failed on a fix the model answered in words: its words are kept as the answer."""
    return outcome.status == "failed" and not outcome.reason and bool(outcome.answer.strip())
