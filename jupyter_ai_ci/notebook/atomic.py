"""Replacing a file whole, so that a reader never sees half of it and a crash leaves the
old one: written beside it under a fresh name, then renamed over it.

The new file gets the mode a plain ``open(path, "w")`` would have given it: the old file's
own, or, for a new file, what the user's umask allows.  ``tempfile.mkstemp`` makes its file
readable by its owner only, and renaming it over a shared notebook made the notebook private
(``-rw-r--r--`` became ``-rw-------``).
"""

from __future__ import annotations

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
    # O_EXCL: never a file (or a link) someone put there; 0o666: the umask applies, as with open().
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))  # the old file's mode, group access included
        except FileNotFoundError:
            pass
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
