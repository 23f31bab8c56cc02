"""One small hierarchy of errors users can meet.

Every error here carries a one-line message that says what to do.  IPython
renders exceptions that define ``_render_traceback_`` with that text instead of
a traceback, so a user never sees our internals -- yet the cell still ends in
an error, which makes Run All stop where it should.
"""

from __future__ import annotations


class AICIError(Exception):
    """Base class: a problem the user can act on, shown as one line."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class UsageProblem(AICIError):
    """The user asked for something we cannot do (empty prompt, bad option)."""


class ModelError(AICIError):
    """The model endpoint could not give an answer."""


class NoEndpoint(ModelError):
    """No model endpoint or key is configured."""


class ModelUnreachable(ModelError):
    """Connection refused, DNS failure, or the request timed out."""


class ModelAuthError(ModelError):
    """The endpoint rejected the key (401/403)."""


class ModelRateLimited(ModelError):
    """429 after the client's own retries with backoff."""


class ModelServerError(ModelError):
    """5xx or a malformed reply from the endpoint."""


class BudgetExceeded(AICIError):
    """A configured token budget would be exceeded."""


class PolicyRefused(AICIError):
    """Code was refused by policy (rejected, or no way to ask for approval)."""


# What to do when every attempt failed, in every driver; {} is the driver's own retries knob.
GAVE_UP_ADVICE = "Rephrase the request, give more detail, or raise {}."


def gave_up_why(early_stop: bool, in_words: bool) -> str:
    """Why the run stopped, after "gave up after N attempts", in every driver: its retries spent on
    asking again for code that was not the failed code sent back, or on fixes answered in words."""
    if early_stop:
        return " (the retries are spent; the model kept sending back the code that had failed)"
    return " (the retries are spent; the last fix came back in words, without code)" if in_words else ""


class RetriesExhausted(AICIError):
    """Every attempt raised; names the last error and the attempt count."""

    def __init__(self, attempts: int, last_error: str, early_stop: bool = False, in_words: bool = False) -> None:
        self.attempts = attempts
        self.last_error = last_error
        self.early_stop = early_stop
        why = gave_up_why(early_stop, in_words)
        plural = "attempt" if attempts == 1 else "attempts"
        super().__init__(
            f"gave up after {attempts} {plural}{why}; last error: {last_error}. "
            # Not "--retries" alone: the count may come from %config or a config file.
            + GAVE_UP_ADVICE.format("--retries (or AICISettings.retries)")
        )


class NotAnswered(AICIError):
    """A question about data the model would not answer with code, or a fix it said it cannot make
    (core/nocode.py)."""


class NotFixed(AICIError):
    """A fix of a failed cell that could not be made; nothing was changed (``run.fixcell``)."""


class KernelError(AICIError):
    """The kernel could not be started, reached, or kept alive (command line, bench)."""


class KernelDied(KernelError):
    """The kernel died while running code; its state is gone, so retrying is pointless."""


class GatewayError(KernelError):
    """A Kernel/Enterprise Gateway refused a request, was unreachable, or timed out."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status, when the gateway answered one


class Interrupted(AICIError):
    """The user interrupted the run; nothing was inserted."""


class ExecutionAborted(AICIError):
    """The code could not be run at all: kernel dead, notebook closed, panel gone."""
