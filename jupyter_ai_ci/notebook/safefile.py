"""Reading a file someone else may have put in a folder, without it being used against the reader.

The replay store's folder comes with the notebook (a shared project folder, an unpacked
archive, a cloned repository), so whoever could write it chose what each name there is.
A plain ``open`` blocks for good on a named pipe nobody writes (the kernel stays busy), a
symbolic link to ``/dev/zero`` reads without end until memory runs out, and a huge file
fills memory as surely.  So a name is read only when it is a regular file of at most ``cap``
bytes: opened without blocking and without following a last-component link, then asked
(``fstat`` on what was opened, not the name, which can change in between) what it is.
Nothing else is read; the caller sets it aside with one line (``rename_aside``: the name
is moved, never what it points to).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

# O_NONBLOCK: opening a named pipe returns at once instead of waiting for a writer (a regular
# file ignores it).  O_NOFOLLOW: a last-component link fails to open instead of being followed.
# Neither exists on Windows, which has no named pipes in a folder (a link is seen by ``lstat`` there).
_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
          | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
# What open(O_NOFOLLOW) answers for a link: ELOOP on Linux and macOS, EMLINK on FreeBSD, EFTYPE on NetBSD.
_LINK_ERRORS = {errno.ELOOP, errno.EMLINK, getattr(errno, "EFTYPE", errno.ELOOP)}


class NotRead(Exception):
    """``path`` is not read: ``what`` it is, in words ("a named pipe", "larger than 8 MB")."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def read_regular(path: Path, cap: int) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``cap`` bytes.  Raises
    ``NotRead`` otherwise, and ``OSError`` (``FileNotFoundError`` …) as ``open`` would."""
    # Looked at first, so a device or a pipe is never even opened (opening some devices does
    # something); then what was opened is asked again, as the name may have changed since.
    _check(os.lstat(path), cap)
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if exc.errno in _LINK_ERRORS and os.path.islink(path):
            raise NotRead("a symbolic link") from None
        raise
    try:
        _check(os.fstat(fd), cap)
        chunks, total = [], 0
        while total <= cap:  # the file may grow after fstat: never more than cap + 1 bytes
            chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > cap:
            raise NotRead(f"larger than {size(cap)}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _check(st: os.stat_result, cap: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise NotRead(_kind(st.st_mode))
    if st.st_size > cap:
        raise NotRead(f"larger than {size(cap)}")


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def size(n: int) -> str:
    return f"{n / (1 << 20):g} MB" if n >= 1 << 20 else f"{n} bytes"


def _free_name(path: Path) -> Path:
    n, candidate = 1, path
    while os.path.lexists(candidate):  # a dangling link there is a name taken too
        n += 1
        candidate = path.with_name(f"{path.name}.{n}")
    return candidate


def rename_aside(path: Path, suffix: str) -> Path | None:
    """``path`` renamed to a name no file has (a hard link first, so nothing is overwritten);
    None when it cannot be (gone already: another process moved it)."""
    for n in range(1, 100):
        aside = path.with_name(f"{path.name}{suffix}" + (f".{n}" if n > 1 else ""))
        try:
            os.link(path, aside, follow_symlinks=False)  # a planted link is moved, never followed
        except FileExistsError:
            continue
        except OSError:  # no hard links here (some network file systems): a plain rename
            aside = _free_name(aside)
            try:
                os.rename(path, aside)
            except OSError:
                return None
            return aside
        with contextlib.suppress(OSError):
            os.unlink(path)
        return aside
    return None
