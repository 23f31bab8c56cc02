"""The panel's Undo button on a request's done line, driven from the server.

The kernel takes its names, process and files back (``safety/undostack.py``, through a silent
user expression); the run layer drops the request's replay record and exchange and makes the
line (``run/undo.py``).  This only carries them: the panel's message in, the ``undone`` message
out (the cells to take out, which the panel deletes only if they are generated ones).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_ai_ci.drivers.server.chats import Chats
from jupyter_ai_ci.drivers.server.kernelcall import KernelCalls
from jupyter_ai_ci.drivers.server.protocol import RequestRefused, Send, check_open, notebook_folder
from jupyter_ai_ci.errors import AICIError
from jupyter_ai_ci.notebook.replay import ReplayStore
from jupyter_ai_ci.run import undo
from jupyter_ai_ci.safety import remote
from jupyter_ai_ci.safety.undostack import REQUEST_ID, Limits

UNDO_TIMEOUT = 120.0  # seconds: restoring a large frame or many files takes a while


@dataclass(frozen=True)
class UndoMessage:
    """The panel's ``undo`` message, every field checked (it comes from the websocket)."""

    path: str
    kernel_id: str
    request: str

    @classmethod
    def parse(cls, msg: dict[str, Any]) -> UndoMessage:
        request = msg.get("request")
        if not isinstance(request, str) or not REQUEST_ID.fullmatch(request):
            raise RequestRefused("the panel named no request to undo")
        if not msg.get("kernel_id") or not msg.get("path"):
            raise RequestRefused("open the notebook with its running kernel first")
        return cls(str(msg["path"]), str(msg["kernel_id"]), request)


class SidebarUndo:
    """One Undo click: the kernel's undo of that request, then the run layer's line."""

    def __init__(self, send: Send, chats: Chats, kernel_manager: Any, session_manager: Any,
                 root_dir: str | None = None) -> None:
        self._send = send
        self.chats = chats
        self.kernel_manager = kernel_manager
        self.session_manager = session_manager
        self.root_dir = root_dir

    async def run(self, raw: dict[str, Any]) -> None:
        request, path = raw.get("request"), raw.get("path")
        answer: dict[str, Any] = {"type": "undone", "request": request if isinstance(request, str) else "",
                                  "path": path if isinstance(path, str) else ""}
        try:
            msg = UndoMessage.parse(raw)
            await check_open(msg, self.kernel_manager, self.session_manager)  # type: ignore[arg-type]
            # Shielded: once the kernel has undone, Stop or a closed panel must not leave the
            # request's record and exchange behind.
            answer |= await asyncio.shield(self._undo(msg))
            # Recorded after the chat's last run (a reloaded panel shows it); a refused message
            # is not: its path may be no notebook of this server's.
            self.chats.get(msg.path).record(answer)
        except AICIError as exc:
            answer |= {"ok": False, "message": f"✗ {exc}", "cells": []}  # as run/undo.py words its lines
        except Exception as exc:  # noqa: BLE001 - the panel must hear about every failure
            answer |= {"ok": False, "cells": [],
                       "message": f"✗ undo failed unexpectedly ({type(exc).__name__}: {exc})"}
        self._send(answer)

    async def _undo(self, msg: UndoMessage) -> dict[str, Any]:
        s = self.chats.settings
        calls = KernelCalls(self.kernel_manager, msg.kernel_id)
        try:
            value = await calls.expression(remote.expression(
                "undo", only=msg.request, limits=Limits.of(s)), UNDO_TIMEOUT)
        finally:
            calls.close()
        folder = notebook_folder(self.root_dir, msg.path)
        store = ReplayStore(Path(folder) / s.replay_file) if folder is not None and s.replay else None
        result = undo.finish(remote.parse_json(value) or {}, self.chats.get(msg.path).session, store)
        return {"ok": result.ok, "message": result.line, "cells": result.cells}
