"""In a real IPython shell: a missing import is added with no model call only when it loads an
installed module; a file beside the notebook with the module's name is never run by it (issue 38,
item 5).  ``colorsys`` stands for any module: a standard one's own name is imported like ``pd``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer

USES = "Sure.\n```python\nhsv = colorsys.rgb_to_hsv(1, 0, 0)\n```\n"  # no import: NameError


@pytest.fixture
def notebook_folder(ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shell's working directory is the notebook's folder, first on sys.path as in a kernel."""
    folder = tmp_path / "notebook"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)  # not imported yet, as in a fresh kernel
    return folder


def test_a_planted_module_is_never_imported_and_the_model_is_asked(
        ip: Any, model_server: ScriptedOpenAIServer, notebook_folder: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    (notebook_folder / "colorsys.py").write_text("open('MARKER', 'w').write('planted code ran')\n"
                                                 "def rgb_to_hsv(*a):\n    return 'planted'\n")
    model_server.script(USES, "Sure.\n```python\nhsv = (0.0, 1.0, 1.0)\n```\n")
    assert ip.run_cell("%%ask --no-answer\nhue of red").success
    out = capsys.readouterr().out
    assert not (notebook_folder / "MARKER").exists()  # the planted file never ran
    assert ip.user_ns["hsv"] == (0.0, 1.0, 1.0)
    assert len(model_server.requests) == 2  # the NameError went to the model
    assert "NameError" in model_server.request_texts()[1]
    assert "· not importing colorsys automatically: colorsys.py in this folder would shadow the installed " \
           "package" in out, out
    assert "added `import colorsys`" not in out


def test_with_nothing_planted_the_import_is_added_with_no_model_call(
        ip: Any, model_server: ScriptedOpenAIServer, notebook_folder: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(USES)
    assert ip.run_cell("%%ask --no-answer\nhue of red").success
    out = capsys.readouterr().out
    assert ip.user_ns["hsv"] == (0.0, 1.0, 1.0) and len(model_server.requests) == 1
    assert "added `import colorsys` and running it again (no model call)" in out, out
