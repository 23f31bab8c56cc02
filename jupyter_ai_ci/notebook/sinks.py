"""Where generated cells go.

``NextInputSink`` works in every frontend but can create one cell per
execution (ipykernel's ``set_next_input`` payload), so all code is joined
into that one cell.  Frontends that can do better (the JupyterLab extension,
over a comm) provide a sink that inserts one real cell per block, with
outputs and provenance metadata.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

from jupyter_ai_ci.events import Cell, Outcome

METADATA_KEY = "jupyter_ai_ci"


class CellSink(Protocol):
    def insert(self, cells: Sequence[Cell], provenance: dict[str, Any]) -> str:
        """Put the cells in the notebook; return where they went, for the user."""
        ...


def provenance(request: str, outcome: Outcome, model: str, host: str) -> dict[str, Any]:
    """Cell metadata that says where generated code came from.  Never a key."""
    return {
        "request": request,
        "model": model,
        "endpoint_host": host,
        "attempts": len(outcome.attempts),
        "tokens": {"prompt": outcome.usage.prompt_tokens, "completion": outcome.usage.completion_tokens},
        "requests": outcome.requests,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


class NextInputSink:
    """The fallback: one new cell below, through IPython's ``set_next_input``."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    def insert(self, cells: Sequence[Cell], provenance: dict[str, Any]) -> str:
        code = "\n\n".join(c.code for c in cells)
        if not code:
            return "nothing to insert"
        self.shell.set_next_input(code, replace=False)
        kernel = getattr(self.shell, "kernel", None)
        if kernel is None:  # the IPython terminal: no cells; the code waits at the next prompt
            return "the code is at the next prompt"
        if not getattr(kernel, "_allow_stdin", True):
            # Sent without stdin: nbclient, nbconvert, papermill -- which ignore the payload, so
            # no cell is added (found by hand: the line claimed one).  Frontends people type in
            # (JupyterLab, Notebook, VS Code) allow stdin and add the cell.
            return "the code is in this output (a headless run adds no cell)"
        return "the code is in a new cell below"
