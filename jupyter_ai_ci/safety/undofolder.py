"""Where a transaction keeps the old contents of the files an attempt changes (filejournal.py).

One private folder per process and attempt, in the system's temporary folder: ``mkdtemp`` makes
it mode 0700, so only the person can read what their files held.  Its name carries the process
id, because a kernel that is killed (SIGKILL, the machine's OOM killer) cannot remove its own:
the next process of the same person that needs a folder removes those of processes no longer
running, once, and never another user's (the folder's owner is checked, not only its name).
"""

from __future__ import annotations

import os
import shutil
import tempfile

PREFIX = "jupyter-ai-ci-undo-"
_swept = False
# Bound once: code the kernel runs may patch os or shutil, and the sweep runs inside an attempt.
_join, _listdir, _stat, _kill, _getuid, _getpid = os.path.join, os.listdir, os.stat, os.kill, os.getuid, os.getpid
_rmtree, _mkdtemp, _tempdir = shutil.rmtree, tempfile.mkdtemp, tempfile.gettempdir


def make() -> str:
    """A new private folder for this process (the dead ones' leftovers removed first, once)."""
    _sweep()
    return _mkdtemp(prefix=f"{PREFIX}{_getpid()}-")


def _sweep() -> None:
    global _swept
    if _swept:
        return
    _swept = True
    base = _tempdir()
    try:
        names = [n for n in _listdir(base) if n.startswith(PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(PREFIX):].split("-", 1)[0]
        path = _join(base, name)
        try:
            if not pid.isdigit() or _stat(path).st_uid != _getuid() or _alive(int(pid)):
                continue
        except OSError:
            continue
        _rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        _kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process of that number: not ours to judge
    return True
