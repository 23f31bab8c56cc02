"""Links already in the working folder that lead out of it, for the risk scan's rules for writes.

Found in a security review (issue #38, item 4): with a link ``home -> ~`` in the notebook's
folder (made by an earlier cell, by a tool, or checked out of a repository), ``open('home/.bashrc',
'a')`` reads as a write inside the folder and ran unasked.  Reading the code cannot tell; the
file system can.  The kernel says where its current directory and its working folder are
(``PolicySettings.folders``, from context/snapshot.py); where this process sees that folder --
the magic in the kernel itself, the server and the command line on the kernel's machine -- a
relative write is judged by where it really lands.  Elsewhere the path reads as it did.
"""

from __future__ import annotations

import os

__all__ = ["leads_out"]


def leads_out(path: str, folders: tuple[str, str]) -> str | None:
    """Where a relative ``path`` really is, when a link on its way leads it out of the working
    folder; None when it stays inside, or the folder is not in sight."""
    current, working = folders
    try:
        if not os.path.isdir(current):
            return None
        real = os.path.realpath(os.path.join(current, path))
        home = os.path.realpath(working)
    except (OSError, ValueError):  # a path with a NUL, a folder gone
        return None
    return None if real == home or real.startswith(home.rstrip(os.sep) + os.sep) else real
