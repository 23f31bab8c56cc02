"""The files' part of a transaction: what an attempt writes in the folder is put back.

Python raises an audit event (PEP 578) before it opens a file for writing, renames, removes,
truncates or makes a directory -- for ``open``, ``pathlib``, ``shutil``, pandas' ``to_csv``,
``np.save`` and matplotlib's ``savefig`` alike.  One hook, added to the process once (hooks
cannot be removed), keeps each file's old content *just before its first change* while an
attempt records: a copy in a private folder (mode 0700), or "it did not exist".  ``Journal``
then puts every file back, removes files and folders the attempt made, and says what it could
not: a file over the size cap, a write through a link or outside the folder, a folder it
cannot read.  Outside an attempt the hook returns at its first test (see
docs/benchmarks.md for what it costs an ``open``).

What no audit event reports -- a C library writing on its own (pyarrow, HDF5, SQLite's pages),
another process -- is not seen; docs/safety.md says so.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import sys
import tempfile
import threading
from builtins import any, getattr, isinstance, len, sorted  # noqa: UP029 -- bound once: the kernel's code may patch them
from dataclasses import dataclass, field

from jupyter_ai_ci.safety import undofolder
from jupyter_ai_ci.text import human_size

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
# event -> which of its arguments are paths changed (by index) and which ``dir_fd`` goes with each
_EVENTS: dict[str, tuple[tuple[int, int | None], ...]] = {
    "os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),),
    "os.rename": ((0, 2), (1, 3)), "os.truncate": ((0, None),), "os.symlink": ((1, 2),),
    "os.link": ((1, 3),), "os.chmod": ((0, 2),), "shutil.rmtree": ((0, 1),),
}
_active: Journal | None = None  # the journal recording now (one attempt at a time per process)
_local = threading.local()  # our own copies raise events too: never recorded
_installed = False
_realpath, _join, _getcwd = os.path.realpath, os.path.join, os.getcwd


def _hook(event: str, args: tuple[object, ...]) -> None:
    journal = _active
    if journal is None:  # the whole cost outside an attempt: one global read
        return
    if event == "open":
        path, flags = args[0], args[2]
        if isinstance(flags, int) and flags & _WRITE_FLAGS and isinstance(path, (str, bytes, os.PathLike)):
            journal.touch(path, None, follow=True)
    elif event in _EVENTS and not getattr(_local, "busy", False):
        for index, fd_index in _EVENTS[event]:
            fd = args[fd_index] if fd_index is not None and fd_index < len(args) else None
            if index < len(args) and isinstance(args[index], (str, bytes, os.PathLike)):
                journal.touch(args[index], fd if isinstance(fd, int) else None,  # type: ignore[arg-type]
                              follow=event == "os.truncate", tree=event == "shutil.rmtree", made=event == "os.mkdir")


def install() -> None:
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True


@functools.lru_cache(maxsize=1)  # resolved once: every attempt makes a journal
def _ignored() -> tuple[str, ...]:
    """Caches and temporary files outside the folder (matplotlib's font cache, joblib's
    temporary files): saying each would bury what matters."""
    places = (tempfile.gettempdir(), "~/.cache", os.environ.get("XDG_CACHE_HOME") or "~/.cache", "~/.matplotlib",
              "~/.ipython", "~/.local/share/jupyter", "/dev")
    return tuple(dict.fromkeys(_realpath(os.path.expanduser(p)) for p in places))  # each once, in order


@functools.lru_cache(maxsize=1)
def _made_by_libraries() -> frozenset[str]:
    """Folders a library makes for itself on its first import: matplotlib's config folder (and
    the config home above it). Making one is nobody's business -- said, it cost the quickstart's
    chart its check ("cannot be undone: wrote ~/.config/matplotlib") -- but a file written into
    one is still said: a matplotlibrc there changes the person's every plot."""
    config = os.path.expanduser(os.environ.get("XDG_CONFIG_HOME") or "~/.config")
    return frozenset(_realpath(p) for p in (config, os.path.join(config, "matplotlib"),
                                            os.environ.get("MPLCONFIGDIR") or config))


@dataclass
class Prior:
    """A path as it was before the attempt's first change to it."""

    kind: str  # "file", "dir", "link", "absent", "kept-out" (over the cap, unreadable: not undone)
    backup: str = ""  # a file's copy; a link's target
    after: tuple[int, int] | None = None  # (size, mtime_ns) when the attempt ended, for a later undo


