"""A kernel on a Kernel Gateway or Enterprise Gateway, over its REST + websocket API.

We speak the protocol directly (tornado's HTTP and websocket clients, which
jupyter_client already depends on) rather than through jupyter_server's
``GatewayKernelManager``: that one is configured through a process-wide
``GatewayClient`` singleton, so two runs could not use two gateways, and it
brings a whole server's machinery into a command-line tool.  The protocol is
small: ``POST /api/kernels`` starts a kernel, ``/api/kernels/{id}/channels``
is a websocket carrying every channel's messages as JSON, ``POST …/interrupt``
and ``DELETE …`` interrupt and shut down.  Every request has a timeout, and
each failure is one ``GatewayError`` line that says what to check.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlparse

from jupyter_ai_ci.errors import GatewayError, KernelDied

_CLOSED: dict[str, Any] = {"msg_type": "_closed"}


@dataclass(frozen=True)
class Service:
    """What the kernels' server is, as its errors name it: a gateway, or a Jupyter server (whose REST
    and websocket API is the same; ``jupyter ai-ci mcp --server-url`` reaches its sessions' kernels)."""

    name: str
    url_option: str
    token_option: str


GATEWAY = Service("gateway", "--gateway-url / JUPYTER_GATEWAY_URL", "--gateway-token / JUPYTER_GATEWAY_AUTH_TOKEN")


class GatewayKernel:
    """``KernelConnection`` to one kernel on a gateway."""

    def __init__(self, url: str, token: str, kernel_id: str, request_timeout: float,
                 service: Service = GATEWAY) -> None:
        self.service = service
        self.url = url.rstrip("/")
        self.token = token
        self.kernel_id = kernel_id
        self.request_timeout = request_timeout
        self.session = uuid.uuid4().hex
        self.description = f"{kernel_id[:8]} on {_host(url)}"
        self._ws: Any = None
        self._iopub: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        # execute_replies we wait for (transactions), by request msg_id; other replies are dropped.
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, url: str, token: str = "", kernel_name: str = "python3",
                    request_timeout: float = 20.0, startup_timeout: float = 60.0) -> GatewayKernel:
        # Enterprise Gateway needs KERNEL_USERNAME to place the kernel (impersonation,
        # per-user namespaces); Kernel Gateway accepts KERNEL_* variables and ignores it.
        body = json.dumps({"name": kernel_name, "env": {"KERNEL_USERNAME": getpass.getuser()}})
        # Starting a kernel on a cluster (Enterprise Gateway on Kubernetes) can take a while.
        reply = await _request(url, token, "POST", "/api/kernels", body, startup_timeout, "start a kernel")
        kernel = cls(url, token, json.loads(reply)["id"], request_timeout)
        await kernel._connect()
        return kernel

    @classmethod
    async def attach(cls, url: str, token: str, kernel_id: str, service: Service,
                     request_timeout: float = 20.0) -> GatewayKernel:
        """A connection to a kernel that is already running there (a notebook's session's)."""
        kernel = cls(url, token, kernel_id, request_timeout, service)
        await kernel._connect()
        return kernel

    def detach(self) -> None:
        """Let go of the kernel without shutting it down (it is its session's, not ours)."""
        if self._reader is not None:
            self._reader.cancel()
        if self._ws is not None:
            self._ws.close()

    async def _connect(self) -> None:
        from tornado.httpclient import HTTPClientError, HTTPRequest
        from tornado.websocket import websocket_connect

        ws_url = "ws" + self.url[len("http"):] + f"/api/kernels/{self.kernel_id}/channels?session_id={self.session}"
        request = HTTPRequest(ws_url, headers=_headers(self.token), connect_timeout=self.request_timeout,
                              request_timeout=self.request_timeout)
        try:
            self._ws = await websocket_connect(request)
        except HTTPClientError as exc:
            if exc.code == 599:
                raise _unreachable(self.url, self.request_timeout, exc, self.service) from None
            raise _status_error(self.url, exc.code, "open the kernel's websocket", self.service) from None
        except (OSError, asyncio.TimeoutError) as exc:
            raise _unreachable(self.url, self.request_timeout, exc, self.service) from None
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        while True:
            raw = await self._ws.read_message()
            if raw is None:
                self._iopub.put_nowait(_CLOSED)
                for waiting in self._replies.values():
                    if not waiting.done():
                        waiting.set_result(_CLOSED)
                return
            msg = json.loads(raw)
            if msg.get("channel") == "iopub":
                self._iopub.put_nowait(msg)
            elif msg.get("channel") == "shell":
                reply = self._replies.get(msg.get("parent_header", {}).get("msg_id", ""))
                if reply is not None and not reply.done():
                    reply.set_result(msg)

    async def _send(self, code: str, store_history: bool, silent: bool = False,
                    user_expressions: dict[str, str] | None = None) -> str:
        msg_id = uuid.uuid4().hex
        if user_expressions:
            # Waited for before sending: the reply may come while the write is awaited.
            self._replies[msg_id] = asyncio.get_running_loop().create_future()
        message = {
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": self.session,
                       "username": "jupyter-ai-ci", "version": "5.3",
                       "date": datetime.now(timezone.utc).isoformat()},
            "parent_header": {}, "metadata": {}, "buffers": [], "channel": "shell",
            "content": {"code": code, "silent": silent, "store_history": store_history,
                        "user_expressions": user_expressions or {}, "allow_stdin": False,
                        "stop_on_error": True},
        }
        try:
            await self._ws.write_message(json.dumps(message))
        except Exception:
            raise KernelDied(f"the websocket to the kernel {self.description} closed") from None
        return msg_id

    async def send_execute(self, code: str, store_history: bool) -> str:
        return await self._send(code, store_history)

    async def send_expressions(self, expressions: dict[str, str]) -> str:
        return await self._send("", False, silent=True, user_expressions=expressions)

    async def receive_reply(self, msg_id: str, timeout: float) -> dict[str, Any] | None:
        waiting = self._replies.get(msg_id)
        if waiting is None:
            return None
        try:
            msg = await asyncio.wait_for(asyncio.shield(waiting), timeout)
        except asyncio.TimeoutError:
            return None
        del self._replies[msg_id]
        if msg is _CLOSED:
            raise KernelDied(f"the gateway closed the websocket to the kernel {self.description}: "
                             "the kernel died or was shut down")
        return dict(msg.get("content", {}))

    async def receive_iopub(self, timeout: float) -> dict[str, Any] | None:
        try:
            msg = await asyncio.wait_for(self._iopub.get(), timeout)
        except asyncio.TimeoutError:
            return None
        if msg is _CLOSED:
            self._iopub.put_nowait(_CLOSED)  # every later wait fails the same way
            raise KernelDied(f"the gateway closed the websocket to the kernel {self.description}: "
                             "the kernel died or was shut down")
        return msg

    async def interrupt(self) -> None:
        await _request(self.url, self.token, "POST", f"/api/kernels/{self.kernel_id}/interrupt", "",
                       self.request_timeout, "interrupt the kernel", self.service)

    async def is_alive(self) -> bool:
        try:
            await _request(self.url, self.token, "GET", f"/api/kernels/{self.kernel_id}", None,
                           self.request_timeout, "check the kernel", self.service)
        except GatewayError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def shutdown(self) -> None:
        self.detach()
        for retry in range(4):
            try:
                await _request(self.url, self.token, "DELETE", f"/api/kernels/{self.kernel_id}", None,
                               self.request_timeout, "shut the kernel down")
                return
            except GatewayError as exc:
                if exc.status == 404:  # already gone is what we wanted
                    return
                # Kernel Gateway answers 500 while it restarts a kernel that died; a
                # kernel left behind would run on the gateway until someone noticed.
                if exc.status is None or exc.status < 500 or retry == 3:
                    raise
                await asyncio.sleep(0.5 * 2**retry)


