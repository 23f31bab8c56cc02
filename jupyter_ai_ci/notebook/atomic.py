"""Replacing a file whole, so that a reader never sees half of it and a crash leaves the
old one: written beside it under a fresh name, then renamed over it.

The new file gets the mode a plain ``open(path, "w")`` would have given it: the old file's
own, or, for a new file, what the user's umask allows.  ``tempfile.mkstemp`` makes its file
readable by its owner only, and renaming it over a shared notebook made the notebook private
(``-rw-r--r--`` became ``-rw-------``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TextIO


def replace_file(path: Path, write: Callable[[TextIO], None]) -> None:
    """Write ``path`` whole with ``write(f)``; on any failure ``path`` is as it was."""
    folder = path.parent if str(path.parent) else Path(".")
    tmp = folder / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # O_EXCL: never a file (or a link) someone put there; 0o666: the umask applies, as with open();
    # O_BINARY (Windows): the text layer alone turns newlines into CRLF, as mkstemp's file did.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            _keep_mode(path, f.fileno())
            write(f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _keep_mode(path: Path, fd: int) -> None:
    """The old file's permission bits (group access included) on the new one, where the file
    system allows it: some (SMB mounts, WSL's drvfs) refuse chmod, and the write goes on."""
    if not hasattr(os, "fchmod"):  # Windows: no POSIX modes to keep
        return
    try:
        os.fchmod(fd, stat.S_IMODE(os.stat(path).st_mode))
    except OSError:  # no old file, or a file system without modes
        pass
