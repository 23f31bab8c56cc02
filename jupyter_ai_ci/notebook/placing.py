"""Where a tool's committed cells go: into the notebook open in a frontend, or into its file.

When the notebook is open in JupyterLab or Notebook 7 with our labextension, the cells are sent
to that page (``Live``, through the kernel's comm: ``comm.expression``) and the file is left
alone: the page's copy is the one the person edits and saves, and a file written under it would
make its next save ask "overwrite?" -- or, answered yes, lose our cells.  Otherwise they are
appended to the file as it is on disk then (``save_onto``: a newer save is never written over).
The magic's ``CommSink`` is the same link; this is its counterpart for drivers outside the kernel.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_ai_ci.events import Cell, ExecutionResult
from jupyter_ai_ci.notebook.document import Node, NotebookSink, Opened, drop_generated, new_notebook, save_onto

# Sends nbformat code cells to the open page; False when nobody there took them.
Live = Callable[[list[Node]], Awaitable[bool]]


@dataclass(frozen=True)
class Placed:
    where: str  # "2 code cells appended" / "2 cells added to the open notebook"
    ids: tuple[str, ...]  # of the cells placed: an undo takes them out again
    live: bool  # in the open page, not the file


async def place_cells(opened: Opened, cells: Sequence[Cell], provenance: dict[str, Any],
                      count_of: Callable[[ExecutionResult], int | None], live: Live | None = None,
                      answer: str = "", heading: bool = True, replacing: str = "") -> Placed:
    """``replacing``: the request whose earlier cells the new ones replace (``--regenerate``).
    Live only for code cells (the comm carries nothing else, as for ``%%ask``): an answer in
    words, or cells to replace, go to the file."""
    sink = NotebookSink(None, count_of)
    if live is not None and cells and not answer.strip() and not replacing:
        scratch = new_notebook()
        sink.nb = scratch
        # No request heading: the page shows the agent's cells as %%ask's, under nothing.
        sink.insert(cells, provenance, heading=False)
        if await live(list(scratch.cells)):
            n = len(cells)
            return Placed(f"{n} cell{'' if n == 1 else 's'} added to the open notebook", tuple(sink.ids), True)

    def append(nb: Node) -> str:
        if replacing:
            drop_generated(nb, replacing)  # the new cells replace the old ones, never both
        sink.nb = nb
        return sink.insert(cells, provenance, answer, heading)

    where = save_onto(opened, append)
    return Placed(where, tuple(sink.ids), False)
