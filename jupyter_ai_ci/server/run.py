"""One sidebar request, from the panel's message to its outcome.

The model is called here, in the server (the key never reaches the browser);
the code runs in the browser's notebook through ``FrontendExecutor``.  Every
message to the panel goes through ``send``; every failure ends as a sentence
the panel can show, and the socket stays usable for the next request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..config import AICISettings
from ..context import CellRecord
from ..drivers import adrive
from ..errors import AICIError, RetriesExhausted
from ..events import Approval, AskApproval, CallModel, Execute, ExecutionResult, Message, Notice, Outcome
from ..executors.frontend import FrontendExecutor
from ..llm import AsyncModelClient, Endpoint, OpenAIClient
from ..loop import LoopSettings, agent_loop
from ..sinks import METADATA_KEY
from ..policy import PolicySettings
from .context import kernel_context
from .kernelcall import KernelCalls

Send = Callable[[dict[str, Any]], None]
MAX_CELLS = 20
TRANSACTION_TIMEOUT = 60.0  # seconds for a checkpoint or rollback in a busy kernel
CONVERSATION_TURNS = 3  # earlier exchanges of the panel sent with a request, as %%ask does


class RequestRefused(AICIError):
    """The panel asked for something this server will not do."""


@dataclass(frozen=True)
class AskMessage:
    request: str
    path: str
    kernel_id: str
    anchor_cell_id: str | None
    cells: tuple[CellRecord, ...]
    model: str | None
    new: bool = False  # forget the earlier exchanges (the panel's "New chat")

    @classmethod
    def parse(cls, msg: dict[str, Any]) -> AskMessage:
        request = str(msg.get("request") or "").strip()
        if not request:
            raise RequestRefused("write a request first")
        if not msg.get("kernel_id") or not msg.get("path"):
            raise RequestRefused("open a notebook with a running kernel first")
        cells = tuple(
            CellRecord(str(c.get("source", "")), str(c.get("output", "")))
            for c in (msg.get("cells") or [])[-MAX_CELLS:]
            if isinstance(c, dict)
        )
        anchor = msg.get("anchor_cell_id")
        return cls(request, str(msg["path"]), str(msg["kernel_id"]),
                   anchor if isinstance(anchor, str) else None, cells, msg.get("model") or None,
                   msg.get("new") is True)


class PanelReporter:
    """Streams what the loop does to the panel."""

    def __init__(self, send: Send, executor: FrontendExecutor) -> None:
        self.send = send
        self.executor = executor

    def model_started(self, call: CallModel) -> None:
        self.send({"type": "model", "purpose": call.purpose})

    def model_text(self, text: str) -> None:
        self.send({"type": "text", "text": text})

    def model_finished(self) -> None:
        self.send({"type": "model_done"})

    def notice(self, notice: Notice) -> None:
        self.send({"type": "notice", "kind": notice.kind, "text": notice.text,
                   "attempt": notice.attempt, "step": notice.step})

    def executing(self, action: Execute) -> None:
        self.executor.begin(action)
        self.send({"type": "running", "code": action.code, "attempt": action.attempt,
                   "step": action.step, "block": action.block})

    def executed(self, action: Execute, result: ExecutionResult) -> None:
        self.send({"type": "ran", "attempt": action.attempt, "block": action.block, "ok": result.ok,
                   "error": result.error.one_line() if result.error else None})


async def check_open(msg: AskMessage, kernel_manager: Any, session_manager: Any) -> None:
    """Refuse a kernel or notebook the user does not have open in this server."""
    if msg.kernel_id not in kernel_manager:
        raise RequestRefused("that kernel is not running in this server; start the notebook's kernel")
    sessions = await session_manager.list_sessions()
    for s in sessions:
        if s.get("path") == msg.path and (s.get("kernel") or {}).get("id") == msg.kernel_id:
            return
    raise RequestRefused(f"{msg.path} is not open with that kernel in this server; open it and try again")


def summary(outcome: Outcome) -> str:
    n = len(outcome.attempts)
    tokens = f"{outcome.usage.prompt_tokens} in / {outcome.usage.completion_tokens} out tokens"
    if outcome.status == "failed":
        error = outcome.last_error
        return str(RetriesExhausted(n, error.one_line() if error else
                                    "the model answered the traceback without code",
                                    outcome.early_stop))
    if outcome.status == "answered":
        return f"Answered without code ({tokens})."
    plural = "attempt" if n == 1 else "attempts"
    return f"Done in {n} {plural} ({tokens})."


class SidebarRun:
    """Drives the agent loop for one panel request."""

    def __init__(self, send: Send, settings: AICISettings, kernel_manager: Any, session_manager: Any,
                 clients: dict[Endpoint, OpenAIClient],
                 conversations: dict[str, list[Message]] | None = None) -> None:
        self.send = send
        self.settings = settings
        self.kernel_manager = kernel_manager
        self.session_manager = session_manager
        self.clients = clients
        self.conversations = conversations if conversations is not None else {}
        self.executor: FrontendExecutor | None = None
        self._approvals: dict[str, asyncio.Future[bool]] = {}

    async def aapprove(self, request: AskApproval) -> Approval:
        """``AsyncApprover``: the panel shows the code and the policy's reasons with
        Approve / Reject, and the run waits for the click (Stop ends the wait)."""
        approval_id = f"a{len(self._approvals) + 1}"
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._approvals[approval_id] = future
        what = "install" if request.kind == "install" else "run"
        self.send({"type": "approve", "id": approval_id, "code": "\n\n".join(request.code),
                   "reason": f"{what}: " + "; ".join(request.reasons)})
        granted = await future
        return Approval(True, "approved in the panel") if granted else Approval(False, "rejected in the panel")

    def decided(self, message: dict[str, Any]) -> None:
        future = self._approvals.get(str(message.get("id")))
        if future is not None and not future.done():
            future.set_result(message.get("approved") is True)

    def _model(self, model: str | None) -> tuple[Endpoint, AsyncModelClient]:
        """The endpoint and its client: as configured, or the managed local model
        (``local.py``) when nothing is configured and the ``[local]`` extra is installed."""
        from .. import local

        endpoint = Endpoint.from_settings(self.settings, model=model)
        path = local.target(endpoint, self.settings.local_fallback)
        if path is not None:
            loop = asyncio.get_running_loop()

            def say(text: str) -> None:  # called from the thread that starts the server
                notice = {"type": "notice", "kind": "other", "text": text.strip(" ·\n"),
                          "attempt": 0, "step": 0}
                loop.call_soon_threadsafe(self.send, notice)

            local_client = local.LocalClient(endpoint, path, say)
            return local_client.endpoint, local_client
        endpoint.check()
        if endpoint not in self.clients:
            self.clients[endpoint] = OpenAIClient(endpoint)
        return endpoint, self.clients[endpoint]

    async def run(self, raw: dict[str, Any]) -> None:
        try:
            await self._run(raw)
        except asyncio.CancelledError:
            if self.executor is not None:
                self.executor.abort("stopped")
            self.send({"type": "done", "status": "stopped", "message": "Stopped."})
            raise
        except AICIError as exc:
            self.send({"type": "done", "status": "error", "message": _sentence(str(exc))})
        except Exception as exc:  # noqa: BLE001 - the panel must hear about every failure
            self.send({"type": "done", "status": "error",
                       "message": _sentence(f"the request failed unexpectedly ({type(exc).__name__}: {exc})")})

    async def _run(self, raw: dict[str, Any]) -> None:
        msg = AskMessage.parse(raw)
        await check_open(msg, self.kernel_manager, self.session_manager)
        endpoint, client = self._model(msg.model)
        self.send({"type": "started", "model": endpoint.model, "host": endpoint.host})
        calls = KernelCalls(self.kernel_manager, msg.kernel_id)
        try:
            await self._drive(msg, endpoint, client, calls)
        finally:
            calls.close()

    async def _drive(self, msg: AskMessage, endpoint: Endpoint, client: AsyncModelClient,
                     calls: KernelCalls) -> None:
        s = self.settings
        context, note = await kernel_context(calls, msg.request, msg.cells, s.max_context_tokens)
        if note:
            self.send({"type": "notice", "kind": "other", "text": note, "attempt": 0, "step": 0})
        # The same settings as %%ask: the policy and its approvals hold in the panel too.
        settings = LoopSettings(
            retries=s.retries, steps=s.steps, max_output_chars=s.max_output_chars,
            max_traceback_chars=s.max_output_chars * 2,
            policy=PolicySettings(s.policy, tuple(s.allow), tuple(s.deny)),  # type: ignore[arg-type]
            token_budget=s.max_tokens_per_request,
            install_missing=False,  # %pip from the panel is not wired up yet
        )
        meta = {METADATA_KEY: {"request": msg.request, "model": endpoint.model,
                               "endpoint_host": endpoint.host, "source": "sidebar"}}

        async def in_kernel(expr: str) -> dict[str, Any]:
            return await calls.expression(expr, TRANSACTION_TIMEOUT)

        self.executor = FrontendExecutor(self.send, msg.anchor_cell_id, meta, s.max_output_chars,
                                         in_kernel, s.snapshot_max_bytes)
        # Follow-ups ("now plot it") need the earlier exchanges about this notebook.
        history = self.conversations.setdefault(msg.path, [])
        if msg.new:
            history.clear()
        outcome = await adrive(agent_loop(msg.request, context, settings, tuple(history)),
                               client, self.executor,
                               PanelReporter(self.send, self.executor), approver=self)
        remember(history, msg.request, outcome)
        self.send({
            "type": "done",
            "status": outcome.status,
            "message": summary(outcome),
            "answer": outcome.answer,
            "attempts": len(outcome.attempts),
            "cells": self.executor.cells,
            "tokens": {"prompt": outcome.usage.prompt_tokens, "completion": outcome.usage.completion_tokens},
        })


def remember(history: list[Message], request: str, outcome: Outcome) -> None:
    """Keep the last exchanges: the request and the code that worked (or the answer)."""
    if outcome.status == "failed":
        return
    code = "\n\n".join(c.code for c in outcome.cells)
    answer = f"```python\n{code}\n```" if code else outcome.answer
    history += [Message("user", request), Message("assistant", answer.strip())]
    del history[: -2 * CONVERSATION_TURNS]


def _sentence(text: str) -> str:
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
