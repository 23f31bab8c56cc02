"""Where a person's managed model server is found: one runtime file per model, and three locks.

One llama.cpp server per person and model (issue 37), shared by every kernel, the Jupyter
server's panel, the command line and the MCP server.  It is found through a file in Jupyter's
runtime folder (``jupyter_core.paths.jupyter_runtime_dir()``, beside the kernels' connection
files), named by a hash of the model's path and holding its port, process, owner and secrets:
mode 0600, written whole (renamed into place), read only when it is ours and 0600.

Three ``flock`` files beside it.  The operating system releases a process's flocks when it
dies, even by SIGKILL, so a killed kernel leaves nothing to clean up:

- ``.start.lock`` (exclusive): held while a process looks for the server and starts one if
  need be, so two kernels starting at the same moment start one;
- ``.busy.lock`` (shared): held by every request in flight.  The keeper (``keeper.py``) takes
  it exclusive, never waiting, to stop the server: never under a request, and no request can
  begin while it stops.  Its mtime is when the last request ended: the idle clock;
- ``.users.lock`` (shared): held by every process that used the server, for its life; with no
  idle timeout the server stops once none is left.

Lock order, everywhere: busy, then start.  The keeper holds busy exclusive when it takes start,
so no client can hold start while waiting for it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock; each process then starts and finds servers unlocked
    fcntl = None  # type: ignore[assignment]

PREFIX = "jupyter-ai-ci-model-"


class Refused(Exception):
    """A runtime file that is not ours alone: never used (its one line says why)."""


@dataclass(frozen=True)
class Entry:
    """What the runtime file says about a running server."""

    model: str  # the model file's absolute path: the key
    port: int
    pid: int  # the llama.cpp server, which holds the listening socket
    keeper: int  # its keeper (keeper.py): stopping it stops the server
    key: str  # the API key the server demands
    alias: str  # the model alias only it knows (model/local_auth.py)
    uid: int  # its owner
    log: str  # its log file, removed with it

    def __repr__(self) -> str:  # never the secrets in a traceback or a log
        return f"Entry(model={self.model!r}, port={self.port}, pid={self.pid}, keeper={self.keeper})"


def folder() -> Path:
    from jupyter_core.paths import jupyter_runtime_dir

    path = Path(jupyter_runtime_dir())
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def stem(model: Path) -> str:
    """A model's name in the runtime folder: the hash of its absolute path (``local:PATH`` and
    ``local:./PATH`` from another folder are the same server)."""
    return PREFIX + hashlib.sha256(str(model.resolve()).encode()).hexdigest()[:16]


def file_for(model: Path) -> Path:
    return folder() / f"{stem(model)}.json"


def write(entry: Entry) -> None:
    """The runtime file, whole and 0600 (jupyter_core's ``secure_write``, as for connection files),
    renamed over any old one so that a reader never sees half of it."""
    from jupyter_core.paths import secure_write

    path = file_for(Path(entry.model))
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with secure_write(str(tmp)) as f:
            json.dump(asdict(entry), f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def read(model: Path) -> Entry | None:
    """The runtime file of ``model``'s server, None when there is none.  Raises ``Refused`` when
    it is not ours alone: another owner, readable or writable by others, a link, not ours inside."""
    path = file_for(model)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: a link someone put there
        raise Refused(f"ignored {path}: {exc.strerror}; remove it") from None
    with os.fdopen(fd, encoding="utf-8") as f:
        st = os.fstat(f.fileno())
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise Refused(f"ignored {path}: it belongs to another user (uid {st.st_uid}); remove it")
        if os.name == "posix" and stat.S_IMODE(st.st_mode) != 0o600:
            raise Refused(f"ignored {path}: its mode is {stat.S_IMODE(st.st_mode):o}, not 600 (others may "
                          "have read its secret); it is replaced by a new server's")
        try:
            entry = Entry(**json.load(f))
        except (ValueError, TypeError):
            raise Refused(f"ignored {path}: not a runtime file of jupyter-ai-ci; it is replaced") from None
    if entry.uid != getattr(os, "getuid", lambda: entry.uid)() or entry.model != str(model.resolve()):
        raise Refused(f"ignored {path}: it names another user or model; it is replaced")
    return entry


def names(model: Path, pid: int) -> bool:
    """The runtime file is there and names the server ``pid``."""
    with contextlib.suppress(Refused, OSError):
        entry = read(model)
        return entry is not None and entry.pid == pid
    return False


def running(pid: int) -> bool:
    """``pid`` is a live process (not a zombie waiting for its parent)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's: alive, and not ours (the listener check says so)
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc: kill(0) said it is there


# ---- the locks --------------------------------------------------------------

def _open_lock(model: Path, kind: str) -> int:
    return os.open(folder() / f"{stem(model)}.{kind}.lock", os.O_RDWR | os.O_CREAT, 0o600)


@contextlib.contextmanager
def start_lock(model: Path) -> Iterator[None]:
    """Exclusive: who holds it looks for the server and starts it if need be."""
    fd = _open_lock(model, "start")
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def try_start_lock(model: Path, wait: float) -> int | None:
    """The start lock within ``wait`` seconds (its fd: close it to release), or None."""
    fd = _open_lock(model, "start")
    deadline = time.monotonic() + wait
    while fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.05)
    return fd


class Lease:
    """A request in flight: the server is not stopped under it.  ``end()`` (or the process's
    death) releases it; a clean end also marks the time, which the idle clock counts from."""

    def __init__(self, model: Path) -> None:
        self.fd: int | None = _open_lock(model, "busy")
        if fcntl is not None:
            fcntl.flock(self.fd, fcntl.LOCK_SH)  # waits only while a keeper stops the server

    def end(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.utime(self.fd)
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()


_users: dict[str, int] = {}


def register_user(model: Path) -> None:
    """This process uses ``model``'s server until it ends (the lock goes with it)."""
    key = str(folder() / stem(model))  # the folder too: tests give each its own runtime folder
    if key not in _users:
        fd = _open_lock(model, "users")
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_SH)
        _users[key] = fd


def exclusive_now(fd: int) -> bool:
    """Take ``fd``'s lock exclusive if nobody holds it, without waiting (the keeper's look)."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def release(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
