"""The agent loop: decides what happens next and does no I/O.

``agent_loop`` is a generator.  It yields an action (``CallModel``,
``Execute``, ``Notice``), and the driver performs it and sends back the result
(a ``ModelReply``, an ``ExecutionResult``, or ``None`` for a notice).  When the
run ends the generator returns an ``Outcome``.  The same loop serves the
magic (driven synchronously), the server and the command line (driven with
asyncio), and the unit tests (driven by a list of canned results).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from . import prompts
from .events import (
    Action,
    Attempt,
    CallModel,
    Cell,
    ErrorInfo,
    Execute,
    ExecutionResult,
    Message,
    ModelReply,
    Notice,
    Outcome,
    Usage,
)
from .text import extract_code_blocks, head_tail, python_blocks

LoopGen = Generator[Action, Any, Outcome]


@dataclass(frozen=True)
class LoopSettings:
    retries: int = 2  # fix attempts after a failed attempt, per step
    steps: int = 1
    run: bool = True
    max_output_chars: int = 4000  # of a step's output fed back to the model
    max_traceback_chars: int = 8000


def describe_result(result: ExecutionResult, limit: int) -> str:
    """The text the model is told about one block's outputs."""
    parts = []
    if result.output:
        parts.append(result.output.rstrip("\n"))
    parts.extend(f"[displayed {d}]" for d in result.displays)
    if result.result is not None:
        parts.append(f"Out: {result.result}")
    return head_tail("\n".join(parts), limit) if parts else prompts.NO_OUTPUT


def fix_request(code: Sequence[str], results: Sequence[ExecutionResult],
                settings: LoopSettings) -> str:
    failed = results[-1]
    error = failed.error
    assert error is not None
    if error.ename == "SyntaxError":
        headline = f"The code raised SyntaxError. {prompts.SYNTAX_NOTE}"
    else:
        headline = f"The code you wrote raised {error.ename}."
    if len(code) > 1:
        headline += f" Block {len(results)} of {len(code)} failed; the blocks before it ran."
    joined = "\n\n".join(code)
    return prompts.FIX.format(
        failed=headline,
        code=joined,
        output=head_tail(failed.output, settings.max_output_chars) or prompts.NO_OUTPUT,
        traceback=head_tail(error.traceback, settings.max_traceback_chars),
    )


def agent_loop(
    request: str,
    context: str,
    settings: LoopSettings,
    history: Sequence[Message] = (),
) -> LoopGen:
    """Run one ``%%ask`` request to its end.  See the module docstring."""
    messages: list[Message] = [Message("system", prompts.SYSTEM), *history]
    messages.append(Message("user", prompts.REQUEST.format(context=context, request=request).strip()))
    attempts: list[Attempt] = []
    cells: list[Cell] = []
    usage = Usage()
    requests = 0

    def outcome(status: Any, answer: str = "", early: bool = False) -> Outcome:
        return Outcome(
            status=status,
            cells=tuple(cells),
            answer=answer,
            attempts=tuple(attempts),
            usage=usage,
            requests=requests,
            early_stop=early,
            messages=tuple(messages),
        )

    for step in range(1, settings.steps + 1):
        purpose: Literal["first", "next-step"] = "first" if step == 1 else "next-step"
        reply: ModelReply = yield CallModel(tuple(messages), purpose)
        requests += 1
        usage += reply.usage
        messages.append(Message("assistant", reply.text))
        fixes = 0
        previous: ErrorInfo | None = None
        step_results: list[ExecutionResult] = []
        while True:
            code = python_blocks(reply.text)
            others = sorted({b.language for b in extract_code_blocks(reply.text)
                             if b.language and not b.is_python})
            if others:
                yield Notice("other-languages", f"shown, not run: {', '.join(others)} block(s)",
                             step=step)
            if not code:
                if fixes:
                    # The model answered a traceback with prose: the step failed.
                    return outcome("failed", answer=reply.text)
                if step == 1:
                    yield Notice("no-code", "the model answered without code", step=step)
                    return outcome("answered", answer=reply.text)
                return outcome("success", answer=reply.text)
            if not settings.run:
                cells.extend(Cell(c, step, ExecutionResult()) for c in code)
                return outcome("not-run", answer=reply.text)

            number = len(attempts) + 1
            yield Notice("attempt", f"attempt {number}: running {len(code)} cell"
                         f"{'' if len(code) == 1 else 's'}", attempt=number, step=step)
            results: list[ExecutionResult] = []
            for index, block in enumerate(code):
                result: ExecutionResult = yield Execute(block, number, step, index)
                results.append(result)
                if not result.ok:
                    break
            attempt = Attempt(number, step, tuple(code), tuple(results))
            attempts.append(attempt)
            if attempt.ok:
                cells.extend(Cell(c, step, r) for c, r in zip(code, results, strict=True))
                step_results = results
                break

            error = attempt.error
            assert error is not None
            early = previous is not None and previous.signature == error.signature
            if fixes >= settings.retries or early:
                return outcome("failed", early=early)
            fixes += 1
            previous = error
            left = settings.retries - fixes + 1
            yield Notice(
                "retrying",
                f"attempt {number} failed: {error.one_line()} — asking the model for a fix "
                f"({left} {'try' if left == 1 else 'tries'} left)",
                attempt=number,
                step=step,
            )
            messages.append(Message("user", fix_request(code, results, settings)))
            reply = yield CallModel(tuple(messages), "fix")
            requests += 1
            usage += reply.usage
            messages.append(Message("assistant", reply.text))

        if step < settings.steps:
            output = "\n".join(describe_result(r, settings.max_output_chars) for r in step_results)
            messages.append(Message("user", prompts.NEXT_STEP.format(
                output=head_tail(output, settings.max_output_chars),
                step=step + 1,
                steps=settings.steps,
            )))
            yield Notice("step", f"step {step} done; asking for step {step + 1}", step=step)
    return outcome("success")
