"""``jupyter ai-ci run`` with a real kernel: a missing ``pd`` is imported with no model call only
from the installed pandas.  A ``pandas.py`` beside the notebook (the kernel's working directory)
is never run by it: the kernel is asked, through a silent request, where the import would come
from (issue 38, item 5)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.timeout(180)

USES_PD = "Here.\n```python\nframe = pd.DataFrame({'a': [1, 2]})\nprint(int(frame['a'].sum()))\n```\n"


def cli() -> list[str]:
    """The console script, as users type it: its folder, not the notebook's, leads sys.path
    (``python -m`` would put the notebook's folder there in the command line's own process)."""
    script = Path(sys.executable).parent / "jupyter-ai-ci"
    found = str(script) if script.exists() else shutil.which("jupyter-ai-ci")
    assert found, "the jupyter-ai-ci script is not installed"
    return [found, "run"]


def run(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cli(), "new.ipynb", "--prompt", "sum of a"], cwd=folder, capture_output=True,
                          text=True, timeout=150, stdin=subprocess.DEVNULL)


def test_a_planted_pandas_py_is_never_imported_and_the_model_is_asked(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    (tmp_path / "pandas.py").write_text("open('MARKER', 'w').write('planted code ran')\n")
    model_server.script(USES_PD, Reply("Here.\n```python\nprint(sum([1, 2]))\n```\n", require="NameError"))
    proc = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "MARKER").exists()  # neither the kernel nor the command line ran it
    assert len(model_server.requests) == 2 and model_server.misses == []  # the NameError went to the model
    said = proc.stdout + proc.stderr
    assert "not importing pandas automatically: pandas.py in this folder would shadow the installed package" \
        in said, said
    assert "import pandas as pd" not in said


def test_with_nothing_planted_pd_is_imported_with_no_model_call(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(USES_PD)
    proc = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(model_server.requests) == 1
    assert "added `import pandas as pd` and running it again (no model call)" in proc.stdout + proc.stderr