@dataclass
class Journal:
    """Old contents of the files one attempt changed inside ``roots``."""

    roots: tuple[str, ...]
    cap: int = 256 << 20
    # Writes outside the folder that are nobody's business (caches, temporary files): not said.
    ignore: tuple[str, ...] = field(default_factory=lambda: _ignored())
    made: frozenset[str] = field(default_factory=lambda: _made_by_libraries())  # these folders made, alone
    priors: dict[str, Prior] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what cannot be undone, said at once
    bytes_kept: int = 0
    _folder: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        global _active
        install()
        _active = self

    def stop(self) -> None:
        global _active
        if _active is self:
            _active = None

    def _inside(self, real: str) -> bool:
        return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in self.roots)

    def _resolve(self, path: object, dir_fd: int | None, follow: bool) -> tuple[str, str]:
        """(the path as written, made absolute; where a change to it lands)."""
        raw = os.fsdecode(os.fspath(path))  # type: ignore[call-overload]
        if not os.path.isabs(raw):
            base = _getcwd()
            if dir_fd is not None and dir_fd >= 0:
                base = os.readlink(f"/proc/self/fd/{dir_fd}")  # Linux; elsewhere: OSError, not seen
            raw = _join(base, raw)
        raw = os.path.normpath(raw)
        if follow:
            return raw, _realpath(raw)
        # The link itself is removed or renamed, not what it points to: resolve its folder only.
        return raw, _join(_realpath(os.path.dirname(raw)), os.path.basename(raw))

    def touch(self, path: object, dir_fd: int | None, follow: bool, tree: bool = False, made: bool = False) -> None:
        """``made``: the change is a folder made (not renamed, removed or changed)."""
        if getattr(_local, "busy", False):
            return
        _local.busy = True
        try:
            with self._lock:
                self._touch(path, dir_fd, follow, tree, made)
        except OSError:
            pass  # a path we cannot resolve: the operation itself will say what is wrong
        finally:
            _local.busy = False

    def _touch(self, path: object, dir_fd: int | None, follow: bool, tree: bool, made: bool) -> None:
        written, real = self._resolve(path, dir_fd, follow)
        if real in self.priors:
            return
        if not self._inside(real):
            if made and real in self.made and not self._inside(written):
                return  # a library's own folder made; not remembered, so a later change to it is said
            if self._inside(written) or not any(real == p or real.startswith(p + os.sep) for p in self.ignore):
                self.notes.append(f"wrote {written}" + (" (through a link to outside the folder)"
                                                        if self._inside(written) else " (outside the folder)"))
            self.priors[real] = Prior("kept-out")
            return
        self._keep(real)
        if tree and os.path.isdir(real) and not os.path.islink(real):
            for top, dirs, files in os.walk(real):
                for name in (*dirs, *files):
                    self._keep(_join(top, name))

    def _keep(self, real: str) -> None:
        if real in self.priors:
            return
        try:
            st = os.lstat(real)
        except FileNotFoundError:
            self.priors[real] = Prior("absent")
            return
        if stat.S_ISDIR(st.st_mode):
            self.priors[real] = Prior("dir")
        elif stat.S_ISLNK(st.st_mode):  # the link itself removed or renamed: made again, never followed
            self.priors[real] = Prior("link", os.readlink(real))
        elif not stat.S_ISREG(st.st_mode):
            self.notes.append(f"changed {real} (not a regular file)")
            self.priors[real] = Prior("kept-out")
        elif st.st_size > self.cap:
            self.notes.append(f"changed {_short(real, self.roots)} ({human_size(st.st_size)}, "
                              f"over the {human_size(self.cap)} cap)")
            self.priors[real] = Prior("kept-out")
        else:
            self.priors[real] = Prior("file", self._copy(real))
            self.bytes_kept += st.st_size

    def _copy(self, real: str) -> str:
        if not self._folder:
            self._folder = undofolder.make()
        backup = _join(self._folder, str(len(self.priors)))
        shutil.copy2(real, backup, follow_symlinks=False)
        return backup

    def seal(self) -> None:
        """The attempt ended: note each changed path's size and time, so that a later undo can
        tell a change made since (by the person, another process) and leave it alone."""
        for real, prior in self.priors.items():
            if prior.kind != "kept-out":
                prior.after = _stamp(real)

    def restore(self, later: bool = False) -> tuple[list[str], list[str]]:
        """Put every file back; (what was restored, what was not and why).  ``later``: only
        where the path is still as the attempt left it (``seal``)."""
        restored: list[str] = []
        kept = list(self.notes)
        # Folders first (a file goes back into its folder), new things last, deepest first.
        order = sorted(self.priors.items(), key=lambda kv: (kv[1].kind != "dir", kv[1].kind == "absent",
                                                          -kv[0].count(os.sep) if kv[1].kind == "absent" else 0))
        for real, prior in order:
            if prior.kind == "kept-out":
                continue
            name = _short(real, self.roots)
            if later and prior.after is not None and _stamp(real) != prior.after:
                kept.append(f"{name} (changed since; not restored)")
                continue
            try:
                if _put_back(real, prior):
                    restored.append(name)
            except OSError as exc:
                kept.append(f"{name} ({exc.strerror or type(exc).__name__})")
        self.discard()
        return restored, kept

    def discard(self) -> None:
        self.stop()
        if self._folder:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = ""
        self.priors.clear()
        self.bytes_kept = 0


def _put_back(real: str, prior: Prior) -> bool:
    """True when something had to change."""
    exists = os.path.lexists(real)
    if prior.kind == "dir":
        if os.path.isdir(real) and not os.path.islink(real):
            return False
        if exists:
            os.unlink(real)
        os.makedirs(real)
        return True
    if prior.kind in ("file", "link"):
        if exists and os.path.isdir(real) and not os.path.islink(real):
            shutil.rmtree(real)
        # Written beside it and renamed over it: a read-only file goes back too, and a link put
        # at its place is replaced, never followed (nothing is ever written outside the folder).
        fresh = f"{real}.aici-undo-{os.getpid()}"
        if prior.kind == "link":
            os.symlink(prior.backup, fresh)
        else:
            shutil.copy2(prior.backup, fresh, follow_symlinks=False)
        os.replace(fresh, real)
        return True
    if not exists:  # "absent": the attempt made it
        return False
    if os.path.isdir(real) and not os.path.islink(real):
        os.rmdir(real)  # a folder the attempt made and filled with more than it recorded stays: said
    else:
        os.unlink(real)
    return True


def _stamp(real: str) -> tuple[int, int] | None:
    try:
        st = os.lstat(real)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _short(real: str, roots: tuple[str, ...]) -> str:
    for root in roots:
        if real.startswith(root.rstrip(os.sep) + os.sep):
            return os.path.relpath(real, root)
    return real
