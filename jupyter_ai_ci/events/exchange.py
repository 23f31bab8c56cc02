"""What the model and the kernel send back: a reply (with its usage), an execution's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Message:
    """One chat message in OpenAI's shape."""

    role: Literal["system", "user", "assistant"]
    content: str
    # Pictures of the figures this message speaks of (base64 PNGs, at most 1024 px a side), for a
    # model that takes images (model/vision.py); the client drops them for any other.
    images: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        if not self.images:
            return {"role": self.role, "content": self.content}
        # OpenAI's parts: the text, then each picture as a data URL.
        parts: list[dict[str, Any]] = [{"type": "text", "text": self.content}]
        parts += [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}} for png in self.images]
        return {"role": self.role, "content": parts}


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


# ``ModelReply.finish_reason`` of an answer in words the model could not give (an endpoint
# error, run/drive.py): the loop ends the run done without it.
NO_ANSWER = "no-answer"
# ... and of one the person stopped (a Stop, Ctrl-C): the same, and the check it came before
# (core/consensus.py) is not asked for either.
STOPPED = "jupyter-ai-ci:stopped"  # no endpoint's finish_reason: a real reply is never taken for one


@dataclass(frozen=True)
class ModelReply:
    text: str
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    seconds: float = 0.0
    # Why this text's code needs a person's approval whatever the policy says ("" when it
    # does not): set for code replayed from a record this user did not sign.
    review: str = ""
    # The texts of choices 2.. of a request that asked for several (``CallModel.n``), in index
    # order; fewer than asked when the endpoint gave fewer (one that ignores ``n`` gives none).
    alternatives: tuple[str, ...] = ()

    @property
    def came(self) -> bool:
        """Whether a reply came: not a call that failed (``NO_ANSWER``) or that the person stopped
        (``STOPPED``), each said by the driver already."""
        return self.finish_reason not in (NO_ANSWER, STOPPED)


@dataclass(frozen=True)
class ErrorInfo:
    """An exception raised by generated code, as data."""

    ename: str
    evalue: str
    traceback: str  # ANSI stripped, may be long; the prompt truncates it
    lineno: int | None = None

    @property
    def signature(self) -> tuple[str, str, int | None]:
        # What "the same error" means: a fix request after it says the last change did not help.
        return (self.ename, self.evalue, self.lineno)

    def one_line(self) -> str:
        where = f" (line {self.lineno})" if self.lineno else ""
        return f"{self.ename}: {self.evalue}{where}"


@dataclass(frozen=True)
class ExecutionResult:
    """What running one block of code produced."""

    output: str = ""  # stdout + stderr interleaved, possibly head+tail cut
    result: str | None = None  # text repr of the last expression's value
    displays: tuple[str, ...] = ()  # short text stand-ins for rich outputs
    error: ErrorInfo | None = None
    seconds: float = 0.0
    notes: tuple[str, ...] = ()  # things the executor wants said (e.g. output cut)
    # Full mime bundles for frontends that insert real cells; never sent to the model.
    outputs: tuple[dict[str, Any], ...] = ()
    # The figures it showed, in words (executors/capture.py's figure_words): what a model
    # that cannot see them is told.
    figures: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class CellRecord:
    """A notebook cell as the context describes it."""

    source: str
    output: str = ""
    kind: str = "code"  # "markdown" for a notebook file's text cells
    label: str = ""  # "In [12]" / "cell 7": how the user would point at it
