"""How requests to the model travel: the HTTP library the openai SDK sends with, and its
client for one endpoint (TCP_NODELAY where it can, the environment's proxies where they apply)."""

from __future__ import annotations

import ipaddress
import socket
import sys
import urllib.request
from typing import Any
from urllib.parse import urlparse

__all__ = ["http_client", "http_library", "loopback"]


def http_library() -> Any:
    """The HTTP library the installed SDK sends with (httpx for openai 1.x, httpx2 later)."""
    import openai

    base = next(t for t in openai.DefaultHttpxClient.__mro__[1:] if t.__name__ == "Client")
    return sys.modules[base.__module__.split(".")[0]]


def loopback(base_url: str | None) -> bool:
    """True for a server on this machine (localhost, 127.0.0.0/8, ::1)."""
    host = (urlparse(base_url).hostname or "") if base_url else ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def http_client(base_url: str | None, asynchronous: bool = False) -> Any:
    """The SDK's own HTTP client and limits, with TCP_NODELAY: the request goes out as two
    writes (headers, body), and on a kept connection Nagle holds the second until the server's
    delayed ACK, ~40 ms a request.  A client given its own transport ignores the environment's
    proxies (HTTP_PROXY, HTTPS_PROXY, NO_PROXY), so with any set it is the SDK's default, except
    for a server on this machine, which no proxy can reach for us."""
    import openai

    if urllib.request.getproxies() and not loopback(base_url):
        return openai.DefaultAsyncHttpxClient() if asynchronous else openai.DefaultHttpxClient()
    library = http_library()
    nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    limits = openai.DEFAULT_CONNECTION_LIMITS
    if asynchronous:
        return openai.DefaultAsyncHttpxClient(
            transport=library.AsyncHTTPTransport(limits=limits, socket_options=nodelay))
    return openai.DefaultHttpxClient(transport=library.HTTPTransport(limits=limits, socket_options=nodelay))
