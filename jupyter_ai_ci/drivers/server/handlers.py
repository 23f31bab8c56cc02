"""HTTP and websocket handlers of the sidebar.

REST (``/jupyter-ai-ci/config``) is an ``APIHandler``: authenticated, XSRF
checked on writes.  A run streams over a websocket (``/jupyter-ai-ci/run``),
authenticated like the kernels' own sockets and allowed only to users who may
execute code in kernels.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import tornado.web
from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from jupyter_ai_ci import __version__
from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.drivers.server.chats import Chats
from jupyter_ai_ci.drivers.server.protocol import oversized
from jupyter_ai_ci.drivers.server.fix import SidebarFix
from jupyter_ai_ci.drivers.server.run import SidebarRun
from jupyter_ai_ci.drivers.server.undo import SidebarUndo
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.run.drive import KEEP_WHAT_RAN

SETTINGS_KEY = "jupyter_ai_ci"


def _state(handler: Any) -> dict[str, Any]:
    return handler.settings[SETTINGS_KEY]  # type: ignore[no-any-return]


class ConfigHandler(APIHandler):
    """What the panel shows about the model: its name and host, never the key."""

    @tornado.web.authenticated
    def get(self) -> None:
        from jupyter_ai_ci.model import local

        settings: AICISettings = _state(self)["settings"]
        endpoint = Endpoint.from_settings(settings)
        path = local.target(endpoint, settings.local_fallback)
        if path is not None:
            endpoint = local.localized(endpoint, path)
        self.finish(json.dumps({
            "version": __version__,
            "model": endpoint.model,
            "host": "local (llama.cpp)" if path is not None else endpoint.host,
            "configured": bool(endpoint.base_url or endpoint.api_key),
            # The picker's choices: the only models a request may name, the default first.
            "models": [{"name": name, "label": _label(settings, name)} for name in settings.offered_models()],
            "candidates": settings.candidates,  # the "Check" picker's default
        }))


def _label(settings: AICISettings, name: str) -> str:
    """How the picker shows a model: a local one by its file's name."""
    from jupyter_ai_ci.model import local

    path = local.target(Endpoint.from_settings(settings, model=name), settings.local_fallback)
    return name if path is None else f"{path.stem} (local)"


class RunSocket(WebSocketMixin, WebSocketHandler, JupyterHandler):  # type: ignore[misc]
    """One panel's requests: ``ask`` starts a run, ``fix`` a cell's Fix / Explain
    (``fix_decision`` accepts or rejects its offer), ``executed`` answers the executor,
    ``undo`` takes a request back (its done line's Undo button),
    ``stop`` cancels (keeping what has run where it can), ``history`` asks for a notebook's
    earlier messages (a reloaded page),
    ``forget`` starts a new chat.  One run at a time per socket."""

    auth_resource = "kernels"

    def set_default_headers(self) -> None:
        # JupyterHandler's headers make no sense on a websocket upgrade.
        pass

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "execute", "kernels")
        )
        if not allowed:
            raise tornado.web.HTTPError(403)
        await super().get(*args, **kwargs)

    def open(self, *args: Any, **kwargs: Any) -> None:
        super().open(*args, **kwargs)
        self.run: SidebarRun | None = None
        self.task: asyncio.Task[None] | None = None

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.write_message(json.dumps(message))
        except WebSocketClosedError:
            pass  # the panel went away; the run is cancelled in on_close

    def on_message(self, message: str | bytes) -> None:
        too_big = oversized(message, _state(self)["settings"].max_request_kb)
        if too_big is not None:  # refused before json parses megabytes
            self.send({"type": "done", "status": "error", "message": too_big})
            return
        try:
            msg = json.loads(message)
            kind = msg.get("type")
        except (ValueError, AttributeError):
            self.send({"type": "done", "status": "error", "message": "The panel sent a malformed message."})
            return
        if kind in ("ask", "fix", "undo"):
            if self.task is not None and not self.task.done():
                busy = "A request is already running; stop it first."
                self.send({"type": "undone", "ok": False, "message": f"✗ {busy}", "cells": [],
                           "request": msg.get("request"), "path": msg.get("path")} if kind == "undo"
                          else {"type": "done", "status": "error", "message": busy})
                return
            state = _state(self)
            if kind == "undo":  # no run: "executed", "approval" and "stop" have nothing to reach
                undoing = SidebarUndo(self.send, state["chats"], self.kernel_manager, self.session_manager,
                                      state["root_dir"])
                self.task = asyncio.ensure_future(undoing.run(msg))
                return
            self.run = (SidebarFix if kind == "fix" else SidebarRun)(
                self.send, state["chats"], self.kernel_manager, self.session_manager, state["root_dir"])
            self.task = asyncio.ensure_future(self.run.run(msg))
        elif kind in ("history", "forget") and isinstance(msg.get("path"), str):
            chats: Chats = _state(self)["chats"]
            if kind == "forget":
                chats.forget(msg["path"])
            else:
                usage = chats.usage(msg["path"])
                self.send({"type": "history", "path": msg["path"], "runs": chats.history(msg["path"]),
                           **({"session": usage} if usage is not None else {})})
        elif kind == "executed" and self.run is not None and self.run.executor is not None:
            self.run.executor.resolve(msg)
        elif kind == "approval" and self.run is not None:
            self.run.decided(msg)
        elif kind == "fix_decision" and isinstance(self.run, SidebarFix):
            self.run.fix_decided(msg)
        elif kind == "stop" and self.task is not None:
            # A Stop while the model writes another candidate keeps the result shown (run/drive.py).
            self.task.cancel(KEEP_WHAT_RAN)

    def on_close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()


def setup_handlers(web_app: Any, settings: AICISettings, root_dir: str | None = None) -> None:
    from jupyter_server.utils import url_path_join

    # root_dir: where notebooks live on disk (replay records go beside them); None for
    # contents managers that keep no files.
    # One chat per notebook, shared by every panel (a reloaded page finds its conversation).
    web_app.settings[SETTINGS_KEY] = {"settings": settings, "root_dir": root_dir, "chats": Chats(settings)}
    base = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [
        (url_path_join(base, "jupyter-ai-ci", "config"), ConfigHandler),
        (url_path_join(base, "jupyter-ai-ci", "run"), RunSocket),
    ])
