"""Each DABench question twice with the same model: through the loop, and as a one-shot baseline.

The loop is the run every driver uses (``Run`` + ``run_async``, as in ``harness.Worker``), with an
answer in words at the end (``answer``, 'always' by default: the benchmark grades a final
response).  What is graded is what a user is shown: the successful cells' printed output and
values, then the answer in words (the last ``@name[value]`` of a name counts, so the final words
win over a print).  The baseline is one request with a minimal system prompt and no notebook
context; the code of its python blocks runs once, in order, in a fresh namespace, stopping at
the first error; graded is the reply's text, then what the code printed.

Both run in the same kernel, reset in between, with the working directory a folder of the run's
own that holds only the question's table (a symbolic link, no copy): a notebook next to its
data file, as DA-Agent gives its agent the one file's path.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.core import sameresult
from jupyter_ai_ci.errors import AICIError, KernelError
from jupyter_ai_ci.events import ExecutionResult
from jupyter_ai_ci.model.client import OpenAIClient
from jupyter_ai_ci.run.report import Timings
from jupyter_ai_ci.run.flow import RemoteKernel, run_async
from jupyter_ai_ci.run.request import Run
from jupyter_ai_ci.run.session import Session

from .dabench import TABLES, Question, grade
from .harness import _RESET, BenchConfig, FirstResult, RecordingClient, Worker, agreement, unspent
from .oneshot import one_shot
from .pool import run_pool

# The words a run that was not sure ends with (core/loop.py): the other candidates' results, listed
# for the person to compare.  They are not the answer, so they are not graded: the benchmark takes
# a name's last ``@name[value]``, and an alternative's would stand in for the answer given.
NOT_SURE = "\n\n⚠ Not sure:"


def graded(response: str, labels: tuple[tuple[str, str], ...]) -> dict[str, bool]:
    """The benchmark's grade of the answer a response gives (without a "not sure" list of others)."""
    return grade(response.split(NOT_SURE, 1)[0], labels)


ONE_SHOT_SYSTEM = ("Write Python code that answers the question. Put it in one ```python block. "
                   "The code must print the final answer in the format the question gives.")


@dataclass
class Answered:
    """One way of answering one question, graded."""

    way: str  # "loop" or "one-shot"
    status: str  # loop: its outcome ("success" is shown ✓, "answered": words, no code); one-shot: ran/raised/no-code
    correct: dict[str, bool]  # each sub-question's name -> right
    response: str  # what was graded
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_seconds: float = 0.0
    seconds: float = 0.0  # wall time of this way, model and code included
    error: str = ""
    agreement: str = ""  # with candidates: harness.agreement ("agreed", "disagree", …)
    first_seconds: float = 0.0  # when its first result was shown (harness.FirstResult); 0: at the end
    unspent: int = 0  # harness.unspent: retries a failed run left though the model never said it cannot
    declined: bool = False  # the run ended because the model said it cannot
    outputs: str = ""  # loop: what its cells showed, without the answer in words
    # What each attempt that ran cleanly showed as its result (core/sameresult.shown), in order: with
    # two candidates, the first's and the second's, then the first's again when it was applied anew
    # (they differed, or the second failed: ``agreement`` says which), so a change to how results
    # are compared can be measured on the same candidates with no model call.
    shown: list[str] = field(default_factory=list)

    @property
    def right(self) -> bool:
        return bool(self.correct) and all(self.correct.values())


@dataclass
class QuestionRun:
    id: int
    level: str
    file_name: str
    ways: list[Answered] = field(default_factory=list)


def _shown(result: ExecutionResult) -> str:
    """What a cell shows as text: its printed output and its value."""
    return "\n".join(part for part in (result.output, result.result or "") if part.strip())


