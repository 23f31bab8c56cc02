"""Notebook files for headless runs: open or create, append generated cells, save safely.

Saving writes a temporary file beside the notebook and renames it over the
original, so an interrupted or failed run leaves either the old notebook or
the new one on disk, never half of one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from dataclasses import dataclass
from typing import Any, TypeVar

from jupyter_ai_ci.events import Cell, CellRecord, ExecutionResult
from jupyter_ai_ci.notebook.atomic import replace_file
from jupyter_ai_ci.notebook.reader import output_text  # the one text of a cell's outputs, for every driver
from jupyter_ai_ci.notebook.sinks import METADATA_KEY

Node = Any  # nbformat.NotebookNode: a dict with attribute access, untyped upstream
T = TypeVar("T")


def _nbformat() -> Any:
    # nbformat has no type hints; one Any here keeps the rest of the module strict.
    import nbformat

    return nbformat


def new_notebook() -> Node:
    return _nbformat().v4.new_notebook()


def load_or_create(path: Path, kernel_name: str) -> Node:
    nbformat = _nbformat()
    if path.exists():
        return nbformat.read(path, as_version=4)
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel_name, "display_name": kernel_name, "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


@dataclass
class Opened:
    """A notebook file as read, and its stamp then: a later save checks it was not saved since."""

    path: Path
    nb: Node
    stamp: tuple[int, int] | None  # (mtime_ns, size); None: the file did not exist
    kernel_name: str = "python3"


def stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size


def save_onto(opened: Opened, change: Callable[[Node], T]) -> T:
    """Apply ``change`` to the notebook and save it whole.  A run takes minutes; when the file was
    saved meanwhile (the person, another agent), ``change`` is applied to that newer save, read
    again, so it is never written over.  Returns what ``change`` returned."""
    nb = opened.nb
    if stamp(opened.path) != opened.stamp:
        nb = load_or_create(opened.path, opened.kernel_name)
    out = change(nb)
    save(nb, opened.path)
    opened.nb, opened.stamp = nb, stamp(opened.path)
    return out


def save(nb: Node, path: Path) -> None:
    nbformat = _nbformat()
    nbformat.validate(nb)  # never write a notebook Jupyter would refuse to open
    replace_file(path, lambda f: nbformat.write(nb, f))


def cell_records(nb: Node) -> list[CellRecord]:
    return [CellRecord(c.source, output_text(c.get("outputs", [])))
            for c in nb.cells if c.cell_type == "code" and c.source.strip()]


def set_outputs(cell: Node, result: ExecutionResult, count: int | None) -> None:
    nbformat = _nbformat()
    cell.outputs = [nbformat.from_dict(o) for o in result.outputs]
    if result.error is not None:
        cell.outputs.append(nbformat.v4.new_output(
            "error", ename=result.error.ename, evalue=result.error.evalue,
            traceback=result.error.traceback.splitlines()))
    cell.execution_count = count


class NotebookSink:
    """``CellSink`` that appends to an nbformat notebook in memory (saved by the caller)."""

    def __init__(self, nb: Node, count_of: Callable[[ExecutionResult], int | None]) -> None:
        self.nb = nb
        self.count_of = count_of
        self.ids: list[str] = []  # the cells inserted, in order (an undo takes them out)

    def insert(self, cells: Sequence[Cell], provenance: dict[str, Any], answer: str = "", heading: bool = True) -> str:
        """``heading``: the request quoted above the cells (code an agent sent has no request)."""
        nbformat = _nbformat()
        request = str(provenance.get("request", ""))
        quoted = "\n".join(f"> {line}" for line in request.splitlines())
        added = [nbformat.v4.new_markdown_cell(
            f"**ai-ci request**\n\n{quoted}", metadata={METADATA_KEY: {"role": "request"}})] if heading else []
        for cell in cells:
            node = nbformat.v4.new_code_cell(cell.code, metadata={METADATA_KEY: dict(provenance, step=cell.step)})
            set_outputs(node, cell.result, self.count_of(cell.result))
            added.append(node)
        if answer.strip():
            added.append(nbformat.v4.new_markdown_cell(
                answer.strip(), metadata={METADATA_KEY: dict(provenance, role="answer")}))
        self.nb.cells.extend(added)
        self.ids = [str(c.get("id", "")) for c in added if c.get("id")]
        n = len(cells)
        return f"{n} code cell{'' if n == 1 else 's'} appended"


def generated_for(nb: Node, request: str) -> tuple[str, ...]:
    """Ids of the code cells an earlier run appended to ``nb`` for ``request``: they hold its
    code, so running it again would append (and apply) it twice (docs/reproducibility.md)."""
    found = []
    for i, c in enumerate(nb.cells):
        meta = c.get("metadata", {}).get(METADATA_KEY, {})
        if c.cell_type == "code" and str(meta.get("request", "")).strip() == request.strip():
            found.append(str(c.get("id") or i))
    return tuple(found)


def drop_generated(nb: Node, request: str) -> int:
    """Remove what an earlier run appended for ``request`` (its request heading, cells and
    answer) before a regenerated run appends anew: replaced, never both."""
    def ours(c: Node) -> bool:
        return str(c.get("metadata", {}).get(METADATA_KEY, {}).get("request", "")).strip() == request.strip()

    keep: list[Node] = []
    for c in nb.cells:
        heading = c.get("metadata", {}).get(METADATA_KEY, {}).get("role") == "request"
        if ours(c) and keep and keep[-1].get("metadata", {}).get(METADATA_KEY, {}).get("role") == "request" \
                and not heading:
            keep.pop()  # the "ai-ci request" heading right above the cells it introduced
        if not ours(c) or heading:
            keep.append(c)
    dropped = len(nb.cells) - len(keep)
    nb.cells = keep
    return dropped