def _host(url: str) -> str:
    parsed = urlparse(url)
    return f"{parsed.hostname}:{parsed.port}" if parsed.port else str(parsed.hostname)


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"token {token}"} if token else {}


def _unreachable(url: str, timeout: float, exc: BaseException, service: Service = GATEWAY) -> GatewayError:
    timed_out = isinstance(exc, asyncio.TimeoutError) or "Timeout" in str(exc) or "timeout" in str(exc)
    why = f"no answer within {timeout:g} s" if timed_out else str(exc)
    return GatewayError(f"cannot reach the {service.name} at {_host(url)} ({why}): "
                        f"is it running, and is {service.url_option} right?")


def _status_error(url: str, code: int, what: str, service: Service = GATEWAY) -> GatewayError:
    if code in (401, 403):
        return GatewayError(f"the {service.name} at {_host(url)} rejected the token ({code}) when asked to {what}: "
                            f"check {service.token_option}", code)
    return GatewayError(f"the {service.name} at {_host(url)} answered {code} when asked to {what}; see its log",
                        code)


async def request(url: str, token: str, method: str, path: str, body: str | None, timeout: float, what: str,
                  service: Service = GATEWAY) -> Any:
    """One REST call, its JSON answer (None for an empty body); failures as one GatewayError line."""
    reply = await _request(url, token, method, path, body, timeout, what, service)
    return json.loads(reply) if reply.strip() else None


async def _request(url: str, token: str, method: str, path: str, body: str | None,
                   timeout: float, what: str, service: Service = GATEWAY) -> bytes:
    from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

    request = HTTPRequest(url.rstrip("/") + path, method=method, body=body, headers=_headers(token),
                          connect_timeout=timeout, request_timeout=timeout)
    try:
        response = await AsyncHTTPClient().fetch(request)
    except HTTPClientError as exc:
        if exc.code == 599:  # tornado's code for "no HTTP answer": refused, reset, timed out
            raise _unreachable(url, timeout, exc, service) from None
        raise _status_error(url, exc.code, what, service) from None
    except (OSError, asyncio.TimeoutError) as exc:
        raise _unreachable(url, timeout, exc, service) from None
    return bytes(response.body or b"")
