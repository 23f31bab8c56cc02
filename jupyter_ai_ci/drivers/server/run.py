"""One sidebar request, from the panel's message to its outcome.

The model is called here, in the server (the key never reaches the browser);
the code runs in the browser's notebook through ``FrontendExecutor``.  What
happens around the loop -- context, masking, replay, approval, install,
usage, provenance -- is the shared run's (``run/``); this driver only talks
to the panel.  Every failure ends as a sentence the panel can show, and the
socket stays usable for the next request.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from typing import Any

from jupyter_ai_ci.drivers.server.chats import Chats, Transcript
from jupyter_ai_ci.drivers.server.kernelcall import KernelCalls
from jupyter_ai_ci.drivers.server.protocol import (
    AskMessage,
    PanelReporter,
    Send,
    check_open,
    done_message,
    notebook_folder,
    said,
    sentence,
    session_usage,
)
from jupyter_ai_ci.errors import AICIError
from jupyter_ai_ci.events import Approval, AskApproval
from jupyter_ai_ci.executors import pip
from jupyter_ai_ci.executors.frontend import FrontendExecutor, KernelExpression
from jupyter_ai_ci.notebook.sinks import METADATA_KEY
from jupyter_ai_ci.run import undo
from jupyter_ai_ci.run.flow import RemoteKernel, run_async
from jupyter_ai_ci.run.request import Options, Result, Run
from jupyter_ai_ci.run.session import Session
from jupyter_ai_ci.safety import remote
from jupyter_ai_ci.safety.undostack import Limits

TRANSACTION_TIMEOUT = 60.0  # seconds for a checkpoint or rollback in a busy kernel


class SidebarRun:
    """Drives one panel request through the shared run."""

    def __init__(self, send: Send, chats: Chats, kernel_manager: Any, session_manager: Any,
                 root_dir: str | None = None) -> None:
        self._send = send
        self.chats = chats
        # The notebook's session and transcript, once the request names an open notebook.
        self.session: Session | None = None
        self.transcript: Transcript | None = None
        self.kernel_manager = kernel_manager
        self.session_manager = session_manager
        self.root_dir = root_dir
        self.executor: FrontendExecutor | None = None
        self._approvals: dict[str, asyncio.Future[bool]] = {}
        # Unique in the chat: every run's first approval was "a1", and the panel answered the
        # chat's first "a1" (decided already), so a second run's Approve did nothing.
        self._prefix = f"a{secrets.token_hex(4)}-"

    async def aapprove(self, request: AskApproval) -> Approval:
        """``AsyncApprover``: the panel shows the code and the policy's reasons with
        Approve / Reject, and the run waits for the click (Stop ends the wait)."""
        approval_id = f"{self._prefix}{len(self._approvals) + 1}"
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._approvals[approval_id] = future
        what = {"install": "install: ", "pictures": ""}.get(request.kind, "run: ")
        self.send({"type": "approve", "id": approval_id, "code": "\n\n".join(request.code),
                   "reason": what + "; ".join(request.reasons), "kind": request.kind})
        granted = await future
        return Approval(granted, "approved in the panel" if granted else "rejected in the panel", asked=True)

    def decided(self, message: dict[str, Any]) -> None:
        future = self._approvals.get(str(message.get("id")))
        if future is not None and not future.done():
            future.set_result(message.get("approved") is True)
            if self.transcript is not None:  # a reloaded panel shows the decision, not the buttons
                self.transcript.record({"type": "decided", "id": str(message.get("id")),
                                        "approved": message.get("approved") is True})

    def sayer(self) -> Callable[[str], None]:
        """The run's ``say``: the local model's first-use line and its queue, as the panel's notices,
        from whichever thread says them (the one that starts the server)."""
        loop = asyncio.get_running_loop()

        def say(text: str) -> None:
            loop.call_soon_threadsafe(self.send, said(text))

        return say

    def send(self, message: dict[str, Any]) -> None:
        """To the panel, and into the notebook's transcript once there is one."""
        if self.transcript is not None:
            self.transcript.record(message)
        self._send(message)

    async def run(self, raw: dict[str, Any]) -> None:
        try:
            await self._run(raw)
        except asyncio.CancelledError:
            if self.executor is not None:
                self.executor.abort("stopped")
            # With the session's usage, as every other end: the panel's footer went blank after a Stop.
            self.send({"type": "done", "status": "stopped", "message": "Stopped.", **self._usage()})
            raise
        except AICIError as exc:
            self.send({"type": "done", "status": "error", "message": sentence(str(exc)), **self._usage()})
        except Exception as exc:  # noqa: BLE001 - the panel must hear about every failure
            self.send({"type": "done", "status": "error", **self._usage(),
                       "message": sentence(f"the request failed unexpectedly ({type(exc).__name__}: {exc})")})

    def _usage(self) -> dict[str, Any]:
        if self.session is None:
            return {}
        return {"session": session_usage(self.session)}

    async def _run(self, raw: dict[str, Any]) -> None:
        msg = AskMessage.parse(raw, self.chats.settings.offered_models())
        await check_open(msg, self.kernel_manager, self.session_manager)
        chat = self.chats.get(msg.path)
        self.session = session = chat.session
        if msg.new:
            self.chats.forget(msg.path)
        self.transcript = chat.begin(msg.request)
        say = self.sayer()
        options = Options(model=msg.model, new=msg.new, regenerate=msg.regenerate, candidates=msg.candidates,
                          use=msg.use)
        run = Run(session, msg.request, options,
                  thread=msg.path, replay_dir=notebook_folder(self.root_dir, msg.path), source="sidebar",
                  say=say)
        run.check()
        self.send({"type": "started", "model": run.endpoint.model, "host": run.endpoint.host})
        calls = KernelCalls(self.kernel_manager, msg.kernel_id)
        try:
            await self._drive(msg, run, calls, session)
        finally:
            calls.close()

    async def _drive(self, msg: AskMessage, run: Run, calls: KernelCalls, session: Session) -> None:
        s = session.settings
        # The run's interim provenance: the request in it is masked already (a token typed into
        # it must not stay in the saved notebook when the run ends before its final provenance).
        meta = {METADATA_KEY: run.interim}

        async def in_kernel(expr: str) -> dict[str, Any]:
            return await calls.expression(expr, TRANSACTION_TIMEOUT)

        async def install(expr: str) -> dict[str, Any]:
            return await calls.expression(expr, pip.INSTALL_TIMEOUT + 30)

        self.executor = FrontendExecutor(self.send, msg.anchor_cell_id, meta, s.max_output_chars,
                                         in_kernel, s.snapshot_max_bytes, install,
                                         undo=Limits.of(s))
        result = await run_async(run, RemoteKernel(in_kernel), self.executor,
                                 PanelReporter(self.send, self.executor), self, notebook=msg.cells)
        if self.executor.cells:
            # The cells are in the notebook already; now they get the run's whole provenance.
            self.send({"type": "provenance", "cells": list(self.executor.cells),
                       "metadata": {METADATA_KEY: result.provenance}})
        done = done_message(result, self.executor.cells, session)
        if result.outcome.status == "success":
            await self._keep_undo(run, result, in_kernel, done)
        self.send(done)

    async def _keep_undo(self, run: Run, result: Result, in_kernel: KernelExpression,
                         done: dict[str, Any]) -> None:
        """Tell the kernel's undo entry what else the request made (its cells, its record): the
        done line then offers Undo (``undo.py``), or says why the kernel kept no way back."""
        executor = self.executor
        assert executor is not None
        meta = undo.request_meta(run, result.outcome, executor.cells, "sidebar")
        try:
            answer = remote.parse_json(await in_kernel(remote.expression(
                "note", request=executor.request, limits=executor.undo, meta=meta)))
        except Exception:  # noqa: BLE001 - a kernel that cannot answer keeps no way back: no button
            answer = None
        notes = list(executor.undo_notes)
        if answer is not None:
            if answer.get("kept") is True:
                done["undo"] = executor.request
            note = answer.get("note")
            if isinstance(note, str) and note and note not in notes:
                notes.append(note)
        if notes:
            done["message"] = " ".join([done["message"], *(sentence(n) for n in notes)])
