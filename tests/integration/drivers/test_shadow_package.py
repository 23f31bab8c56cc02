"""A folder named ``jupyter_ai_ci/`` beside the notebook never runs (issue 15, item 6).

The sidebar and the command line run our code in the user's kernel as silent user
expressions (the context snapshot, transactions).  Imported by name, the package was found
first in the kernel's working directory: a planted ``jupyter_ai_ci/`` there ran as soon as
the user pressed Send.  Here one is planted beside the notebook, in real kernels; each
of its modules would write a marker file.  The runs must succeed with the real package
and leave no marker.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat

from jupyter_ai_ci import inkernel
from jupyter_ai_ci.testing import ScriptedOpenAIServer

from ..kernel_helpers import run_cell, start_kernel
from . import three
from .test_conformance import py

MODULES = ("__init__.py", "context/__init__.py", "context/snapshot.py", "context/failure.py", "safety/__init__.py",
           "safety/remote.py")


def plant(folder: Path, markers: Path) -> None:
    for name in MODULES:
        path = folder / "jupyter_ai_ci" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        marker = markers / name.replace("/", "_")
        path.write_text(f"open({str(marker)!r}, 'w').write('planted code ran')\n"
                        "def kernel_side(payload):\n    return '{}'\n")


def ran(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


async def test_the_sidebar_never_imports_a_planted_package(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    plant(jp_root_dir, markers)
    # A kernel that `jupyter lab` starts for a notebook has the notebook's folder first on sys.path
    # (``python -m ipykernel_launcher`` run there); the test server's kernels start elsewhere.
    setup = ["import os, sys\nsys.path.insert(0, os.getcwd())", "revenue = {'north': 3, 'south': 5}"]
    seen = await three.sidebar(model_server, jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir, setup, "total revenue",
                               [py("total = sum(revenue.values())\nprint(total)")])
    assert ran(markers) == []
    assert seen.status == "success", seen.message
    # The real snapshot ran in the kernel: the model was told about the notebook's variable.
    assert "revenue: dict" in seen.texts()[0]


def test_the_cli_never_imports_a_planted_package(model_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    markers, folder = tmp_path / "markers", tmp_path / "shared"
    markers.mkdir()
    folder.mkdir()
    plant(folder, markers)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("revenue = {'north': 3, 'south': 5}")]
    nbformat.write(nb, folder / "work.ipynb")
    model_server.script(py("total = sum(revenue.values())\nprint(total)"))
    # As the user runs it, from the folder: the console script, not ``python -m`` (which
    # would put the folder on the CLI's own sys.path, as Python does for any module).
    script = Path(sys.executable).parent / "jupyter-ai-ci"
    proc = subprocess.run([str(script), "run", "work.ipynb", "--run-existing", "--prompt", "total revenue",
                           "--json", "run.json"], cwd=folder, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert ran(markers) == []
    result = json.loads((folder / "run.json").read_text())[0]
    assert result["status"] == "success", (result["message"], proc.stderr[-2000:])
    assert "revenue: dict" in model_server.request_texts()[0]


def test_a_package_already_imported_from_the_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    markers, folder = tmp_path / "markers", tmp_path / "shared"
    markers.mkdir()
    folder.mkdir()
    plant(folder, markers)
    km, kc = start_kernel({}, cwd=str(folder))
    try:
        assert run_cell(kc, "import jupyter_ai_ci").status == "ok"  # the user's own doing, by mistake
        assert ran(markers) == ["__init__.py"]
        expr = inkernel.call("jupyter_ai_ci.context.snapshot", "{}")
        reply = kc.execute("", silent=True, user_expressions={"x": expr}, reply=True, timeout=30)
        value = reply["content"]["user_expressions"]["x"]
        assert value["status"] == "error" and value["ename"] == "ImportError"
        assert "working directory" in value["evalue"] and "restart the kernel" in value["evalue"]
        assert ran(markers) == ["__init__.py"]  # nothing more of it ran
        assert run_cell(kc, "print(1 + 1)").stdout.strip() == "2"  # the kernel is fine
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


async def test_transactions_in_the_kernel_never_import_a_planted_package(tmp_path: Path) -> None:
    from jupyter_ai_ci.executors.kernel import KernelExecutor
    from jupyter_ai_ci.executors.local_kernel import LocalKernel

    markers, folder = tmp_path / "markers", tmp_path / "shared"
    markers.mkdir()
    folder.mkdir()
    plant(folder, markers)
    connection = await LocalKernel.start("python3", cwd=str(folder), startup_timeout=60)
    try:
        executor = KernelExecutor(connection, timeout=30)
        assert await executor.transactions.probe()  # checkpoint/rollback work, with the real package
    finally:
        await connection.shutdown()
    assert ran(markers) == []


# Issue #30, item 9: names the notebook (or the model's code) rebinds in the user's namespace.
SHADOW = """\
def _shadow(*args, **kwargs):
    open({marker!r}, 'w').write('the shadow was called')
    raise RuntimeError('shadowed')
import builtins as _b
__import__ = exec = eval = getattr = _shadow
__builtins__ = dict(vars(_b), __import__=_shadow, exec=_shadow, eval=_shadow, getattr=_shadow)
"""


def test_failure_notes_come_from_the_real_module_whatever_the_namespace_rebinds(tmp_path: Path) -> None:
    from jupyter_ai_ci.context import failure, snapshot
    from jupyter_ai_ci.safety import remote

    markers, folder = tmp_path / "markers", tmp_path / "shared"
    markers.mkdir()
    folder.mkdir()
    plant(folder, markers)  # a look-alike context/failure.py too, first on sys.path below
    km, kc = start_kernel({}, cwd=str(folder))
    try:
        setup = "import os, sys\nsys.path.insert(0, os.getcwd())\nrevenue_total = 5"
        assert run_cell(kc, setup).status == "ok"
        code = "share = revenue_totl / 2"
        assert run_cell(kc, code).status == "error"  # NameError: the fix request wants notes
        assert run_cell(kc, SHADOW.format(marker=str(markers / "shadow"))).status == "ok"
        expr = failure.expression([code], "NameError", "name 'revenue_totl' is not defined")
        reply = kc.execute("", silent=True, user_expressions={"x": expr}, reply=True, timeout=30)
        value = reply["content"]["user_expressions"]["x"]
        assert value["status"] == "ok", value
        notes = failure.from_reply(value)
        assert any("revenue_total" in hint for hint in notes.hints), notes  # the real module's hint
        # Every other call into the kernel goes the same way: the snapshot and a transaction too.
        exprs = {"s": snapshot.expression(snapshot.Query("share of revenue_total")), "t": remote.expression("commit")}
        values = kc.execute("", silent=True, user_expressions=exprs, reply=True, timeout=30)["content"]
        assert "revenue_total" in snapshot.from_reply(values["user_expressions"]["s"]).context.text
        assert remote.parse(values["user_expressions"]["t"]).supported
        assert ran(markers) == []  # neither the shadow nor the planted package ran
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
