"""Each generated step runs once per Run All (docs/reproducibility.md states the rule).

A ``%%ask`` cell and the cells it generated hold the same code; run both and an
in-place step (``X *= 2``, ``df.drop(..., inplace=True)``, a file append) is applied
twice.  So one of them runs it, decided from what the kernel can know:

- **The cells are the code.**  The labextension tells the kernel which generated
  cells the notebook holds below each ``%%ask`` cell, and for which request
  (``layout``, sent with its announcement and again on every change, before any
  queued cell).  When they are there for the same request, ``%%ask`` runs nothing
  and points at them; they run in their turn, as edited by the user if they were.
- **Otherwise ``%%ask`` runs the code**, and records it here.  A generated cell whose
  code ``%%ask`` already ran in this kernel is then not run again: known by its cell
  id (the ids of the cells it inserted) or, where the frontend sends none (nbclient,
  ``nbconvert --execute``, papermill), as the identical code right after the
  ``%%ask`` cell.  An edited cell is the user's code: it runs.
- **Replaced cells never run.**  When a changed request (or ``--regenerate``) replaces
  a ``%%ask`` cell's generated cells, their ids are retired: *Run All* has already
  queued them, and the kernel skips them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jupyter_ai_ci.notebook.comm import ask_cell_id, frontend_info

_ATTR = "_jupyter_ai_ci_once"  # where the ledger lives on the shell: one per kernel process


@dataclass
class Ledger:
    applied: dict[str, str] = field(default_factory=dict)  # cell id -> the code %%ask ran for it
    expected: list[str] = field(default_factory=list)  # without ids: the code %%ask just ran, in order
    retired: set[str] = field(default_factory=set)  # ids of replaced generated cells
    busy: bool = False  # a %%ask cell is running: the code it runs itself is never skipped
    armed: bool = False  # the %%ask cell that filled ``expected`` has ended: the next cell is judged


def ledger(shell: Any) -> Ledger:
    found = getattr(shell, _ATTR, None)
    if not isinstance(found, Ledger):
        found = Ledger()
        setattr(shell, _ATTR, found)
        shell.events.register("post_run_cell", after_cell)  # the transformer is in magic_entry
    return found


def forget(shell: Any) -> None:
    """``%unload_ext``: no ledger, no hook."""
    if isinstance(getattr(shell, _ATTR, None), Ledger):
        delattr(shell, _ATTR)
        shell.events.unregister("post_run_cell", after_cell)


def _layout(shell: Any, ask_id: str | None) -> dict[str, Any] | None:
    """The labextension's word on the cells ``ask_id`` generated; None where it gave none."""
    info = frontend_info(shell)
    if info is None or not ask_id or not isinstance(info.get("layout"), dict):
        return None
    entry = info["layout"].get(ask_id)
    return entry if isinstance(entry, dict) else {"cells": [], "request": ""}


def held_by_cells(shell: Any, request: str) -> tuple[str, ...]:
    """Ids of the generated cells below the running ``%%ask`` cell that hold ``request``'s
    code, by the labextension's layout; () when there are none or nobody can tell."""
    entry = _layout(shell, ask_cell_id(shell))
    if entry is None or str(entry.get("request", "")).strip() != request.strip():
        return ()
    return tuple(i for i in entry.get("cells", ()) if isinstance(i, str))


def retire_generated(shell: Any) -> None:
    """The running ``%%ask`` cell is about to replace its generated cells: never run them."""
    entry = _layout(shell, ask_cell_id(shell))
    if entry is not None:
        ledger(shell).retired.update(i for i in entry.get("cells", ()) if isinstance(i, str))


class running:
    """Around a ``%%ask`` run: nothing it runs is skipped, and what an earlier one left
    expected is forgotten (another cell came between)."""

    def __init__(self, shell: Any) -> None:
        self.book = ledger(shell)

    def __enter__(self) -> None:
        self.book.busy, self.book.expected = True, []

    def __exit__(self, *exc: object) -> None:
        self.book.busy = False


def note_applied(shell: Any, codes: Sequence[str], ids: Sequence[str] = ()) -> None:
    """``%%ask`` ran ``codes`` itself; ``ids``: the cells it asked the frontend to insert."""
    book = ledger(shell)
    if ids:
        book.applied.update({i: code.strip() for i, code in zip(ids, codes, strict=False)})
    else:
        book.expected = [code.strip() for code in codes if code.strip()]
        book.armed = False  # the %%ask cell's own end is not "another cell"


def _skip(why: str) -> list[str]:
    # The cell still shows why it did nothing, in every frontend.
    return [f"print({why!r})\n"]


APPLIED = "↷ not run: %%ask above already ran this code in this kernel (edit the cell to run your own version)"
RETIRED = "↷ not run: %%ask above replaced this cell with new code"


def _verdict(book: Ledger, cell_id: str | None, source: str) -> str:
    """Why this cell must not run ("" if it must).  Pure: IPython may transform a cell
    more than once (ipykernel before running it, trackers after)."""
    if cell_id and cell_id in book.retired:
        return RETIRED
    if cell_id and book.applied.get(cell_id) == source:
        return APPLIED
    if book.expected and book.armed and source in (book.expected[0], "\n\n".join(book.expected)):
        return APPLIED
    return ""


def once(lines: list[str]) -> list[str]:
    """Input transformer (``input_transformers_cleanup``): skip a generated cell whose code
    already ran, or that was replaced.  A plain cell costs one attribute lookup."""
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    book = getattr(shell, _ATTR, None)
    if not isinstance(book, Ledger) or book.busy or not (book.applied or book.expected or book.retired):
        return lines
    parent = getattr(shell, "parent_header", None) or {}
    if (parent.get("content") or {}).get("silent"):
        return lines  # the labextension's own announcements are not cells
    why = _verdict(book, ask_cell_id(shell), "".join(lines).strip())
    return _skip(why) if why else lines


def after_cell(result: Any) -> None:
    """``post_run_cell``, once per cell run: what the cell consumed of the ledger."""
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    book = getattr(shell, _ATTR, None)
    if not isinstance(book, Ledger) or book.busy:
        return
    if book.expected and not book.armed:
        book.armed = True  # the end of the %%ask cell that filled it
        return
    info = getattr(result, "info", None)
    source = str(getattr(info, "raw_cell", "") or "").strip()
    cell_id = ask_cell_id(shell)
    if cell_id in book.applied and book.applied[cell_id] == source:
        del book.applied[cell_id]
    elif book.expected and source == book.expected[0]:
        book.expected.pop(0)
    elif book.expected and source == "\n\n".join(book.expected):
        book.expected = []
    else:
        book.expected = []  # another cell came first: the generated ones were not kept
