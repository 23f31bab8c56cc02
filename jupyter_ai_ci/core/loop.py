"""The agent loop: decides what happens next and does no I/O.

``agent_loop`` is a generator.  It yields an action (``CallModel``,
``Execute``, ``Notice``, and around each attempt ``AskApproval``,
``Checkpoint``, ``Commit``/``Rollback``, ``Install``), and the driver performs
it and sends back the result (a ``ModelReply``, an ``ExecutionResult``, an
``Approval``, a ``TransactionReport``, or ``None``).  Policy -- syntax check,
risk scan, approval, budgets -- is decided here, so every driver obeys it.  When the
run ends the generator returns an ``Outcome``.  The same loop serves every driver (the magic
synchronously; the server, the command line and MCP with asyncio) and the unit tests.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import replace
from typing import Any, Literal

from jupyter_ai_ci.core import prompts
from jupyter_ai_ci.core.answer import prose, stated, wants_answer
from jupyter_ai_ci.core.attempt import install, run_attempt
from jupyter_ai_ci.core.chartcheck import chart_error
from jupyter_ai_ci.core.check import Checked, check
from jupyter_ai_ci.core.consensus import sureness
from jupyter_ai_ci.core.fixes import code_key, describe_result, fix_request, restart_note
from jupyter_ai_ci.core.grounding import flagged, unsupported_numbers
from jupyter_ai_ci.core.mends import Mends
from jupyter_ai_ci.core.nocode import no_code
from jupyter_ai_ci.core.pictures import allowed, seeing
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.core.steps import next_step
from jupyter_ai_ci.core.usage import over_budget as budget_problem
from jupyter_ai_ci.events import (
    Action, Attempt, CallModel, Cell, Consensus, ErrorInfo, ExecutionResult, LoopGen,
    Message, ModelReply, Notice, Outcome, Usage,
)
from jupyter_ai_ci.safety.missing import missing_module
from jupyter_ai_ci.text import extract_code_blocks, head_tail, python_blocks


def agent_loop(request: str, context: str, settings: LoopSettings, history: Sequence[Message] = ()) -> LoopGen:
    """Run one ``%%ask`` request to its end.  See the module docstring."""
    messages: list[Message] = [Message("system", prompts.SYSTEM), *history]
    messages.append(Message("user", prompts.REQUEST.format(context=context, request=request).strip()))
    opening = len(messages) - 1  # the request itself: a restart asks it again from here
    anew = tuple(messages)  # what each candidate is asked (core/consensus.py), before any restart
    consensus: Consensus | None = None
    attempts: list[Attempt] = []
    cells: list[Cell] = []
    usage = Usage()
    requests = 0
    approved: set[tuple[str, ...]] = set()
    installed: set[str] = set()
    fixes = 0  # the retries spent in this step: each fix asked for, and each reply asked again for code
    checked: Checked | None = None  # the first step's check, and the answer in words asked before it

    def outcome(status: Any, answer: str = "", early: bool = False, reason: str = "",
                unanswered: bool = False, unchecked: tuple[str, ...] = (), declined: bool = False) -> Outcome:
        return Outcome(
            status=status,
            cells=tuple(cells),
            answer=answer,
            attempts=tuple(attempts),
            usage=usage,
            requests=requests,
            early_stop=early,
            messages=tuple(messages),
            reason=reason,
            unanswered=unanswered,
            unchecked=unchecked,
            consensus=consensus,
            retries_left=settings.retries - fixes,
            declined=declined,
        )

    def grounded(answer: str, also: Sequence[ExecutionResult] = ()) -> Outcome:
        """Success, with the answer's numbers that no output showed flagged under it (``also``: the
        output the answer was said from, when the cells kept are another candidate's)."""
        # The earlier messages too: a follow-up's context holds only what changed (context/since.py).
        results = [*(c.result for c in cells), *also]
        shown = [request, context, *(m.content for m in history if m.role == "user"),
                 *(r.output for r in results), *(r.result or "" for r in results)]
        unchecked = unsupported_numbers(answer, shown)
        answer = flagged(answer, unchecked)
        if consensus is not None and not consensus.sure:  # the words say it as the status line does
            answer += f"\n\n⚠ Not sure: {sureness(consensus)}."
        return outcome("success", answer=answer, unchecked=unchecked)

    def over_budget() -> str:
        return budget_problem(settings, usage, messages)

    def shown(text: str, results: Sequence[ExecutionResult]) -> Generator[Action, Any, Message]:
        """A message about ``results``, with their pictures where allowed (only the newest keeps any)."""
        nonlocal settings
        images, settings = yield from allowed(results, settings, len(attempts) or 1)
        if images:
            messages[:] = [replace(m, images=()) for m in messages]
        return Message("user", text, images)

    def ask(text: str, purpose: Literal["fix", "again", "answer"] = "fix", temperature: float | None = None,
            restart: bool = False, results: Sequence[ExecutionResult] = ()) -> Generator[Action, Any, ModelReply | str]:
        """``text`` goes to the model as the next user message, its reply comes back; or, with nothing
        sent, why not: over the token budget (the unsent message is dropped too: the conversation kept
        for the next request holds only what was sent).
        ``restart``: the conversation goes back to the request, ``text`` added to it."""
        nonlocal requests, usage
        before = list(messages)
        if restart:
            del messages[opening + 1:]
            images = (yield from shown(text, results)).images
            messages[opening] = Message("user", f"{messages[opening].content}\n\n{text}", images)
        else:
            messages.append((yield from shown(text, results)))
        if why := over_budget():
            messages[:] = before
            return why
        sent = yield CallModel(tuple(messages), purpose, temperature)
        requests += 1
        usage += sent.usage
        messages.append(Message("assistant", sent.text))
        return sent  # type: ignore[no-any-return]

    def answer_from(results: Sequence[ExecutionResult]) -> Generator[Action, Any, ModelReply | None]:
        """The answer in words from ``results``' output; None: over the budget.  One that failed or
        was stopped (``NO_ANSWER``, ``STOPPED``) is neither counted nor kept."""
        nonlocal requests
        output = "\n".join(describe_result(r, settings.max_output_chars) for r in results)
        reply = yield from ask(prompts.ANSWER.format(output=head_tail(output, settings.max_output_chars)), "answer",
                               results=results)
        if isinstance(reply, str):
            return None  # the cells stand; an answer is not worth going over the budget
        if not reply.came:  # the driver said why
            requests -= 1
            del messages[-2:]
        return reply

    def forget() -> None:
        del messages[-2:]  # the last exchange (an answer in words the check did not keep)

    def answered(reply: ModelReply | None, also: Sequence[ExecutionResult] = ()) -> Outcome:
        """The run done with ``reply`` as its answer in words (said from ``also``, when not the cells')."""
        if reply is None:
            return outcome("success")
        if not reply.came:
            return outcome("success", unanswered=True)
        return grounded(prose(reply.text), also)

    for step in range(1, settings.steps + 1):
        purpose: Literal["first", "next-step"] = "first" if step == 1 else "next-step"
        if why := over_budget():
            return outcome("over-budget", reason=why)
        reply: ModelReply = yield CallModel(tuple(messages), purpose)
        requests += 1
        usage += reply.usage
        messages.append(Message("assistant", reply.text))
        fixes = 0
        previous: ErrorInfo | None = None
        step_results: list[ExecutionResult] = []
        rerun = False
        failed_code: set[tuple[str, ...]] = set()  # the code of this step's failed attempts
        repeated = False  # the model was asked again after sending back failed code
        mends = Mends()  # what the run changed in the model's code by itself (core/mends.py)
        while True:
            reply = mends.said(reply, messages)  # the conversation holds the code as it ran
            code = mends.code(python_blocks(reply.text))
            others = sorted({b.language for b in extract_code_blocks(reply.text)
                             if b.language and not b.is_python})
            if others and not rerun:
                yield Notice("other-languages", f"shown, not run: {', '.join(others)} block(s)",
                             step=step)
            again, rerun = rerun, False  # again: the same code after an install, on purpose
            if not code and (previous is not None or (step == 1 and settings.needs_code)):
                # A fix, or the first reply to a question about data, in words: asked again for code,
                # each time one of the retries, until they are spent or the model says it cannot.
                verdict = no_code(reply.text, fixes, settings.retries, fix=previous is not None)
                yield Notice("no-code" if verdict.end else "again", verdict.notice, attempt=len(attempts), step=step)
                if verdict.end:
                    return outcome("failed", answer=reply.text, reason=verdict.reason, declined=verdict.declined)
                fixes += 1
                asked = yield from ask(prompts.NEED_CODE, "again")
                if isinstance(asked, str):
                    return outcome("over-budget", reason=asked)
                reply = asked
                continue
            if not code:
                if step == 1:
                    yield Notice("no-code", "the model answered without code", step=step)
                    return outcome("answered", answer=reply.text)
                return grounded(reply.text)  # a later step's conclusion, after seeing the output
            if not settings.run:
                cells.extend(Cell(c, step, ExecutionResult()) for c in code)
                return outcome("not-run", answer=reply.text)

            key = code_key(code) if previous is not None else None  # once per attempt, when needed
            if not again and previous is not None and key in failed_code:
                # The fix is code that already failed: in the same state it fails the same way, so it
                # is not run; the model is asked again.  In the first step the request is asked anew,
                # the failure in words: a small model copies the code its own earlier replies hold (in
                # the conversation it sent the same code back more often).  Later steps need the results.
                # The first time is free; each time after is one of the retries, so the run ends with
                # them spent, not left (#37), and says why (``early_stop``).
                if repeated:
                    if fixes >= settings.retries:
                        return outcome("failed", early=True)
                    fixes += 1
                repeated = True
                restart = step == 1
                yield Notice("repeated", "the model sent back the code that failed; asking "
                             + ("the request again from the start" if restart else "it once more for a change"),
                             attempt=len(attempts), step=step)
                # At temperature 0 a small model answers the same prompt with the same code: this
                # one request is sampled (settings.repeat_temperature) so that it can come out different.
                retry = restart_note(attempts[-1]) if restart else prompts.REPEATED.format(error=previous.one_line())
                again_reply = yield from ask(retry, temperature=settings.repeat_temperature or None, restart=restart)
                if isinstance(again_reply, str):
                    return outcome("over-budget", reason=again_reply)
                reply = again_reply
                continue
            number = len(attempts) + 1
            voting = step == 1 and settings.candidates > 1  # the first step's result is voted on
            attempt = yield from run_attempt(code, number, step, settings, approved, reply.review, hold=voting,
                                             check=lambda results: chart_error(request, results))
            if isinstance(attempt, str):
                yield Notice("refused", attempt, attempt=number, step=step)
                return outcome("refused", reason=attempt)
            attempts.append(attempt)
            if attempt.ok and voting:
                settings = seeing(settings)
                checked = yield from check(attempt, request, anew, settings, approved, mends, over_budget,
                                           answer_from, forget)
                chosen = checked.vote
                attempts.extend(chosen.attempts)
                usage += chosen.usage
                requests += chosen.requests
                consensus = chosen.consensus
                if chosen.winner is None:  # the winner, run again to apply it, failed this time
                    return outcome("failed")
                attempt, code = chosen.winner, list(chosen.winner.code)
            if attempt.ok:
                cells.extend(Cell(c, step, r) for c, r in zip(code, attempt.results, strict=True))
                step_results = list(attempt.results)
                break

            error = attempt.error
            assert error is not None
            failed_code.add(key if key is not None else code_key(code))
            if mended := (yield from mends.find(attempt, step)):  # one right change: no model call
                yield Notice("install", f"attempt {number} failed: {error.one_line()} — {mended} "
                             "and running it again (no model call)", attempt=number, step=step)
                rerun = True
                continue
            missing = missing_module(error)
            if settings.install_missing and missing and missing.package not in installed:
                installed.add(missing.package)
                if (yield from install(missing, number, settings)):
                    rerun = True
                    continue  # the same code again, without asking the model
            if fixes >= settings.retries:
                return outcome("failed")
            fixes += 1
            same_error = previous is not None and previous.signature == error.signature
            previous = error
            left = settings.retries - fixes + 1
            yield Notice(
                "retrying",
                f"attempt {number} failed: {error.one_line()} — asking the model for a fix "
                f"({left} {'try' if left == 1 else 'tries'} left)",
                attempt=number,
                step=step,
            )
            if step == 1 and settings.fix_from_start:
                # The request anew, the failure in words: a small model shown its failed code copies it.
                fixed = yield from ask(restart_note(attempt, settings.max_output_chars), restart=True,
                                       results=attempt.results)
            else:
                fixed = yield from ask(fix_request(code, attempt.results, settings, attempt.notes, same_error),
                                       results=attempt.results)
            if isinstance(fixed, str):
                return outcome("over-budget", reason=fixed)
            reply = fixed

        if checked is not None and checked.answer is not None:
            return answered(checked.answer, checked.said_of)
        if consensus is not None and consensus.stopped:
            return outcome("success")  # a Stop: what ran is kept, and nothing more is asked
        if step < settings.steps:
            settings, asked = yield from next_step(code, step_results, step, settings)
            messages.append((yield from shown(asked, step_results)))
            yield Notice("step", f"step {step} done; asking for step {step + 1}", step=step)
    settings = seeing(settings)
    if not wants_answer(settings.answer, request, step_results, settings.sees):
        return outcome("success")
    if said := stated(request, step_results):
        return grounded(said)  # the output says it in the form asked: no call to say it again
    # One more call: the model has written code, not read its output; now it answers from it.
    return answered((yield from answer_from(step_results)))
