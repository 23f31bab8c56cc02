"""Where an automatic import would come from, found in this process with real files: a module
or package planted in the working directory is named, and never run (issue 38, item 5)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from jupyter_ai_ci.context.importsource import shadowing

PLANT = "open('MARKER', 'w').write('ran')\n"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kernel's view: the working directory first on sys.path, as '' (ipykernel) and as itself."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", str(tmp_path), *sys.path])
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)  # never imported: found afresh
    return tmp_path


def test_an_installed_module_is_fine(folder: Path) -> None:
    assert shadowing("colorsys") == "" and shadowing("matplotlib.pyplot") == "" and shadowing("no_such_mod") == ""


def test_a_planted_module_is_named_and_never_run(folder: Path) -> None:
    (folder / "colorsys.py").write_text(PLANT)
    assert shadowing("colorsys") == "colorsys.py in this folder would shadow the installed package"
    assert not (folder / "MARKER").exists()


def test_a_planted_package_shadows_a_dotted_import_by_its_top_level(folder: Path) -> None:
    package = folder / "colorsys"
    package.mkdir()
    (package / "__init__.py").write_text(PLANT)
    assert shadowing("colorsys.sub") == "colorsys/ in this folder would shadow the installed package"
    assert not (folder / "MARKER").exists()


def test_a_planted_module_with_no_installed_one_is_named_too(folder: Path) -> None:
    (folder / "seaborn_like_xyz.py").write_text(PLANT)
    assert shadowing("seaborn_like_xyz") == ("seaborn_like_xyz.py in this folder would be imported, and no "
                                             "installed package has that name")


def test_a_module_already_imported_from_the_folder_is_named(folder: Path) -> None:
    import importlib

    (folder / "colorsys.py").write_text("X = 1\n")
    assert importlib.import_module("colorsys").X == 1  # the fixture puts the real one back
    assert shadowing("colorsys") == "colorsys in this kernel was imported from colorsys.py in this folder"
