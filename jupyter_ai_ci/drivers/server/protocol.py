"""The panel's side of a sidebar run: the messages it sends and is sent.

Every field that comes from the websocket is untrusted: ``AskMessage.parse``
keeps only what has the expected type and size, and ``check_open`` refuses a
kernel or notebook that is not open in this server.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_ai_ci.core.consensus import sureness
from jupyter_ai_ci.core.pictures import shown_figures
from jupyter_ai_ci.errors import AICIError
from jupyter_ai_ci.events import CallModel, CellRecord, Execute, ExecutionResult, Notice, Outcome
from jupyter_ai_ci.executors.frontend import FrontendExecutor
from jupyter_ai_ci.model.turns import waiting
from jupyter_ai_ci.run.request import Result
from jupyter_ai_ci.run.session import Session
from jupyter_ai_ci.run.summary import summarize

Send = Callable[[dict[str, Any]], None]
MAX_CELLS = 20
CELLS_BYTES = 2_000_000  # room for the panel's recent cells beside the request itself


def oversized(message: str | bytes, max_request_kb: int) -> str | None:
    """One line refusing a websocket message too large to hold an acceptable request, said
    before it is parsed (tornado itself drops messages over 10 MiB); None when it is fine."""
    size = len(message.encode("utf-8", "surrogatepass") if isinstance(message, str) else message)
    if size <= max_request_kb * 1000 + CELLS_BYTES:
        return None
    return (f"The message is {size / 1e6:.1f} MB; the limit for a request is {max_request_kb} kB — put large "
            "data in a file or variable and refer to it.")


class RequestRefused(AICIError):
    """The panel asked for something this server will not do."""


@dataclass(frozen=True)
class AskMessage:
    request: str
    path: str
    kernel_id: str
    anchor_cell_id: str | None
    cells: tuple[CellRecord, ...]
    model: str
    new: bool = False  # forget the earlier exchanges (the panel's "New chat")
    regenerate: bool = False  # ask the model even if this request was answered before
    candidates: int | str | None = None  # candidates that must agree, or 'auto'; None: the server's setting
    use: int | None = None  # "use this one": candidate N of this request's last vote (run/choose.py)

    @classmethod
    def parse(cls, msg: dict[str, Any], offered: Sequence[str]) -> AskMessage:
        """``offered``: the server's allow-list of models (``AICISettings.offered_models``),
        its default first; a request for any other model is refused before anything runs."""
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
        k, use = msg.get("candidates"), msg.get("use")
        if k is not None and k != "auto" and (type(k) is not int or not 1 <= k <= 9):  # noqa: E721 - True is no count
            raise RequestRefused("candidates must be 'auto' or a whole number from 1 to 9")
        if use is not None and (type(use) is not int or not 1 <= use <= 9):  # noqa: E721
            raise RequestRefused("use names a candidate by its number, from 1 to 9")
        return cls(request, str(msg["path"]), str(msg["kernel_id"]),
                   anchor if isinstance(anchor, str) else None, cells,
                   offered_model(msg.get("model"), offered),
                   msg.get("new") is True, msg.get("regenerate") is True, k, use)


def offered_model(requested: object, offered: Sequence[str]) -> str:
    """The model a request may use: one the server offers, never a name the panel made up
    (``local:/etc/shadow`` would start llama.cpp on that file)."""
    if requested is None or requested == "":
        return offered[0]
    if isinstance(requested, str) and requested in offered:
        return requested
    shown = repr(requested) if len(repr(requested)) <= 80 else repr(requested)[:77] + "..."
    raise RequestRefused(f"the model {shown} is not offered by this server; pick one of "
                         f"{', '.join(offered)} (AICISettings.models)")


class PanelReporter:
    """Streams what the loop does to the panel."""

    def __init__(self, send: Send, executor: FrontendExecutor) -> None:
        self.send = send
        self.executor = executor
        # The blocks the last attempt ran, with their cells: what a fix, next step or answer
        # request tells the model about is theirs.
        self._ran: list[tuple[str | None, ExecutionResult]] = []
        self._attempt = 0

    def model_started(self, call: CallModel) -> None:
        self._figures(call)
        self.send({"type": "model", "purpose": call.purpose})

    def _figures(self, call: CallModel) -> None:
        """The figures of the last attempt this request includes, with the attempt: their words,
        and for the picture a reference (its cell and output), never the PNG again -- the panel
        ran the cell, the picture is in the notebook (read there before a fix replaces the cell)."""
        if call.purpose not in ("fix", "next-step", "answer") or not self._ran or not call.messages:
            return
        figures = shown_figures(call.messages[-1], [result for _, result in self._ran])
        if figures:
            self.send({"type": "figures", "attempt": self._attempt, "purpose": call.purpose, "figures": [
                {"cell_id": self._ran[f.block][0], "output": f.output, "text": f.text, "picture": f.picture}
                for f in figures]})

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
                   "step": action.step, "block": action.block,
                   **({"scratch": True} if self.executor.scratch else {})})  # a fix tried without a cell

    def executed(self, action: Execute, result: ExecutionResult) -> None:
        # The cell it ran in, and whether it drew a figure: the panel shows a thumbnail of the
        # cell's own image and a link to the cell (the figure itself stays in the notebook).
        cells = self.executor.cells
        if action.block == 0:  # an attempt starts (or runs again after an install) at its first block
            self._ran = []
        self._attempt = action.attempt
        self._ran.append((cells[-1] if cells else None, result))
        figure = any(isinstance(o.get("data"), dict) and "image/png" in o["data"] for o in result.outputs)
        self.send({"type": "ran", "attempt": action.attempt, "block": action.block, "ok": result.ok,
                   "error": result.error.one_line() if result.error else None,
                   "cell_id": cells[-1] if cells else None, "figure": figure})


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
    if outcome.status in ("refused", "over-budget") and outcome.reason:
        return sentence(outcome.reason)  # why nothing ran, not "Done in 0 attempts"
    facts = summarize(outcome)  # the same facts and words as the magic and the CLI
    # The panel has no --retries: the server's configuration sets them.
    return " ".join(filter(None, (facts.sentence(), facts.advice("AICISettings.retries"))))


def session_usage(session: Session) -> dict[str, int]:
    """The panel session's usage, as its footer reads it (every message that carries it)."""
    requests, prompt, completion = session.usage.total()
    return {"requests": requests, "prompt": prompt, "completion": completion}


