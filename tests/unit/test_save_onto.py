"""A run's cells go onto the notebook as it is on disk when the run ends: a save made while it
ran (the person's, another agent's) is kept, never written over."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat

from jupyter_ai_ci.notebook.document import Node, Opened, load_or_create, save_onto, stamp


def test_a_save_made_during_the_run_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "a.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("first")]
    nbformat.write(nb, path)
    opened = Opened(path, load_or_create(path, "python3"), stamp(path))
    # Meanwhile the person adds a cell and saves (a different size, a later time).
    theirs = nbformat.read(path, as_version=4)
    theirs.cells.append(nbformat.v4.new_code_cell("theirs = 1"))
    nbformat.write(theirs, path)
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10**9))

    def add(nb: Node) -> int:
        nb.cells.append(nbformat.v4.new_code_cell("ours = 2"))
        return len(nb.cells)

    assert save_onto(opened, add) == 3
    assert [c.source for c in nbformat.read(path, as_version=4).cells] == ["first", "theirs = 1", "ours = 2"]
    assert opened.stamp == stamp(path)  # the next save checks against this one


def test_an_unchanged_file_is_saved_from_memory(tmp_path: Path) -> None:
    path = tmp_path / "b.ipynb"
    opened = Opened(path, load_or_create(path, "python3"), stamp(path))  # a new notebook: no file yet
    assert opened.stamp is None
    save_onto(opened, lambda nb: nb.cells.append(nbformat.v4.new_markdown_cell("made")))
    assert [c.source for c in nbformat.read(path, as_version=4).cells] == ["made"]
