"""A long call is watched: progress at each attempt and at least every ``HEARTBEAT`` seconds,
and what the policy asks about put to the person through the client (MCP elicitation).

Clients time a silent call out (datalayer/jupyter-mcp-server #249); a progress notification
resets their clock.  The run's reporter is called synchronously, so its lines are queued and a
task sends them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel

from jupyter_ai_ci.events import Approval, AskApproval, CallModel, Execute, ExecutionResult, Notice, PURPOSE_LABELS
from jupyter_ai_ci.run.report import SilentReporter

HEARTBEAT = 4.0  # seconds; the bound is 5
_END = "\x00end"  # the last line a call's pump reads
HOW_TO_ALLOW = ("start the MCP server with --yes, or allow it in c.AICISettings.allow (the person's "
                "settings: never an argument the agent sends)")
# Inside Jupyter there is no --yes: the server's configuration is the person's.
HOW_TO_ALLOW_IN_SERVER = ("allow it in c.AICISettings.allow or c.AICISettings.policy of the Jupyter server's "
                          "configuration (the person's settings: never an argument the agent sends)")


class Progress(SilentReporter):
    """Reporter that sends the run's lines as MCP progress notifications."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.lines: asyncio.Queue[str] = asyncio.Queue()
        self.count = 0
        self.doing = "starting"
        self.started = time.monotonic()

    def notice(self, notice: Notice) -> None:
        self.lines.put_nowait(notice.text)

    def model_started(self, call: CallModel) -> None:
        self.doing = f"asking the model: {PURPOSE_LABELS[call.purpose]}"

    def executing(self, action: Execute) -> None:
        self.doing = f"running attempt {action.attempt}"

    def executed(self, action: Execute, result: ExecutionResult) -> None:
        self.doing = f"attempt {action.attempt} ran"

    def say(self, text: str) -> None:
        self.lines.put_nowait(text)

    async def _send(self, text: str) -> None:
        self.count += 1  # progress must grow with each notification
        with contextlib.suppress(Exception):  # a client that went away: the call's cancel says so
            await self.ctx.report_progress(self.count, None, text)

    async def _pump(self) -> None:
        while True:
            try:
                text = await asyncio.wait_for(self.lines.get(), HEARTBEAT)
            except asyncio.TimeoutError:
                text = f"{self.doing} ({time.monotonic() - self.started:.0f} s)"
            if text is _END:
                return
            await self._send(text)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Progress]:
        # Ended by a last line, not by cancelling: wait_for (3.10, 3.11) swallows a cancel that
        # arrives as its queue hands over a line, and the pump then ran on for a minute.
        task = asyncio.create_task(self._pump())
        try:
            yield self
        finally:
            self.lines.put_nowait(_END)  # after the call's last lines (the attempt's undo): they go out
            try:
                await asyncio.wait_for(task, 5.0)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                task.cancel()


class Decision(BaseModel):
    run_it: bool = False


class PicturesDecision(BaseModel):
    send_them: bool = False


class ClientApprover:
    """The policy's question to the person, through the client's elicitation; where the client
    cannot ask, the code is refused with the line that says how the person allows it."""

    def __init__(self, ctx: Any, how_to_allow: str = HOW_TO_ALLOW) -> None:
        self.ctx = ctx
        self.how_to_allow = how_to_allow

    def _can_ask(self) -> bool:
        session = getattr(getattr(self.ctx, "request_context", None), "session", None)
        caps = getattr(session, "client_capabilities", None)
        if caps is None:  # the 1.x SDK's session (Jupyter AI 3.2's server) keeps them in its client_params
            caps = getattr(getattr(session, "client_params", None), "capabilities", None)
        return caps is not None and getattr(caps, "elicitation", None) is not None

    async def aapprove(self, request: AskApproval) -> Approval:
        if request.kind == "pictures":
            return await self._pictures(request)
        if not self._can_ask():
            return Approval(False, f"needs approval, but this MCP client cannot ask you; {self.how_to_allow}")
        code = "\n\n".join(request.code)
        message = (f"An agent's run wants to execute code that {'; '.join(request.reasons)}:\n\n{code[:4000]}\n\n"
                   "Run it? (It is rolled back if it raises; the effects listed may not be.)")
        try:
            answer = await self.ctx.elicit(message, Decision)
        except Exception as exc:  # noqa: BLE001 - a client that failed to ask: refused, said why
            return Approval(False, f"the client could not ask you ({type(exc).__name__}); {self.how_to_allow}")
        if answer.action == "accept" and answer.data.run_it:
            return Approval(True, "approved through the MCP client", asked=True)
        return Approval(False, "declined through the MCP client", asked=True)

    async def _pictures(self, request: AskApproval) -> Approval:
        allow = "c.AICISettings.figures_to_hosted = 'yes' in the person's settings sends them"
        if not self._can_ask():
            return Approval(False, f"this MCP client cannot ask you; {allow}")
        try:
            answer = await self.ctx.elicit(f"An agent's run: {request.reasons[0]}. Send pictures there? "
                                           "(Asked once for this endpoint while this server runs.)", PicturesDecision)
        except Exception as exc:  # noqa: BLE001 - a client that failed to ask: not sent, said why
            return Approval(False, f"the client could not ask you ({type(exc).__name__}); {allow}")
        if answer.action == "accept" and answer.data.send_them:
            return Approval(True, "allowed through the MCP client", asked=True)
        # Cancelled (dismissed): no answer, asked again next time; declined or unticked: kept.
        return Approval(False, "declined through the MCP client", asked=answer.action != "cancel")
