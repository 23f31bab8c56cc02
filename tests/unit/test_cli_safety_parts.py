"""Pure parts of the command line's safety: budgets, the terminal approver, remote transactions."""

from __future__ import annotations

import asyncio
import io
from types import SimpleNamespace
import json
import os
import pty
from typing import Any

import pytest

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.errors import BudgetExceeded
from jupyter_ai_ci.events import Outcome, Usage
from jupyter_ai_ci.run.session import Session
from jupyter_ai_ci.drivers.terminal import NO_TTY, TerminalApprover
from jupyter_ai_ci.events import AskApproval
from jupyter_ai_ci.executors.transact import RemoteTransactions

REQUEST = AskApproval(("import os\nos.system('ls')",), ("os.system: runs a shell command (line 2)",), 1)


def test_token_budget_per_request_and_for_the_session() -> None:
    assert Session(AICISettings()).token_budget() == (0, "")  # no budget
    assert Session(AICISettings(max_tokens_per_request=500)).token_budget() == (500, "the request's budget is 500")
    session = Session(AICISettings(max_tokens_per_request=500, max_tokens_per_session=800))
    session.usage.add("a", "m", Outcome("success", usage=Usage(400, 200)), replayed=False)
    assert session.token_budget() == (200, "the session has 200 of its 800 left")  # the smaller
    session.usage.add("b", "m", Outcome("success", usage=Usage(150, 50)), replayed=False)
    with pytest.raises(BudgetExceeded, match="budget .800. is spent"):
        session.token_budget()


def test_no_terminal_is_an_immediate_refusal() -> None:
    stdin = io.StringIO("y\n")  # not a terminal: its "y" must not count
    approval = asyncio.run(TerminalApprover("", io.StringIO(), asyncio.Lock(), stdin).aapprove(REQUEST))
    assert not approval.granted and approval.why == NO_TTY
    # An install: no policy installs unasked, so the way out is --yes or the allow list, by name.
    install = AskApproval(("%pip install xmltodict",), ("module 'xmltodict' is not installed",), 1, "install")
    approval = asyncio.run(TerminalApprover("", io.StringIO(), asyncio.Lock(), stdin).aapprove(install))
    assert not approval.granted and "--policy" not in approval.why
    assert approval.why.endswith("pass --yes to approve, or allow the package: --allow 'pip:xmltodict'")
    from jupyter_ai_ci.safety.approval import StdinApprover
    headless = SimpleNamespace(kernel=SimpleNamespace(_allow_stdin=False))  # a kernel whose frontend has no stdin
    magic = StdinApprover(headless, lambda text: None).approve(install)
    assert not magic.granted and magic.why.endswith("%config AskMagics.allow = ['pip:xmltodict']"), magic.why


@pytest.mark.parametrize("typed, granted", [(b"y\n", True), (b"YES\n", True), (b"\n", False), (b"n\n", False)])
def test_a_terminal_answer_without_blocking_the_event_loop(typed: bytes, granted: bool) -> None:
    main, terminal = pty.openpty()
    shown = io.StringIO()

    async def scenario() -> tuple[bool, int]:
        with open(terminal, closefd=False) as stdin:
            ticks = 0

            async def other_notebook() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0.01)

            other = asyncio.ensure_future(other_notebook())
            asking = asyncio.ensure_future(TerminalApprover("[a] ", shown, asyncio.Lock(), stdin).aapprove(REQUEST))
            await asyncio.sleep(0.2)  # nobody has answered yet; the loop must keep running
            assert not asking.done()
            os.write(main, typed)
            approval = await asking
            other.cancel()
            return approval.granted, ticks

    try:
        got, ticks = asyncio.run(scenario())
    finally:
        os.close(terminal)
        os.close(main)
    assert got == granted and ticks >= 5
    assert shown.getvalue() == ("[a] ⚠ attempt 1 needs approval:\n[a]    - os.system: runs a shell command (line 2)\n"
                                "[a]    ┆ import os\n[a]    ┆ os.system('ls')\n[a] Run this code? [y/N] ")


class FakeKernel:
    """A ``KernelConnection`` that answers user expressions from a list of reply contents."""

    description = "fake"

    def __init__(self, *replies: dict[str, Any]) -> None:
        self.replies = list(replies)
        self.sent: list[str] = []

    async def send_expressions(self, expressions: dict[str, str]) -> str:
        self.sent.append(expressions["x"])
        return str(len(self.sent))

    async def receive_reply(self, msg_id: str, timeout: float) -> dict[str, Any] | None:
        return self.replies.pop(0)

    async def is_alive(self) -> bool:
        return True


def ok(report: dict[str, Any]) -> dict[str, Any]:
    expression = {"status": "ok", "data": {"text/plain": repr(json.dumps(report))}}
    return {"status": "ok", "user_expressions": {"x": expression}}


def test_remote_transactions_round_trips() -> None:
    kernel = FakeKernel({"status": "aborted"}, ok({"saved": ["df"]}), ok({"restored": ["df"]}))
    tx = RemoteTransactions(kernel)  # type: ignore[arg-type]

    async def scenario() -> None:
        assert (await tx.checkpoint(["df['x'] *= 2"])).saved == ("df",)  # asked again after "aborted"
        assert (await tx.rollback()).restored == ("df",)
        assert not (await tx.rollback()).supported  # no checkpoint held: nothing sent
        await tx.commit()

    asyncio.run(scenario())
    assert len(kernel.sent) == 3 and '"op": "rollback"' in kernel.sent[2]


def test_a_kernel_without_jupyter_ai_ci_cannot_undo_and_is_asked_once() -> None:
    missing = {"status": "ok", "user_expressions": {"x": {"status": "error", "ename": "ModuleNotFoundError"}}}
    kernel = FakeKernel(missing)
    tx = RemoteTransactions(kernel)  # type: ignore[arg-type]

    async def scenario() -> None:
        assert not await tx.probe()
        assert not (await tx.checkpoint(["x = 1"])).supported
        assert not (await tx.rollback()).supported

    asyncio.run(scenario())
    assert len(kernel.sent) == 1
