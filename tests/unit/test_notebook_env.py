"""The notebook file, the environment and the kernel tracker's helpers, without a kernel."""

from __future__ import annotations

import base64
import json
import struct
import types
from pathlib import Path
from typing import Any

from jupyter_ai_ci.context.build import CellRecord
from jupyter_ai_ci.context.environment import data_files, library_versions
from jupyter_ai_ci.context.kernel_state import merged_cells, without_excluded
from jupyter_ai_ci.context.tracker import _bound_names
from jupyter_ai_ci.notebook.reader import notebook_cells, session_notebook


def _png(width: int, height: int) -> str:
    header = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + struct.pack(">II", width, height) + b"\x08\x06\x00\x00\x00"
    return base64.b64encode(header + b"\x00" * 64).decode()


def _write(path: Path, cells: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))


def test_session_notebook_resolves_absolute_relative_and_root_paths(tmp_path: Path) -> None:
    nb = tmp_path / "work" / "analysis.ipynb"
    nb.parent.mkdir()
    _write(nb, [])
    cwd = str(nb.parent)
    assert session_notebook({"JPY_SESSION_NAME": str(nb)}, cwd) == nb
    assert session_notebook({"JPY_SESSION_NAME": "analysis.ipynb"}, cwd) == nb.parent / "analysis.ipynb"
    # Relative to the server root, which is an ancestor of the kernel's directory.
    assert session_notebook({"JPY_SESSION_NAME": "work/analysis.ipynb"}, cwd) == tmp_path / "work/analysis.ipynb"
    assert session_notebook({"JPY_SESSION_NAME": "7f3e-session-id"}, cwd) is None
    assert session_notebook({"JPY_SESSION_NAME": "gone.ipynb"}, cwd) is None
    assert session_notebook({}, cwd) is None
    assert session_notebook({}, "/", ns={"__vsc_ipynb_file__": str(nb)}) == nb  # VS Code


def test_notebook_cells_have_outputs_errors_and_named_images(tmp_path: Path) -> None:
    nb = tmp_path / "a.ipynb"
    _write(nb, [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Sales\n", "Quarterly numbers."]},
        {"cell_type": "code", "metadata": {}, "execution_count": 3, "source": "print('hi')\n1/0",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["hi\n"]},
                     {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                      "traceback": []}]},
        {"cell_type": "code", "metadata": {}, "execution_count": 4, "source": "plt.plot([1])",
         "outputs": [{"output_type": "display_data", "metadata": {},
                      "data": {"image/png": _png(640, 480), "text/plain": "<Figure size 640x480 with 1 Axes>"}}]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "source": "later()", "outputs": []},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "source": "  ", "outputs": []},
    ])
    cells = notebook_cells(nb)
    assert cells == [
        CellRecord("# Sales\nQuarterly numbers.", kind="markdown", label="cell 1"),
        CellRecord("print('hi')\n1/0", "hi\nZeroDivisionError: division by zero", label="In [3]"),
        CellRecord("plt.plot([1])", "[image/png image 640×480 shown]", label="In [4]"),
        CellRecord("later()", "", label="cell 4 (not run)"),
    ]
    assert notebook_cells(tmp_path / "missing.ipynb") is None
    (tmp_path / "broken.ipynb").write_text("{not json")
    assert notebook_cells(tmp_path / "broken.ipynb") is None


def test_cells_run_since_the_last_save_are_added_as_most_recent() -> None:
    saved = [CellRecord("a = 1"), CellRecord("b = 2")]
    kernel = [CellRecord("a = 1", label="In [1]"), CellRecord("c = 3", label="In [5]")]
    assert merged_cells(saved, kernel) == [*saved, CellRecord("c = 3", label="In [5]")]


def test_a_cell_saved_before_it_ran_is_told_as_the_kernel_ran_it() -> None:
    # Found by a newcomer: `%ask --show-context` said "[cell 1 (not run)]", no output, until a save.
    saved = [CellRecord("a = 41\nprint(a)", label="cell 1 (not run)"), CellRecord("b = 2", label="cell 2 (not run)")]
    kernel = [CellRecord("a = 41\nprint(a)", "41", label="In [1]"), CellRecord("c = 3", label="In [2]")]
    assert merged_cells(saved, kernel) == [kernel[0], saved[1], kernel[1]]


def test_cells_mentioning_excluded_names_are_left_out() -> None:
    cells = [CellRecord("customers = load()"), CellRecord("raw_2024.head()"), CellRecord("total = 1")]
    assert without_excluded(cells, ["customers", "raw_*"]) == [CellRecord("total = 1")]
    assert without_excluded(cells, []) == cells


def test_bound_names_include_mutation_and_definitions() -> None:
    code = "x = 1\ndf['a'] = 2\nobj.attr.y = 3\ndef f(): z = 4\nclass K: pass\nfor i in r: pass\nprint(q)"
    assert _bound_names(code) == {"x", "df", "obj", "f", "K", "i"}  # z is f's own
    assert _bound_names("x = (") == set()
    nested = ("a, (b, *c) = t\nwith open(f) as fh, g() as (p, q): pass\ntry:\n  m = 1\nexcept E:\n  n = 2\n"
              "finally:\n  o[1] += 3\nif x:\n  import numpy as np, os.path\nelse:\n  from math import tau as T\n"
              "del d['k'], e\nv: int = 3")
    assert _bound_names(nested) == {"a", "b", "c", "fh", "p", "q", "m", "n", "o", "np", "os", "T", "d", "v"}
    assert _bound_names("%%time\nx = 1") == set()  # a cell magic's body is the magic's business
    assert _bound_names("match p:\n    case 1:\n        hit = 1\n    case _:\n        miss = 0") == {"hit", "miss"}
    assert _bound_names("x = " + "-" * 5000 + "1") == set()  # the parser overflows: no names, no error


def test_data_files_are_few_sorted_and_sized(tmp_path: Path) -> None:
    for name in ("b.csv", "a.parquet", ".hidden.csv", "notes.md"):
        (tmp_path / name).write_bytes(b"x" * 2048)
    (tmp_path / "dir.csv").mkdir()
    assert data_files(str(tmp_path)) == (["a.parquet (2.0 KB)", "b.csv (2.0 KB)"], 2)
    assert data_files(str(tmp_path / "missing")) == ([], 0)


def test_library_versions_only_of_imported_modules() -> None:
    pandas = types.ModuleType("pandas")
    pandas.__version__ = "2.2.0"  # type: ignore[attr-defined]
    assert library_versions({"pandas": pandas, "numpy": types.ModuleType("numpy")}) == ["pandas 2.2.0", "numpy"]
