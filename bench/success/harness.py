"""Run tasks through the agent loop in real kernels and record what happened.

The same pieces as ``jupyter ai-ci run``: a ``KernelExecutor`` (local kernel or
gateway), the in-kernel context, ``adrive`` with asyncio.  ``jobs`` workers
each own a kernel (and, in scripted mode, their own scripted server, so
replies meant for one run never reach another); between tasks a worker
resets its kernel's namespace instead of starting a new kernel, which costs
a second or two each.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.drivers.headless import KernelOptions, start_kernel
from jupyter_ai_ci.errors import AICIError, KernelError
from jupyter_ai_ci.executors.connection import KernelConnection
from jupyter_ai_ci.executors.kernel import KernelExecutor
from jupyter_ai_ci.events import Message, ModelReply, Outcome
from jupyter_ai_ci.model.client import AsyncModelClient, OpenAIClient, TextCallback
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.events import Notice
from jupyter_ai_ci.run.report import SilentReporter, Timings
from jupyter_ai_ci.run.flow import RemoteKernel, run_async
from jupyter_ai_ci.run.request import Options, Run
from jupyter_ai_ci.run.session import Session
from jupyter_ai_ci.testing import ScriptedOpenAIServer

from . import answer as answer_module
from .followups import ask_before, scripted
from .oneshot import SUITE_SYSTEM, one_shot
from .pool import run_pool
from .schedules import replies
from .tasks import Task

_MARK = "\x02answer\x03"
_FETCH = inspect.getsource(answer_module) + f"""
import json as _json
print({_MARK!r} + _json.dumps(to_jsonable(globals().get('answer', MISSING)), default=str))
"""
# Each task starts as a fresh notebook would: no variables and no history.  `%reset -f` keeps the
# input history, so the next task's context would list the last task's cells, whose variables are
# gone: the model then uses names that no longer exist, and results depend on the task order.
_RESET = "get_ipython().reset(new_session=True)\nimport os, matplotlib.pyplot as _plt\n_plt.close('all')\n"
# --no-descriptions: the tracker made now (it would put the hook back when first made), then the
# hook that describes figures taken off; the model reads "[displayed image/png …]" as before #40.
_UNDESCRIBED = ("from jupyter_ai_ci.context import figurehook as _fh, tracker as _tr\n"
                "_tr.tracker_for(get_ipython())\n_fh.unwatch(get_ipython())\n")
# And back on, for a described task after an undescribed one in the same kernel (--descriptions both).
_DESCRIBED = "from jupyter_ai_ci.context import figurehook as _fh\n_fh.watch(get_ipython())\n"


@dataclass
class TaskRun:
    task: str
    category: str
    schedule: str  # "model" for a real endpoint
    status: str  # the loop's outcome, or "error" (model or kernel failure)
    attempts: int
    correct: bool  # ran without error and the checker accepts the answer
    silent_wrong: bool  # ran without error, and the checker rejects the answer
    prompt_tokens: int
    completion_tokens: int
    model_seconds: float
    execute_seconds: float
    own_seconds: float
    executions: int  # the loop's kernel executions (not the harness's own)
    error: str = ""
    candidates: int = 1  # candidates that must agree (AICISettings.candidates); 0: the one-shot baseline
    # With candidates: "agreed", "disagree", "unconfirmed" (the others did not run), "single" (one
    # by design: side effects, nothing to compare); "" without.  Only "agreed" and "single" show ✓.
    agreement: str = ""
    seconds: float = 0.0  # the run's wall time
    # When the first result was shown: the first candidate's ("checking…"), else the run's end.
    first_seconds: float = 0.0
    unspent: int = 0  # retries a failed run left unused though the model never said it cannot (#37: none should)
    declined: bool = False  # the run ended because the model said it cannot


class FirstResult(SilentReporter):
    """Notes when a run first shows a result: with candidates, the first one's, marked "checking…"
    while the others run (#28 asks it within 1.1x of today's request); else the run's end."""

    def __init__(self) -> None:
        self.at: float | None = None

    def notice(self, notice: Notice) -> None:
        if notice.kind == "candidate" and self.at is None:  # the vote's first notice is candidate 1's result
            self.at = time.perf_counter()


def unspent(outcome: Outcome) -> int:
    """The retries a failed run did not spend, unless the model said it cannot (then ending early is
    right: it was not asked to pretend); 0 for every other run.  Issue #37 wants none above 0."""
    return outcome.retries_left if outcome.status == "failed" and not outcome.declined else 0


def agreement(consensus: Any) -> str:
    """How sure the outcome said it was, as one word (``TaskRun.agreement``)."""
    if consensus is None:
        return ""
    if consensus.agreed:
        return "agreed"
    if consensus.note:
        return "single"
    return "disagree" if len(consensus.groups) > 1 else "unconfirmed"


@dataclass
class Job:
    task: Task
    schedule: str
    candidates: int = 1  # 0: the one-shot baseline (oneshot.py), not the loop
    described: bool | None = None  # figures described in the kernel (None: BenchConfig.described)
    fresh: bool = False  # a follow-up task's last request asked as after New chat: the whole context


@dataclass
class BenchConfig:
    data_dir: Path
    retries: int = 5
    jobs: int = 1
    endpoint: Endpoint | None = None  # None: scripted model
    client: AsyncModelClient | None = None  # the endpoint's client, when it is not a plain OpenAIClient
    gateway_url: str = ""
    gateway_token: str = ""
    timeout: float = 120.0
    context_tokens: int = 3000
    fix_from_start: str = "auto"  # AICISettings.fix_from_start ('always' for the local model: its 'auto')
    log: Path | None = None  # every request and reply, one JSON line each (--log)
    described: bool = True  # figures described in the kernel (False: --no-descriptions, the baseline of #40)
    # Empty the model server's prompt cache before each run (the local model): a temperature-0 reply
    # differs when the whole prompt is cached (bench_cache_determinism.py), and the way asked second
    # would otherwise read the first way's prompt from the cache.
    cold: bool = False


class RecordingClient:
    """A model client that appends each exchange to a JSON-lines file: prompts are tuned from
    what the model was actually sent, not from what we think the context builder writes."""

    def __init__(self, inner: AsyncModelClient, path: Path) -> None:
        self.inner, self.path = inner, path
        self.task = ""  # set by the worker before each run (one worker when logging is useful)

    async def acomplete(self, messages: Sequence[Message], on_text: TextCallback | None = None,
                        temperature: float | None = None, n: int = 1) -> ModelReply:
        started = time.perf_counter()
        reply = await self.inner.acomplete(messages, on_text, temperature, n=n)
        # Each call's own seconds: what one call costs (the answer in words, a candidate) is read from the log.
        record = {"task": self.task, "seconds": round(time.perf_counter() - started, 3),
                  "messages": [m.as_dict() for m in messages], "reply": reply.text,
                  "alternatives": list(reply.alternatives), "temperature": temperature, "n": n,
                  "usage": [reply.usage.prompt_tokens, reply.usage.completion_tokens]}
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        return reply


class Worker:
    def __init__(self, config: BenchConfig) -> None:
        self.config = config
        self.server: ScriptedOpenAIServer | None = None
        self.kernel: KernelConnection | None = None
        self.executor: KernelExecutor | None = None
        self.model: tuple[Endpoint, AsyncModelClient] | None = None

    async def start(self, shared: tuple[Endpoint, AsyncModelClient] | None) -> None:
        if shared is None:
            self.server = ScriptedOpenAIServer().start()
            endpoint = Endpoint(model="scripted", base_url=self.server.base_url, max_retries=0)
            self.model = (endpoint, OpenAIClient(endpoint))
        else:
            self.model = shared
        await self._start_kernel()

    async def _start_kernel(self) -> None:
        options = KernelOptions(gateway_url=self.config.gateway_url, gateway_token=self.config.gateway_token)
        self.kernel = await start_kernel(options, self.config.data_dir)
        self.executor = KernelExecutor(self.kernel, timeout=self.config.timeout)

    async def stop(self) -> None:
        if self.kernel is not None:
            await self.kernel.shutdown()
        if self.server is not None:
            self.server.stop()

    async def run(self, job: Job) -> TaskRun:
        assert self.executor is not None and self.model is not None
        task, config = job.task, self.config
        if self.server is not None:
            self.server.script(*scripted(task), *replies(task, job.schedule, config.retries))
        chdir = f"os.chdir({str(config.data_dir.resolve())!r})\n"
        described = config.described if job.described is None else job.described
        await self.executor.run(_RESET + chdir + (_DESCRIBED if described else _UNDESCRIBED), store_history=False)
        if isinstance(self.model[1], RecordingClient):
            self.model[1].task = task.id
        await self.chill()
        if job.candidates == 0:
            return await self._one_shot(task, job.schedule)
        timings = Timings()
        # Explicitly 'auto': the benchmark measures the model and the loop, and nobody is there to
        # approve; the default 'ask-risky' would refuse tasks whose code the scan flags.  No replay:
        # every task must reach the model.  The run is the same one every driver uses.
        # No answer in words either: the checker reads `answer` from the kernel, and the extra call
        # would only add time (a minute a task on the local model).
        settings = AICISettings(retries=config.retries, policy="auto", replay=False, answer="never",
                                max_context_tokens=config.context_tokens, install_missing=False,
                                fix_from_start=config.fix_from_start, candidates=job.candidates)
        started = time.perf_counter()
        try:
            session = Session(settings, self.model)
            if task.before:  # a follow-up's earlier requests: neither graded nor timed
                await ask_before(session, task, self.executor, Timings())
                started = time.perf_counter()
            run = Run(session, task.request(), Options(new=job.fresh), source="bench")
            first = FirstResult()
            result = await run_async(run, RemoteKernel(self.executor.evaluate), self.executor, first, None, timings)
            outcome = result.outcome
        except AICIError as exc:
            if isinstance(exc, KernelError):
                await self._restart_kernel()
            return TaskRun(task.id, task.category, job.schedule, "error", 0, False, False, 0, 0,
                           timings.model, timings.execute, timings.own, 0, f"{type(exc).__name__}: {exc}")
        got = await self._answer() if outcome.status == "success" else None
        ran = outcome.status == "success"
        correct = ran and task.passes(got, config.data_dir)
        last = outcome.last_error
        sure = agreement(outcome.consensus) in ("", "agreed", "single")
        return TaskRun(
            task.id, task.category, job.schedule, outcome.status, len(outcome.attempts), correct,
            ran and not correct and sure, outcome.usage.prompt_tokens, outcome.usage.completion_tokens,
            timings.model, timings.execute, timings.own,
            sum(len(a.results) for a in outcome.attempts),
            last.one_line() if last and not ran else "", job.candidates, agreement(outcome.consensus),
            round((ended := time.perf_counter()) - started, 3), round((first.at or ended) - started, 3),
            unspent(outcome), outcome.declined,
        )

    async def _one_shot(self, task: Task, schedule: str) -> TaskRun:
        """The one-shot baseline: the task's request alone, its code run once; checked as the loop's."""
        assert self.executor is not None and self.model is not None
        started = time.perf_counter()
        try:
            once = await one_shot(self.model[1], self.executor, SUITE_SYSTEM, task.request())
        except AICIError as exc:
            if isinstance(exc, KernelError):
                await self._restart_kernel()
            return TaskRun(task.id, task.category, schedule, "error", 0, False, False, 0, 0, 0.0, 0.0, 0.0, 0,
                           f"{type(exc).__name__}: {exc}", candidates=0)
        ran = once.status == "ran"
        correct = ran and task.passes(await self._answer(), self.config.data_dir)
        seconds = round(time.perf_counter() - started, 3)
        # Shown as the loop would: code that ran is "done", code that raised has failed, none is words.
        status = {"ran": "success", "raised": "failed", "no-code": "answered"}[once.status]
        ran_for = round(sum(r.seconds for r in once.results), 3)  # as the kernel measured each block
        return TaskRun(task.id, task.category, schedule, status, 1, correct, ran and not correct,
                       once.usage.prompt_tokens, once.usage.completion_tokens, once.model_seconds, ran_for, 0.0,
                       len(once.results), once.error, candidates=0, seconds=seconds, first_seconds=seconds)

    async def chill(self) -> None:
        """``BenchConfig.cold``: one short unrelated request, so the next one reads its prompt anew."""
        if self.config.cold and self.model is not None:
            await self.model[1].acomplete([Message("system", "Answer in one word."), Message("user", "Ready?")])

    async def _answer(self) -> Any:
        assert self.executor is not None
        result = await self.executor.run(_FETCH, store_history=False, max_output_chars=200_000)
        if _MARK not in result.output:
            return None
        # One line after the mark: anything else the kernel printed meanwhile (a thread the
        # generated code started, say) is not the answer, and never stops the benchmark.
        line = result.output.split(_MARK, 1)[1].split("\n", 1)[0]
        try:
            return json.loads(line)
        except ValueError:
            return None

    async def _restart_kernel(self) -> None:
        if self.kernel is not None:
            try:
                await self.kernel.shutdown()
            except (AICIError, OSError):
                pass
        await self._start_kernel()


async def run_bench(jobs: list[Job], config: BenchConfig,
                    progress: Callable[[TaskRun, int, int], None] | None = None) -> list[TaskRun]:
    """Every job, ``config.jobs`` at a time; results in the order of ``jobs``."""
    shared: tuple[Endpoint, AsyncModelClient] | None = None
    if config.endpoint is not None:
        client: AsyncModelClient = config.client or OpenAIClient(config.endpoint)
        shared = (config.endpoint, RecordingClient(client, config.log) if config.log else client)

    async def call(worker: Worker, job: Job) -> TaskRun:
        return await worker.run(job)

    return await run_pool(jobs, config.jobs, shared, lambda: Worker(config), call, progress)


def as_records(runs: list[TaskRun]) -> list[dict[str, Any]]:
    return [asdict(r) for r in runs]