def done_message(result: Result, cells: list[str], session: Session) -> dict[str, Any]:
    """The run's last message: its outcome, this request's tokens and the panel session's."""
    outcome = result.outcome
    return {
        "type": "done",
        "status": outcome.status,
        "message": summary(outcome),
        "answer": outcome.answer,
        "attempts": len(outcome.attempts),
        "cells": cells,
        "replayed": result.replayed,
        "tokens": {"prompt": outcome.usage.prompt_tokens, "completion": outcome.usage.completion_tokens},
        "session": session_usage(session),
        # Candidates that must agree: how sure, and each group's result and code ("use this one").
        "consensus": None if outcome.consensus is None else {
            "line": sureness(outcome.consensus), "sure": outcome.consensus.sure,
            "groups": [{"shown": g.shown, "candidates": list(g.candidates), "code": list(g.code)}
                       for g in outcome.consensus.groups]},
    }


def notebook_folder(root_dir: str | None, path: str) -> str | None:
    """The folder of the notebook at ``path`` (relative to the server's root), where its
    replay records live; None when the server has no folder on disk or the path leaves it."""
    if not root_dir:
        return None
    root = os.path.realpath(root_dir)
    folder = os.path.realpath(os.path.join(root, os.path.dirname(path)))
    return folder if folder == root or folder.startswith(root + os.sep) else None


def said(text: str) -> dict[str, Any]:
    """A line the run says outside the loop (the local model's first use, its queue) as the panel's
    notice: a wait for the local model is kind 'waiting', which the panel shows while it holds and
    drops once anything else arrives (labextension/src/transcript.ts)."""
    wait = waiting(text)  # "": the wait is over, and a waiting notice with no text drops the line
    return {"type": "notice", "kind": "other" if wait is None else "waiting",
            "text": text.strip(" ·\n") if wait is None else wait, "attempt": 0, "step": 0}


def sentence(text: str) -> str:
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
