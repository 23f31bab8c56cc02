"""``%ask undo``, the Undo action and the panel's undo: what every driver does after the kernel
has undone (``safety/undostack.py``, in the kernel).

The kernel puts its names, process and files back; here, once for every driver, the requests
leave the run's own records too: their replay records are dropped (Run All then asks the model
again, and the line says so) and their exchanges leave the conversation.  The driver then takes
out the cells they inserted (it alone knows the notebook) and shows the line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jupyter_ai_ci.events import Outcome
from jupyter_ai_ci.notebook.replay import ReplayStore
from jupyter_ai_ci.run.request import Run
from jupyter_ai_ci.run.session import Session


@dataclass
class UndoResult:
    ok: bool
    line: str  # the one line every driver shows
    cells: list[str] = field(default_factory=list)  # ids of the cells the requests inserted, to take out


def _names(items: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def request_meta(run: Run, outcome: Outcome, cells: Sequence[str], source: str) -> dict[str, Any]:
    """The driver's part of a request's undo entry (``UndoStack.note``): what the line calls it,
    the record and exchange to drop, the cells to take out, and its code (a later cell that is
    only this code again is not "a change of yours")."""
    return {"request": run.shown or run.request, "thread": run.thread, "key": run.key, "cells": list(cells),
            "codes": [c.code for c in outcome.cells], "source": source}


def finish(done: dict[str, Any], session: Session, store: ReplayStore | None) -> UndoResult:
    """Drop the undone requests' records and exchanges; the line to show.  ``done``: what the
    kernel answered (``undostack.Undone`` as a dict; anything else reads as "could not")."""
    if not isinstance(done, dict) or not isinstance(done.get("metas"), list):
        return UndoResult(False, "✗ undo: the kernel did not answer (is jupyter_ai_ci installed in its "
                                 "environment?); nothing was changed")
    if done.get("refused"):
        return UndoResult(False, f"✗ {done['refused']}")
    metas = [m for m in done["metas"] if isinstance(m, dict)]
    dropped_records, cells = 0, []
    for meta in metas:
        key = meta.get("key")
        if store is not None and isinstance(key, str) and key and store.forget(key):
            dropped_records += 1
        request = meta.get("request")
        if isinstance(request, str):
            session.forget(str(meta.get("thread", "")), request)
        cells += [c for c in meta.get("cells", []) if isinstance(c, str)]
    what = _what(metas)
    parts = []
    restored = [str(x) for x in done.get("restored", [])]
    removed = [str(x) for x in done.get("dropped", [])]
    if restored:
        parts.append(f"restored {_names(restored)}")
    if removed:
        parts.append(f"removed {_names(removed)}")
    if dropped_records:
        parts.append("its replay record dropped (Run All asks the model again)" if dropped_records == 1
                     else f"{dropped_records} replay records dropped (Run All asks the model again)")
    line = f"↶ undid {what}" + (f": {'; '.join(parts)}" if parts else " (it had changed nothing in the kernel)")
    kept = [str(x) for x in done.get("not_undone", [])]
    if kept:
        line += f"; NOT undone: {_names(kept)}"
    return UndoResult(True, line, cells)


def _what(metas: Sequence[dict[str, Any]]) -> str:
    if len(metas) != 1:
        return f"the last {len(metas)} requests"
    request = str(metas[0].get("request") or "").strip().splitlines()
    first = request[0] if request else ""
    return f"“{first[:60]}{'…' if len(first) > 60 else ''}”" if first else "the last request"
