"""Cells and outputs from the notebook file the kernel belongs to.

jupyter_server tells a kernel its notebook in ``JPY_SESSION_NAME``: an
absolute path when it knows the file's directory, else the path relative to
the server's root (the kernel's working directory is the notebook's own).
VS Code puts the absolute path in the namespace as ``__vsc_ipynb_file__``.
The saved file has what the kernel's history lacks: markdown, printed
output, errors, which figures were shown.  It lags behind unsaved edits, so
the kernel's own history is merged in by the caller.
"""

from __future__ import annotations

import base64
import json
import os
import struct
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from jupyter_ai_ci.events import CellRecord
from jupyter_ai_ci.notebook.figuretext import FIGURE_KEY, NOT_A_CHART, NOT_DESCRIBED, picture
from jupyter_ai_ci.notebook.plotlyspec import PLOTLY_MIME, describe_spec

MAX_NOTEBOOK_BYTES = 20_000_000  # past this, reading costs more than it tells
SESSION_ENV = "JPY_SESSION_NAME"
VSCODE_NAME = "__vsc_ipynb_file__"  # set by VS Code's Jupyter extension, an absolute path
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
MAX_FIGURE_CHARS = 3000  # of a description read from an output (the kernel's are ~1,000)


def session_notebook(environ: Mapping[str, str] | None = None, cwd: str | None = None,
                     ns: Mapping[str, Any] | None = None) -> Path | None:
    """The notebook file named by ``JPY_SESSION_NAME`` (Jupyter Server) or by
    ``__vsc_ipynb_file__`` in the namespace (VS Code), if it exists."""
    environ = os.environ if environ is None else environ
    name = environ.get(SESSION_ENV, "")
    vscode = (ns or {}).get(VSCODE_NAME)
    if not name.endswith(".ipynb") and isinstance(vscode, str):
        name = vscode
    if not name.endswith(".ipynb"):
        return None  # a session id, a console, or a renamed-to-nothing session
    here = Path(cwd or os.getcwd())
    path = Path(name)
    candidates = [path] if path.is_absolute() else [here / path, here / path.name]
    # A path relative to the server root: the root is one of our ancestors.
    candidates += [parent / path for parent in here.parents] if not path.is_absolute() else []
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


def png_size(data: str) -> tuple[int, int] | None:
    """A base64 PNG's width and height, from its header (no image library); None if unreadable."""
    try:
        head = base64.b64decode(data[:44])
        if head[:8] != b"\x89PNG\r\n\x1a\n":
            return None
        width, height = struct.unpack(">II", head[16:24])
        return int(width), int(height)
    except Exception:
        return None


def _png_size(data: str) -> str:
    size = png_size(data)
    return f" {size[0]}×{size[1]}" if size else ""


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def figure_words(data: dict[str, Any], metadata: Any) -> str:
    """What a model that cannot see an output is told it shows ("" for an output that is no
    figure): the description the kernel put in its metadata (``context/figurehook.py``), else a
    Plotly spec's (``fig.show()`` publishes the spec, not the object), else for a widget that it
    is not described, else for a picture that no figure drew (a displayed PNG file) its size."""
    text = metadata.get(FIGURE_KEY) if isinstance(metadata, dict) else None
    if isinstance(text, str) and text.strip():
        return text[:MAX_FIGURE_CHARS]
    spec = data.get(PLOTLY_MIME)
    if isinstance(spec, dict):
        try:
            return describe_spec(spec)
        except Exception as exc:  # noqa: BLE001 -- an odd spec costs its description, not the run
            return f"Plotly figure: {NOT_DESCRIBED} ({type(exc).__name__})"
    if WIDGET_MIME in data:
        return f"an interactive widget: {NOT_DESCRIBED}"
    # A Matplotlib figure's picture from a kernel that does not describe figures is a chart all the same.
    if str(data.get("text/plain", "")).startswith("<Figure"):
        return ""
    png = data.get("image/png")
    if isinstance(png, (str, list)):
        return picture(png_size("".join(png).replace("\n", "")))
    return picture(None) if "image/jpeg" in data else ""


def output_text(outputs: list[dict[str, Any]]) -> str:
    """Outputs as text; images are named (type and size), never inlined; a figure is said in
    the words of its description (``figure_words``), as the model is told of its own."""
    parts: list[str] = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(_text(out.get("text", "")))
        elif kind == "error":
            parts.append(f"{out.get('ename', 'Error')}: {out.get('evalue', '')}")
        elif kind in ("execute_result", "display_data"):
            data = out.get("data", {})
            images = [m for m in sorted(data) if m.startswith("image/")]
            for mime in images:
                size = _png_size(_text(data[mime])) if mime == "image/png" else ""
                parts.append(f"[{mime} image{size} shown]")
            words = figure_words(data, out.get("metadata"))
            if words and not words.endswith(NOT_A_CHART):  # a picture's size is said above
                parts.append(words)
            if "text/plain" in data and not (images and _text(data["text/plain"]).startswith("<Figure")):
                parts.append(_text(data["text/plain"]))
            elif not images and "text/html" in data:
                parts.append("[HTML output]")
    return "\n".join(p.rstrip("\n") for p in parts if p)


NOT_RUN = "(not run)"  # in the label of a saved cell with no execution count


@lru_cache(maxsize=4)
def _read(path: str, mtime_ns: int, size: int) -> tuple[CellRecord, ...]:
    # Keyed by mtime and size: re-read only after a save.
    with open(path, encoding="utf-8") as f:
        notebook = json.load(f)
    cells = []
    for index, cell in enumerate(notebook.get("cells", []), start=1):
        source = _text(cell.get("source", ""))
        if not source.strip() or cell.get("cell_type") == "raw":
            continue
        if cell.get("cell_type") == "markdown":
            cells.append(CellRecord(source, kind="markdown", label=f"cell {index}"))
            continue
        count = cell.get("execution_count")
        label = f"In [{count}]" if count else f"cell {index} {NOT_RUN}"
        cells.append(CellRecord(source, output_text(cell.get("outputs", [])), label=label))
    return tuple(cells)


def saved_cells(path: Path) -> tuple[CellRecord, ...] | None:
    """The notebook's cells in notebook order, or None when unreadable or huge: the same
    tuple, read once, while the file keeps its size and modification time."""
    try:
        stat = path.stat()
        if stat.st_size > MAX_NOTEBOOK_BYTES:
            return None
        return _read(str(path), stat.st_mtime_ns, stat.st_size)
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def notebook_cells(path: Path) -> list[CellRecord] | None:
    """The notebook's cells in notebook order, or None when unreadable or huge."""
    cells = saved_cells(path)
    return None if cells is None else list(cells)
