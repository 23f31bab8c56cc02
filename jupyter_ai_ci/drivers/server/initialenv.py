"""Blanking a key in this process's *initial* environment, where a kernel could still read it.

Taking ``OPENAI_API_KEY`` out of ``os.environ`` (``keep_keys_from_kernels``) keeps it out of
the environment kernels inherit, but not out of ``/proc/<server pid>/environ``: Linux shows
there the block of memory the process was started with, which ``unsetenv`` never touches, and
a kernel the server started reads it in one line (``open(f'/proc/{os.getppid()}/environ')``,
security review, #30).  That block is this process's own memory: once the variable is unset
nothing in the process refers to it, so its value is overwritten in place with NUL bytes.

Linux only (the block's address is in ``/proc/self/stat``); elsewhere nothing is done and
docs/safety.md says what remains.  Never a crash: the range is written only when it lies in a
writable mapping of this process and holds exactly the bytes read from ``/proc/self/environ``.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterable
from pathlib import Path

# /proc/<pid>/stat fields (1-based, man 5 proc) of the initial environment's start and end.
_ENV_START, _ENV_END = 50, 51


def _env_block() -> tuple[int, bytes] | None:
    """The initial environment's address and bytes, or None where they cannot be had."""
    stat = Path("/proc/self/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()  # field 3 onwards: the name may hold spaces
    if len(fields) < _ENV_END - 2:
        return None  # a kernel older than 3.5
    start, end = int(fields[_ENV_START - 3]), int(fields[_ENV_END - 3])
    block = Path("/proc/self/environ").read_bytes()
    return (start, block) if start and len(block) == end - start else None


def _writable(start: int, end: int) -> bool:
    """Is [start, end) inside one writable mapping of this process?"""
    for line in Path("/proc/self/maps").read_text().splitlines():
        span, perms = line.split()[:2]
        low, high = (int(x, 16) for x in span.split("-"))
        if low <= start and end <= high:
            return perms[1] == "w"
    return False


def blank_initial(names: Iterable[str]) -> list[str]:
    """Overwrite the values of ``names`` in this process's initial environment block (call it
    after they are unset).  Returns the names whose value was blanked."""
    if not sys.platform.startswith("linux"):
        return []
    try:
        found = _env_block()
        if found is None:
            return []
        start, block = found
        blanked = []
        for name in names:
            prefix = name.encode() + b"="
            offset = 0
            for entry in block.split(b"\0"):
                if entry.startswith(prefix) and len(entry) > len(prefix):
                    at = start + offset + len(prefix)
                    size = len(entry) - len(prefix)
                    # Reading or writing an address outside a mapping would kill the server.
                    if _writable(at, at + size) and ctypes.string_at(at, size) == entry[len(prefix):]:
                        ctypes.memset(at, 0, size)
                        blanked.append(name)
                offset += len(entry) + 1
        return blanked
    except (OSError, ValueError):
        return []