class DabenchWorker(Worker):
    """A harness worker (its own kernel, the shared model) that answers DABench questions."""

    def __init__(self, config: BenchConfig, data: Path, answer: str, candidates: int = 1) -> None:
        super().__init__(config)
        self.data, self.answer, self.candidates = data, answer, candidates

    async def _fresh(self, question: Question) -> None:
        """A new notebook whose working directory holds the question's table, and nothing else."""
        assert self.executor is not None
        folder = self.config.data_dir / f"q{question.id}"
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / question.file_name
        if not link.exists():
            link.symlink_to((self.data / TABLES / question.file_name).resolve())
        await self.executor.run(_RESET + f"os.chdir({str(folder.resolve())!r})\n", store_history=False)

    async def question(self, question: Question) -> QuestionRun:
        out = QuestionRun(question.id, question.level, question.file_name)
        ways = [self.loop, *([self.consensus] if self.candidates > 1 else []), self.one_shot]
        # The loop and the candidates send the same first request: the way asked second finds it in
        # llama.cpp's prompt cache.  Their order alternates by question, so neither always gains;
        # the answers stay in the ways' order.
        order = list(range(len(ways)))
        if self.candidates > 1 and question.id % 2:
            order[0], order[1] = 1, 0
        answers: dict[int, Answered] = {}
        for index in order:
            way = ways[index]
            # The log says which way asked each call.
            if self.model is not None and isinstance(self.model[1], RecordingClient):
                self.model[1].task = f"dabench-{question.id}:{way.__name__}"
            await self._fresh(question)
            await self.chill()
            started = time.perf_counter()
            try:
                answered = await way(question)
            except AICIError as exc:
                if isinstance(exc, KernelError):
                    await self._restart_kernel()
                answered = Answered(way.__name__.replace("_", "-"), "error", grade("", question.labels), "",
                                    error=f"{type(exc).__name__}: {exc}")
            answered.seconds = round(time.perf_counter() - started, 3)
            answers[index] = answered
        out.ways = [answers[i] for i in range(len(ways))]
        return out

    async def consensus(self, question: Question) -> Answered:
        """The loop with candidates that must agree."""
        return await self.loop(question, self.candidates)

    async def loop(self, question: Question, candidates: int = 1) -> Answered:
        assert self.executor is not None and self.model is not None
        config, timings = self.config, Timings()
        # As harness.Worker: 'auto' policy (nobody is there to approve), no replay, no installs.
        settings = AICISettings(retries=config.retries, policy="auto", replay=False, answer=self.answer,
                                max_context_tokens=config.context_tokens, install_missing=False,
                                fix_from_start=config.fix_from_start, candidates=candidates)
        run = Run(Session(settings, self.model), question.request(), source="bench")
        started, first = time.perf_counter(), FirstResult()
        outcome = (await run_async(run, RemoteKernel(self.executor.evaluate), self.executor, first, None,
                                   timings)).outcome
        # A run that ended not answered shows its words as no answer: they are not graded.
        answer = "" if outcome.status == "failed" else outcome.answer
        response = "\n".join([*(_shown(c.result) for c in outcome.cells), answer])
        last = outcome.last_error
        status: str = outcome.status
        if status == "failed" and outcome.reason and not outcome.declined:
            status = "not-answered"  # a question about data the model would not write code for
        elif status == "success" and outcome.unchecked:
            status = "unchecked"  # shown with ⚠: the answer states a number no output showed
        sure = agreement(outcome.consensus)
        if status == "success" and sure in ("disagree", "unconfirmed"):
            status = "not-sure"  # shown with ⚠: the candidates disagree, or none confirmed it
        return Answered("loop" if candidates == 1 else "consensus", status, graded(response, question.labels), response,
                        len(outcome.attempts), outcome.usage.prompt_tokens, outcome.usage.completion_tokens,
                        round(timings.model, 3),
                        error=last.one_line() if last and outcome.status != "success" else "",
                        agreement=sure, first_seconds=round((first.at or time.perf_counter()) - started, 3),
                        unspent=unspent(outcome), declined=outcome.declined,
                        outputs="\n".join(_shown(c.result) for c in outcome.cells),
                        shown=[sameresult.shown(a.results) for a in outcome.attempts if a.ok])

    async def one_shot(self, question: Question) -> Answered:
        assert self.executor is not None and self.model is not None
        once = await one_shot(self.model[1], self.executor, ONE_SHOT_SYSTEM, question.request())
        response = "\n".join([once.text, *(_shown(r) for r in once.results)])
        return Answered("one-shot", once.status, graded(response, question.labels), response, 1,
                        once.usage.prompt_tokens, once.usage.completion_tokens, once.model_seconds,
                        error=once.error)


async def run_dabench(questions: Sequence[Question], data: Path, config: BenchConfig, answer: str = "always",
                      progress: Callable[[QuestionRun, int, int], None] | None = None,
                      candidates: int = 1) -> list[QuestionRun]:
    """Every question, loop then baseline, ``config.jobs`` kernels at a time; results in question order."""
    assert config.endpoint is not None, "DABench needs a model: --model NAME"
    client = config.client or OpenAIClient(config.endpoint)
    shared = (config.endpoint, RecordingClient(client, config.log) if config.log else client)

    async def call(worker: DabenchWorker, question: Question) -> QuestionRun:
        return await worker.question(question)

    return await run_pool(questions, config.jobs, shared, lambda: DabenchWorker(config, data, answer, candidates),
                          call, progress)


def as_records(runs: list[QuestionRun]) -> list[dict[str, Any]]:
    return [asdict(r) for r in runs]
