"""``%ask undo`` in the kernel the magic runs in: the last request (or the last N) taken back.

The kernel part is ``safety/undostack.py`` (names, process, files) and the run's part is
``run/undo.py`` (replay records, the conversation); this does the notebook's part -- the cells
the requests inserted are taken out through the labextension's comm, or, where no extension
inserts cells, the line says which to delete -- and shows the line.  The Undo button on a
request's status line runs ``%ask undo ID``: that request, refused when a newer one came after it.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Any, Protocol

from IPython.core.error import UsageError

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.notebook import comm
from jupyter_ai_ci.notebook.replay import ReplayStore
from jupyter_ai_ci.run import undo
from jupyter_ai_ci.run.request import Result, Run
from jupyter_ai_ci.run.session import Session
from jupyter_ai_ci.safety import remote, undostack

USAGE = "%ask undo takes the last request back; %ask undo N the last N (newest first)"


class Host(Protocol):
    """What this needs of ``drivers.magic.MagicDriver`` (not imported: no cycle)."""

    shell: Any
    session: Session
    settings: AICISettings


def note_request(driver: Host, request_id: str, run: Run, result: Result, cells: tuple[str, ...]) -> str:
    """Tell the kernel's undo entry what else the request made (its cells, its record); the line
    that says its way back was not kept, if it was not ("" otherwise)."""
    stack = getattr(driver.shell, undostack.ATTRIBUTE, None)
    if not isinstance(stack, undostack.UndoStack):
        return ""
    stack.note(request_id, undo.request_meta(run, result.outcome, cells, "magic"))
    return stack.notes.pop(request_id, "")


def kept_id(driver: Host, request_id: str) -> str:
    """``request_id`` when the kernel keeps a way back for it (the Undo button shows then)."""
    stack = getattr(driver.shell, undostack.ATTRIBUTE, None)
    found = isinstance(stack, undostack.UndoStack) and any(e.request == request_id for e in stack.entries)
    return request_id if found else ""


def undo_last(driver: Host, words: list[str]) -> None:
    """``%ask undo [N | ID]``."""
    shell = driver.shell
    n, only = _parse(words)
    stack = undostack.stack_of(shell, driver.settings.undo_keep, driver.settings.undo_memory)
    done = remote.undo_requests(shell, stack, n, only)
    store = ReplayStore(os.path.join(os.getcwd(), driver.settings.replay_file), say=lambda t: print(t, end=""))
    result = undo.finish(asdict(done), driver.session, store)
    line = result.line
    if result.ok and result.cells:
        if comm.frontend_info(shell) is not None:
            comm.delete_cells(shell, result.cells)
            line += f"; {len(result.cells)} cell{'s' if len(result.cells) > 1 else ''} taken out"
    elif result.ok and done.metas and not any(m.get("cells") for m in done.metas):
        line += "; the code it put in the notebook stays: delete that cell yourself"
    print(line)


def _parse(words: list[str]) -> tuple[int, str]:
    if not words:
        return 1, ""
    if len(words) > 1:
        raise UsageError(USAGE)
    word = words[0]
    if word.isdigit() and int(word) >= 1:
        return int(word), ""
    if undostack.REQUEST_ID.fullmatch(word):
        return 1, word
    raise UsageError(USAGE)
