"""Whose turn it is at the shared local model: one ticket per request, first come, first served.

Several notebooks, the panel, the command line and the MCP server share one llama.cpp server per
person and model (runtime.py).  llama-cpp-python's server answers one request at a time: one
``Llama`` per model behind one lock (``llama_cpp/server/app.py``: ``llama_outer_lock`` /
``llama_inner_lock``), and no setting for parallel slots.  llama.cpp's own ``llama-server`` has
slots, but we do not ship it, and on 2 cores they would not pay: prompt reading, the bulk of a
request's time on a CPU, is compute-bound, so two slots split the same two cores and each request
takes twice as long.  So requests queue, and the queue is ours:

- each request takes a ticket, a file in ``<stem>.line/`` beside the runtime file, named by the
  time it was taken (system-wide monotonic clock, taken under an exclusive lock so that names
  sort in arrival order);
- it sends its HTTP request only once no ticket is ahead of it, and keeps its ticket until its
  reply has ended: the one being answered counts as ahead, so the second of two notebooks reads
  "waiting for the local model: 1 request ahead", and the count goes down as the line moves;
- Stop, Ctrl-C or a cancelled task removes the ticket at once, and nothing was sent: the server
  never generates for a request nobody waits for.  (Its own lock would drop a streamed request
  whose client hung up, but only the server's version decides that, and a request waiting there
  counts the wait against its read timeout; waiting here costs at most ``POLL`` per turn.)

A ticket's owner holds a ``flock`` on it for as long as it lives.  The operating system releases
it when the process dies, even by SIGKILL, so a ticket whose lock can be taken is a dead one's:
whoever sees it removes it.  No pid is trusted (a reused pid would stall the line).  A live
process can still stall it (stopped in a debugger, SIGSTOP): a request that has waited longer than
a request may take (the client's timeout, 600 s) behind the same first one is sent anyway, and
the server's lock keeps the two apart.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from jupyter_ai_ci.model import runtime

# How a line says this request waits its turn: a driver shows it while it holds and drops it once
# the reply starts (the magic's head line, the panel's transient notice), not as a lasting line.
WAITING = "waiting for the local model"
TURN = "the local model is reading this request"  # said once the wait is over: the line goes


def waiting(text: str) -> str | None:
    """What a line the run says means to a driver's waiting line: its text while the request
    waits, "" once the wait is over (the line goes), None for any other line."""
    line = text.strip(" ·\n")
    return line if line.startswith(WAITING) else "" if line.startswith(TURN) else None

try:
    import fcntl
except ImportError:  # Windows: no flock; a ticket's owner is told alive by its pid
    fcntl = None  # type: ignore[assignment]

POLL = 0.1  # seconds between looks at the line: a few syscalls each; the gap a turn may wait


def line_folder(model: Path) -> Path:
    path = runtime.folder() / f"{runtime.stem(model)}.line"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def _held(path: Path) -> bool:
    """Its owner is alive (it holds the ticket's lock).  A ticket whose lock is free is removed."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False  # gone: its request ended
    try:
        if fcntl is None:  # no flock (Windows): the pid in its name, which may be reused
            return runtime.running(int(path.name.split("-")[1]))
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        path.unlink(missing_ok=True)  # its owner died without removing it
        return False
    finally:
        os.close(fd)


class Ticket:
    """One request's place in the line for ``model``'s server.  ``leave()`` (or the end of the
    ``with`` block, or the process's death) gives it up."""

    def __init__(self, model: Path) -> None:
        self.folder = line_folder(model)
        self.said = 0  # how many were ahead when it last looked
        self.head: list[str] = []  # the first of them, and since when
        self.since = time.monotonic()
        guard = runtime._open_lock(model, "line")
        try:
            if fcntl is not None:
                fcntl.flock(guard, fcntl.LOCK_EX)  # held for microseconds: a name, a file, a rename
            name = f"{time.monotonic_ns():020d}-{os.getpid()}-{secrets.token_hex(3)}"
            # Made and locked under a dotted name that nobody lists, then renamed: no one ever
            # sees it unlocked and takes it for a dead one's.
            tmp = self.folder / f".{name}"
            self.fd: int | None = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            if fcntl is not None:
                fcntl.flock(self.fd, fcntl.LOCK_EX)
            self.path = self.folder / name
            os.replace(tmp, self.path)
        finally:
            os.close(guard)

    def before(self) -> list[str]:
        """The live requests that came before this one, oldest first (the one being answered too)."""
        return [p.name for p in sorted(self.folder.iterdir())
                if not p.name.startswith(".") and p.name < self.path.name and _held(p)]

    def ahead(self) -> int:
        return len(self.before())

    def look(self, say: Callable[[str], None], patience: float = math.inf) -> bool:
        """Is it this request's turn?  Says where it stands whenever that changed.  After
        ``patience`` seconds behind the same first request (a process stopped or stuck while it
        holds its ticket), it is: the server's own lock then keeps the order."""
        before = self.before()
        if before[:1] != self.head:
            self.head, self.since = before[:1], time.monotonic()
        if before and time.monotonic() - self.since > patience:
            say(f"· the request ahead has had the local model for {patience:g} s; sending this one anyway\n")
            before = []  # its turn now, as far as the line goes
        elif before and len(before) != self.said:
            say(f"· {WAITING}: {len(before)} request{'s' if len(before) > 1 else ''} ahead\n")
        if not before and self.said:  # it waited: the drivers drop their waiting line on this one
            say(f"· {TURN}\n")
        self.said = len(before)
        return not before

    def wait(self, say: Callable[[str], None], patience: float = math.inf) -> None:
        """Until no request is ahead; Ctrl-C (KeyboardInterrupt) leaves the line via ``with``."""
        while not self.look(say, patience):
            time.sleep(POLL)

    async def await_turn(self, say: Callable[[str], None], patience: float = math.inf) -> None:
        """The same, without blocking the event loop; a cancelled task leaves the line via ``with``."""
        import asyncio

        while not self.look(say, patience):
            await asyncio.sleep(POLL)

    def leave(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self.fd)  # releases its lock, after the unlink: never seen there and free
        self.fd = None

    def __enter__(self) -> Ticket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.leave()
