"""One tornado request served by an ASGI application (the ``mcp`` SDK's streamable HTTP).

Tornado is not ASGI: the request becomes a scope and a ``receive`` that hands over the body once
and then waits for the client to go away; the application's ``http.response.start`` and
``http.response.body`` messages become ``set_status``/headers and ``write``+``flush``, so a
server-sent event stream reaches the client as each event is sent, not when the call ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import tornado.web
from tornado.iostream import StreamClosedError

Message = MutableMapping[str, Any]
ASGIApp = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Message]],
                    Callable[[Message], Awaitable[None]]], Awaitable[None]]


def scope_of(request: Any) -> dict[str, Any]:
    """The ASGI HTTP scope of a ``tornado.httputil.HTTPServerRequest``."""
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": request.method, "scheme": request.protocol, "path": request.path,
        "raw_path": request.path.encode("latin-1"), "query_string": request.query.encode("latin-1"),
        "root_path": "", "client": (request.remote_ip, 0),
        "server": (request.host_name, None),  # read only when a request has no Host header
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.get_all()],
    }


class Bridge:
    """Serves ``handler``'s request with ``app``; ``closed()`` is the handler's
    ``on_connection_close``: the application is told ``http.disconnect``."""

    def __init__(self, handler: tornado.web.RequestHandler) -> None:
        self.handler = handler
        self.gone = asyncio.Event()
        self.started = False
        self._body_sent = False

    def closed(self) -> None:
        self.gone.set()

    async def receive(self) -> Message:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.handler.request.body or b"", "more_body": False}
        # The body was all there (tornado reads it first); what remains to tell is a disconnect.
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        h = self.handler
        if self.gone.is_set():
            return  # the client went away: what the application still sends has nowhere to go
        if message["type"] == "http.response.start":
            self.started = True
            h.set_status(int(message["status"]))
            h.clear_header("Content-Type")  # the application says its own
            for name, value in message.get("headers", ()):
                h.add_header(name.decode("latin-1"), value.decode("latin-1"))
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            if body:
                h.write(body)
            try:
                await h.flush()  # each server-sent event leaves now; a long call's progress with it
            except StreamClosedError:
                self.gone.set()

    async def serve(self, app: ASGIApp, scope: dict[str, Any] | None = None) -> None:
        """``scope``: entries added to the request's (who the user is)."""
        try:
            await app({**scope_of(self.handler.request), **(scope or {})}, self.receive, self.send)
        except Exception:
            if not self.started:
                raise  # tornado answers 500 (logged); once headers left, the stream just ends
            self.handler.log.exception("jupyter_ai_ci: the MCP transport failed mid-response")  # type: ignore[attr-defined]
        if not self.handler._finished and not self.gone.is_set():
            self.handler.finish()
