"""Kernel side of the link to the JupyterLab extension: real cells for ``%%ask``.

Messages the kernel sends on a comm reach the frontend while a cell runs, but
the frontend's replies wait in the shell queue until the cell ends.  So the
magic never waits for an answer:

- ``FrontendLink.announce`` opens a comm to the target ``jupyter_ai_ci`` when
  the extension is loaded.  The labextension registers that target on every
  notebook's kernel and answers ``hello``; the answer is handled between cells
  and marks the frontend present.  Without the extension the frontend closes
  the comm at once (JupyterLab, Notebook 7) or there is no frontend at all
  (the IPython terminal), and nothing marks it present.
- ``CommSink`` then opens one comm per insertion, carrying the cells; the
  frontend inserts them below the ``%%ask`` cell.  No acknowledgement is
  awaited: a comm open is fire-and-forget by design.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .events import Cell
from .sinks import METADATA_KEY

TARGET = "jupyter_ai_ci"
PROTOCOL = 1

CommFactory = Callable[..., Any]


def _default_factory() -> CommFactory:
    # ipykernel installs its own create_comm on start; elsewhere (the terminal)
    # the comm package's default makes a comm that goes nowhere.
    from comm import create_comm

    return create_comm  # type: ignore[no-any-return]


class FrontendLink:
    """Whether a frontend with our labextension listens on this kernel."""

    def __init__(self, create_comm: CommFactory | None = None) -> None:
        self._create = create_comm
        self.present = False
        self.info: dict[str, Any] = {}
        self._hello: Any = None

    def create_comm(self, **kwargs: Any) -> Any:
        if self._create is None:
            self._create = _default_factory()
        return self._create(**kwargs)

    def announce(self) -> None:
        """Ask any listening frontend to say hello; the answer arrives between cells."""
        try:
            comm = self.create_comm(target_name=TARGET, data={"type": "hello", "protocol": PROTOCOL})
        except Exception:  # no kernel, no comm support: the fallback sink is used
            return
        comm.on_msg(self._on_msg)
        self._hello = comm

    def _on_msg(self, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data", {})
        if isinstance(data, dict) and data.get("type") == "hello":
            self.present = True
            self.info = {k: v for k, v in data.items() if k != "type"}


def ask_cell_id(shell: Any) -> str | None:
    """The id of the cell being executed, as JupyterLab sends it (``cellId``)."""
    parent = getattr(shell, "parent_header", None) or {}
    metadata = parent.get("metadata") or {}
    value = metadata.get("cellId")
    return value if isinstance(value, str) else None


class CommSink:
    """Inserts one real cell per block below the ``%%ask`` cell, with its outputs."""

    def __init__(self, shell: Any, create_comm: CommFactory) -> None:
        self.shell = shell
        self.create_comm = create_comm

    def insert(self, cells: Sequence[Cell], provenance: dict[str, Any]) -> str:
        if not cells:
            return "nothing to insert"
        ask_id = ask_cell_id(self.shell)
        meta = {METADATA_KEY: {**provenance, "ask_cell_id": ask_id}}
        payload = {
            "type": "insert",
            "protocol": PROTOCOL,
            "ask_cell_id": ask_id,
            "cells": [
                {"source": c.code, "outputs": list(c.result.outputs), "metadata": meta}
                for c in cells
            ],
        }
        comm = self.create_comm(target_name=TARGET, data=payload)
        # The frontend has what it needs; keeping the comm open would only leak it.
        comm.close()
        n = len(cells)
        return f"{n} new cell{'' if n == 1 else 's'} below"
