"""How a person's model server ended when nobody stopped it, told to whoever's request it dropped.

The server's parent is its keeper (``keeper.py``), never a client, so only the keeper learns how it
ended.  It writes that beside the runtime file (``<stem>.ended``, 0600, in Jupyter's runtime folder:
the person's alone); the client whose request the server dropped reads it, removes it and says what
happened in one line with what to do.  A crash at every request, seen on CPUs with AMX where
llama.cpp was built with ``-march=native`` (SIGSEGV in its AMX kernels), then names its remedy,
where before each request said only that the server "stopped unexpectedly".
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from jupyter_ai_ci.model import runtime

__all__ = ["record", "reason"]

_CRASHES = {"SIGSEGV", "SIGILL", "SIGBUS", "SIGFPE", "SIGABRT"}
_MOST = 64  # bytes: a signal's name or an exit status


def _file(model: Path) -> Path:
    return runtime.folder() / f"{runtime.stem(model)}.ended"


def record(model: Path, pid: int, returncode: int) -> None:
    """The keeper: its server ``pid`` ended with ``returncode`` (negative: killed by a signal)."""
    try:
        what = signal.Signals(-returncode).name if returncode < 0 else f"exit status {returncode}"
    except ValueError:
        what = f"signal {-returncode}"
    with contextlib.suppress(OSError):
        fd = os.open(_file(model), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"{pid} {what}")


def _take(model: Path, pid: int, wait: float) -> str:
    """What the keeper wrote of server ``pid``, removed once read (another server's is an old story:
    removed too); waits up to ``wait`` s for it (the keeper looks at its server twice a second)."""
    deadline = time.monotonic() + wait
    while True:
        with contextlib.suppress(OSError):
            fd = os.open(_file(model), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd) as f:
                text = f.read(_MOST)
            _file(model).unlink(missing_ok=True)
            whose, _, what = text.partition(" ")
            if whose == str(pid) and what.replace(" ", "").isalnum():  # only what record() writes
                return what
        if time.monotonic() >= deadline:
            return ""
        time.sleep(0.1)


def reason(model: Path, pid: int, wait: float = 1.5) -> str:
    """One line for a request that server ``pid`` dropped as it ended: how, and what to do."""
    how = _take(model, pid, wait)
    again = "it will be restarted on the next request"
    if how in _CRASHES:
        return (f"the local model server crashed ({how}); {again}. If it crashes at each request, its "
                "llama.cpp build does not run on this CPU: build it again with CMAKE_ARGS=-DGGML_NATIVE=OFF "
                "(docs/configuration.md, 'The local model')")
    if how == "SIGKILL":
        return f"the local model server was killed (SIGKILL: the system may be out of memory); {again}"
    return f"the local model server stopped unexpectedly{f' ({how})' if how else ''}; {again}"
