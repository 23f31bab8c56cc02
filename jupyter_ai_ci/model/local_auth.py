"""The local model server is ours, and only ours: a per-start key and a proof of ownership.

llama.cpp's server binds its port only after the model has loaded (seconds), and the
port is no secret (``/proc/<pid>/cmdline``, ``/proc/net/tcp``).  Without care another
local user can bind the port first, receive the whole prompt and answer with code that
runs in the victim's kernel; and anyone on the host can use a server that has no key.

So every start gets two random secrets, handed to the server in its environment
(``/proc/<pid>/environ`` is readable by its owner only; never the command line, which
every user can read): an API key it demands on every request, and a model alias that
only it knows.  Before the first request, a server counts as ready only once it proves
it is ours:

1. on Linux, the socket listening on the port belongs to our child process (its
   ``/proc/<pid>/fd``); anything else listening there is refused before we send it a
   single byte;
2. a request without the key is answered 401 (it enforces a key), and with the key it
   lists the secret alias.  A squatter that answers 401 to learn the key still cannot
   know the alias, and the key it learnt opens nothing: our server never bound the port.

Why not a Unix socket: ``python -m llama_cpp.server`` passes only host and port to
uvicorn (no ``--uds``); serving its app through uvicorn ourselves would tie us to its
internal factory and settings, and Windows has no Unix sockets.  The checks above make
the loopback port as private as a socket in a private directory would be.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

# Settings llama_cpp.server reads from the environment that would override ours: uvicorn
# takes HOST/PORT from the environment over --host/--port (a HOST=0.0.0.0 in the user's
# shell would expose the server to the network), and CONFIG_FILE replaces every setting.
_OVERRIDES = ("API_KEY", "MODEL_ALIAS", "HOST", "PORT", "CONFIG_FILE")


class NotOurs(Exception):
    """Something other than the server we started answers on its port."""


@dataclass(frozen=True)
class Secrets:
    key: str  # the API key the server demands (Authorization: Bearer)
    alias: str  # the model alias only our server knows: its proof of identity

    def __repr__(self) -> str:  # never in a traceback or a log
        return "Secrets(<hidden>)"


def new_secrets() -> Secrets:
    return Secrets(key=secrets.token_urlsafe(32), alias=f"jupyter-ai-ci-{secrets.token_hex(16)}")


def child_env(found: Secrets, host: str, port: int) -> dict[str, str]:
    """The server's environment: ours, minus settings that would override the launch,
    plus the secrets (pydantic-settings reads ``API_KEY`` and ``MODEL_ALIAS``)."""
    env = {k: v for k, v in os.environ.items() if k.upper() not in _OVERRIDES}
    env.update(API_KEY=found.key, MODEL_ALIAS=found.alias, HOST=host, PORT=str(port))
    return env


def _listeners(port: int) -> set[str] | None:
    """Inodes of the sockets listening on ``port`` (any address, IPv4 or IPv6); None where
    /proc/net is not there to tell."""
    found: set[str] = set()
    seen = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        seen = True
        for line in lines:
            fields = line.split()
            # local_address is ADDR:PORT in hex; state 0A is LISTEN; field 9 is the inode.
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(fields[9])
    return found if seen else None


def _sockets_of(pid: int) -> set[str]:
    inodes = set()
    fds = Path(f"/proc/{pid}/fd")
    try:
        for fd in fds.iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    except OSError:
        pass
    return inodes


def owned_listener(port: int, pid: int) -> bool | None:
    """True when ``pid`` holds the socket listening on ``port``; False when nothing listens
    yet; None where the system cannot tell (not Linux).  Raises ``NotOurs`` when another
    process listens there."""
    if not sys.platform.startswith("linux"):
        return None
    listening = _listeners(port)
    if listening is None:
        return None
    if not listening:
        return False
    if listening <= _sockets_of(pid):
        return True
    raise NotOurs("another process listens on it")


def _get(url: str, key: str | None, timeout: float) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    # No proxy: a loopback request must not leave through HTTP_PROXY.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as r:
            return int(r.status), r.read(65536)
    except urllib.error.HTTPError as e:
        return int(e.code), b""
    except OSError:
        raise  # nothing answers yet (or it hung up): the caller waits
    except http.client.HTTPException as e:
        raise NotOurs(f"it does not answer HTTP ({type(e).__name__})") from None


def proves_ours(base_url: str, found: Secrets, timeout: float = 2.0) -> None:
    """Raise ``NotOurs`` unless the server at ``base_url`` demands the key and knows the
    alias; ``OSError`` when nothing answers yet (within ``timeout`` seconds)."""
    status, _ = _get(f"{base_url}/models", None, timeout)
    if status != 401:
        raise NotOurs(f"it answered {status} to a request without the key")
    status, body = _get(f"{base_url}/models", found.key, timeout)
    try:
        ids = {m.get("id") for m in json.loads(body).get("data", [])} if status == 200 else set()
    except (ValueError, AttributeError):
        ids = set()
    if found.alias not in ids:
        raise NotOurs("it does not know the secret this start gave our server")


def ready(base_url: str, port: int, pid: int, found: Secrets, timeout: float = 2.0) -> bool:
    """True when our server is up and proved it is ours; False when not listening yet.
    Raises ``NotOurs`` for anything else on the port -- before it is sent the prompt."""
    if owned_listener(port, pid) is False:
        return False
    try:
        proves_ours(base_url, found, timeout)
    except OSError:
        return False
    return True
