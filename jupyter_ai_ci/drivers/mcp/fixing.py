"""``fix``: the tried fix of a failed cell, with its diff, held until the agent decides.

The panel's Fix action, for an agent (``drivers/server/fix.py`` is the panel's): the failed cell is
read from the notebook file (its source and its error output), the request, its checks and the
verdict are the shared run's (``run/fixcell.py``), and the attempt that worked is held open
(``run/held.py``): ``fix(notebook, decision="accept")`` commits it (the kernel keeps what it did,
nothing runs again) and writes the fix into the cell; ``"reject"`` rolls it back.  While a fix
waits, other calls on the notebook are told to decide first: a held transaction and a new one
in the same kernel would undo each other's names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult

from jupyter_ai_ci.context.privacy import mask_secrets
from jupyter_ai_ci.drivers.headless import open_notebook
from jupyter_ai_ci.drivers.mcp import results as r
from jupyter_ai_ci.drivers.mcp.notebooks import Kept
from jupyter_ai_ci.drivers.mcp.progress import ClientApprover, Progress
from jupyter_ai_ci.drivers.server.fix import FIX_METADATA_KEY, ran_note, rejected_note
from jupyter_ai_ci.errors import UsageProblem
from jupyter_ai_ci.events import ExecutionResult
from jupyter_ai_ci.notebook.document import Node, save_onto, set_outputs
from jupyter_ai_ci.run import fixcell
from jupyter_ai_ci.run.flow import run_async
from jupyter_ai_ci.run.held import HeldAttempt
from jupyter_ai_ci.run.request import Options
from jupyter_ai_ci.run.session import Session


@dataclass
class Offer:
    """A fix that ran and waits for the agent's decision."""

    held: HeldAttempt
    cell_id: str
    cell: fixcell.FailedCell
    code: str
    results: list[ExecutionResult]  # what the fix printed and drew: the cell's outputs once accepted
    metadata: dict[str, Any]


def failed_cell(nb: Node, cell_id: str) -> tuple[str, fixcell.FailedCell]:
    """The cell ``cell_id`` names (default: the last with an error output), as the model is shown it."""
    code = [c for c in nb.cells if c.get("cell_type") == "code"]
    if cell_id:
        found = [c for c in code if str(c.get("id", "")) == cell_id]
        if not found:
            raise UsageProblem(f"no code cell with the id {cell_id!r} in the notebook")
    else:
        found = [c for c in code if any(o.get("output_type") == "error" for o in c.get("outputs", []))][-1:]
        if not found:
            raise UsageProblem("no cell in the notebook has an error output: name the cell to fix (cell=ID)")
    cell = found[0]
    error = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
    if error is None:
        raise UsageProblem(f"the cell {cell_id} has no error output: there is nothing to fix")
    count = cell.get("execution_count")
    failed = fixcell.from_outputs(str(cell.get("source", "")), str(error.get("ename") or "Error"),
                                  str(error.get("evalue") or ""), [str(x) for x in error.get("traceback", [])],
                                  count if isinstance(count, int) else None)
    fixcell.check(failed)
    return str(cell.get("id", "")), failed


class Fixes:
    """The fixes offered in one MCP session, one per notebook at most."""

    def __init__(self, session: Session, yes: bool, how_to_allow: str) -> None:
        self.session = session
        self.yes = yes
        self.how_to_allow = how_to_allow
        self.offers: dict[Path, Offer] = {}

    def check_free(self, path: Path) -> None:
        """One line when a fix of ``path`` waits for the agent's decision."""
        offer = self.offers.get(path)
        if offer is not None:
            raise UsageProblem(f"a fix of {offer.cell.label} waits for your decision: "
                               f"fix(notebook, decision='accept' or 'reject') first")

    async def offer(self, path: Path, kept: Kept, progress: Progress, ctx: Any, cell_id: str) -> CallToolResult:
        if path in self.offers:
            self.check_free(path)
        opened = open_notebook(path)
        cell_id, cell = failed_cell(opened.nb, cell_id)
        run = fixcell.make_run(self.session, cell, "fix", Options(yes=self.yes), thread=str(path), source="mcp")
        run.check()
        kept.next_request()
        held = HeldAttempt(kept.executor)
        try:
            result = await run_async(run, kept.kernel, held, progress, ClientApprover(ctx, self.how_to_allow),
                                     notebook=())
            code = fixcell.fixed_code(cell, result.outcome)
        except BaseException:  # a fix not offered (sent back unchanged, cancelled) is never left held
            if held.held and not held.decided:
                await held.areject()
            raise
        outcome = result.outcome

        def mask(text: str) -> str:
            return mask_secrets(text, run.secrets)

        meta = {**result.provenance, "fixes": {"cell": cell.label, "source": mask(cell.source)}}
        results = [c.result for c in outcome.cells]
        self.offers[path] = Offer(held, cell_id, cell, code, results, {FIX_METADATA_KEY: meta})
        fixed = r.FixResult(status="offered", cell=cell_id, label=cell.label, error=cell.error,
                            line=f"✓ a fix of {cell.label} ({cell.error}): {ran_note(len(outcome.attempts))} "
                                 "fix(notebook, decision='accept') keeps it, 'reject' rolls it back",
                            before=cell.source, after=code, diff=fixcell.diff(cell.source, code, cell.label),
                            outputs="\n".join(r.text_of(x) for x in results))
        return r.tool_result(r.masked(fixed, mask), r.images(results))

    async def decide(self, path: Path, decision: str) -> CallToolResult:
        offer = self.offers.get(path)
        if offer is None:
            raise UsageProblem("no fix waits for a decision in this notebook: fix(notebook) offers one")
        label = offer.cell.label
        if decision == "reject":
            del self.offers[path]
            line = rejected_note(await offer.held.areject(), label)
            return r.tool_result(r.FixResult(status="rejected", cell=offer.cell_id, label=label, line=f"↶ {line}"))
        opened = open_notebook(path)
        in_file = [c for c in opened.nb.cells if str(c.get("id", "")) == offer.cell_id]
        if not in_file or str(in_file[0].get("source", "")) != offer.cell.source:
            raise UsageProblem(f"{label} changed since the fix was offered: reject it, then fix again")
        del self.offers[path]
        await offer.held.aaccept()

        def write(nb: Node) -> None:
            for cell in nb.cells:
                if str(cell.get("id", "")) == offer.cell_id:
                    outputs: list[Any] = []
                    for result in offer.results:
                        set_outputs(cell, result, None)
                        outputs += cell.outputs
                    cell.source, cell.outputs = offer.code, outputs
                    cell.setdefault("metadata", {}).update(offer.metadata)

        save_onto(opened, write)
        return r.tool_result(r.FixResult(status="accepted", cell=offer.cell_id, label=label,
                                         line=f"✓ accepted: {label} holds the fix; the kernel kept what it did "
                                              "(it ran once)"))
