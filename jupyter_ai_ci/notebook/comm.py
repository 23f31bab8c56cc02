"""Kernel side of the link to the JupyterLab extension: real cells for ``%%ask``.

Messages the kernel sends on a comm reach the frontend while a cell runs, but
the frontend's replies wait in the shell queue until the cell ends -- and,
under Run All, until every queued cell has run.  So the magic never waits for
an answer, and learns about the frontend before any cell runs:

- The labextension announces itself on each kernel it connects to (kernel
  start, restart, page load) with a silent execute request that sets
  ``MARKER`` on the shell.  It is sent before the user can run a cell, so it
  is there when ``%%ask`` runs, whatever the order of ``%load_ext``.
- ``CommSink`` opens one comm per insertion, carrying the cells; the frontend
  inserts them below the ``%%ask`` cell.  No acknowledgement is awaited.

Without the extension (VS Code, classic Notebook, the terminal) nobody sets
the marker and the magic uses ``NextInputSink``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import json
import uuid
from typing import Any

from jupyter_ai_ci import inkernel
from jupyter_ai_ci.events import Cell
from jupyter_ai_ci.notebook.sinks import METADATA_KEY

TARGET = "jupyter_ai_ci"
MARKER = "jupyter_ai_ci_frontend"  # attribute the labextension sets on the shell
PROTOCOL = 1

CommFactory = Callable[..., Any]


def frontend_info(shell: Any) -> dict[str, Any] | None:
    """What the labextension announced on this kernel, or None."""
    info = getattr(shell, MARKER, None)
    if isinstance(info, dict) and info.get("protocol") == PROTOCOL:
        return info
    return None


def create_comm(**kwargs: Any) -> Any:
    # Imported late: ipykernel installs its own create_comm when it starts.
    from comm import create_comm as create

    return create(**kwargs)


def ask_cell_id(shell: Any) -> str | None:
    """The id of the cell being executed, as JupyterLab sends it (``cellId``)."""
    parent = getattr(shell, "parent_header", None) or {}
    metadata = parent.get("metadata") or {}
    value = metadata.get("cellId")
    return value if isinstance(value, str) else None


class CommSink:
    """Inserts one real cell per block below the ``%%ask`` cell, with its outputs."""

    def __init__(self, shell: Any, create: CommFactory = create_comm, execution_count: int | None = None) -> None:
        self.shell = shell
        self.create_comm = create
        # The %%ask cell's number: its cells ran in that execution and show it ([7]:), not the
        # "[ ]:" of a cell that never ran.
        self.execution_count = execution_count
        self.ids: tuple[str, ...] = ()  # of the cells last inserted: chosen here, so the kernel knows them

    def insert(self, cells: Sequence[Cell], provenance: dict[str, Any]) -> str:
        if not cells:
            return "nothing to insert"
        ask_id = ask_cell_id(self.shell)
        meta = {METADATA_KEY: {**provenance, "ask_cell_id": ask_id}}
        self.ids = tuple(uuid.uuid4().hex for _ in cells)
        payload = {
            "type": "insert",
            "protocol": PROTOCOL,
            "ask_cell_id": ask_id,
            "cells": [
                {"id": i, "source": c.code, "outputs": list(c.result.outputs), "metadata": meta,
                 "execution_count": self.execution_count}
                for i, c in zip(self.ids, cells, strict=True)
            ],
        }
        comm = self.create_comm(target_name=TARGET, data=payload)
        # The frontend has what it needs; keeping the comm open would only leak it.
        comm.close()
        n = len(cells)
        return f"{n} new cell{'' if n == 1 else 's'} below"


def delete_cells(shell: Any, ids: Sequence[str], create: CommFactory = create_comm) -> None:
    """Ask the frontend to take out the generated cells ``ids`` (an undone request's).  The
    frontend takes out only cells that carry our provenance: a comm anyone can open must not
    delete a person's own cells."""
    comm = create(target_name=TARGET, data={"type": "delete", "protocol": PROTOCOL, "ids": list(ids)})
    comm.close()


def expression(op: str, **args: Any) -> str:
    """The user expression that sends, from inside the kernel, ``insert`` (nbformat code cells
    ``cells``, appended at the notebook's end: an MCP tool's, with no ``%%ask`` cell to go under)
    or ``delete`` (``ids``) to the labextension.  Its answer (``remote.parse_json``) says
    ``{"sent": false}`` when the labextension never announced itself on this kernel: then
    nobody would take the cells, and the caller writes the file instead."""
    return inkernel.call("jupyter_ai_ci.notebook.comm", json.dumps({"op": op, **args}))


def kernel_side(argument: str) -> str:
    """Runs inside the kernel (``expression``)."""
    from IPython.core.getipython import get_ipython

    shell: Any = get_ipython()  # type: ignore[no-untyped-call]
    args = json.loads(argument)
    if frontend_info(shell) is None:
        return json.dumps({"sent": False})
    if args.get("op") == "delete":
        delete_cells(shell, [str(i) for i in args.get("ids", [])])
    else:
        cells = [{k: c.get(k) for k in ("id", "source", "outputs", "metadata", "execution_count")}
                 for c in args.get("cells", [])]
        comm = create_comm(target_name=TARGET, data={
            "type": "insert", "protocol": PROTOCOL, "ask_cell_id": None, "at": "end", "cells": cells})
        comm.close()
    return json.dumps({"sent": True})
