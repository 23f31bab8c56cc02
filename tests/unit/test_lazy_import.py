"""``%load_ext jupyter_ai_ci`` imports only what registers the magics (issue #18).

Each check runs in a fresh interpreter: in this one, other tests have imported
everything already.  The model is the scripted HTTP server of this process,
reached through OPENAI_BASE_URL, which the child inherits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from jupyter_ai_ci.testing import ScriptedOpenAIServer

# What load_ext may import of ours: the package, the settings, the light magics and the kernel tracker.
# The tracker starts the figure hook (context/figurehook.py), which names the metadata key.
EXPECTED_OURS = ["jupyter_ai_ci", "jupyter_ai_ci.config", "jupyter_ai_ci.config.endpoint",
                 "jupyter_ai_ci.config.safety", "jupyter_ai_ci.context", "jupyter_ai_ci.context.figurehook",
                 "jupyter_ai_ci.context.tracker", "jupyter_ai_ci.drivers", "jupyter_ai_ci.drivers.magic_entry",
                 "jupyter_ai_ci.drivers.own_settings", "jupyter_ai_ci.notebook", "jupyter_ai_ci.notebook.figuretext",
                 "jupyter_ai_ci.pristine"]
# The run stack, and what it pulls in; none of it belongs to loading.
FORBIDDEN = ("asyncio", "openai", "httpx", "httpx2", "urllib.request", "jupyter_ai_ci.core.loop", "jupyter_ai_ci.run",
             "jupyter_ai_ci.model", "jupyter_ai_ci.context.kernel_state")

PRELUDE = """
import contextlib, io, json, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
out = {}
def new_since(before):
    return sorted(set(sys.modules) - before)
def quiet(cell):
    with contextlib.redirect_stdout(io.StringIO()) as buf, contextlib.redirect_stderr(io.StringIO()):
        result = ip.run_cell(cell, store_history=True)
    return result, buf.getvalue()
"""


def run_child(body: str, cwd: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", PRELUDE + body + "\nprint('RESULT ' + json.dumps(out))"],
                          capture_output=True, text=True, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])  # type: ignore[no-any-return]


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


def test_load_ext_imports_only_the_light_module(tmp_path: Path) -> None:
    out = run_child("""
before = set(sys.modules)
out["preloaded"] = sorted(m for m in before if m.startswith(("asyncio", "urllib.request")))
ip.run_line_magic("load_ext", "jupyter_ai_ci")
out["new"] = new_since(before)
out["magics"] = [sorted(ip.magics_manager.magics[k]) for k in ("line", "cell")]
with contextlib.redirect_stdout(io.StringIO()) as buf:
    ip.run_line_magic("config", "AskMagics")
out["config"] = buf.getvalue()
ip.run_line_magic("config", "AskMagics.retries = 5")
out["retries"] = ip.magics_manager.registry["AskMagics"].retries
out["after_config"] = new_since(before)
""", tmp_path)
    assert heavy(out["new"]) == []
    # IPython may import asyncio itself; then the check above says nothing about it, but this does.
    assert [m for m in out["new"] if m.startswith("jupyter_ai_ci")] == EXPECTED_OURS
    line, cell = out["magics"]
    assert {"ask", "ask_usage", "ask_replay"} <= set(line) and "ask" in cell
    # The traits are on the registered class before any request: %config lists and sets them.
    assert "AskMagics(Magics, AICISettings) options" in out["config"]
    for trait in ("AskMagics.retries=<CInt>", "AskMagics.policy=", "AskMagics.max_context_tokens="):
        assert trait in out["config"]
    assert out["retries"] == 5
    assert heavy(out["after_config"]) == []


def test_the_figure_hook_imports_no_plotting_library(tmp_path: Path) -> None:
    """Outputs of every kind go through the figure hook; a kernel that never plotted imports
    neither matplotlib nor plotly for it (issue #40)."""
    out = run_child("""
ip.run_line_magic("load_ext", "jupyter_ai_ci")
quiet("from IPython.display import display, HTML\\ndisplay(HTML('<b>x</b>'))\\ndisplay({'a': 1})\\n[1, 2]")
out["plotting"] = sorted(m for m in sys.modules if m.split(".")[0] in ("matplotlib", "plotly", "numpy"))
out["describer"] = "jupyter_ai_ci.context.figures" in sys.modules
""", tmp_path)
    assert out["plotting"] == [] and out["describer"] is False


def test_help_and_usage_errors_need_no_run_stack(tmp_path: Path) -> None:
    out = run_child("""
ip.run_line_magic("load_ext", "jupyter_ai_ci")
before = set(sys.modules)
out["help"] = ip.object_inspect_text("%%ask")
result, _ = quiet("%ask --frobnicate go")
out["error"] = type(result.error_in_exec).__name__
out["new"] = new_since(before)
""", tmp_path)
    assert "--retries N" in out["help"] and "Run All stops" in out["help"]
    assert out["error"] == "UsageError"
    assert not [m for m in out["new"] if m.startswith("jupyter_ai_ci.run")]


def test_ask_works_after_lazy_loading_and_sees_the_cells_since_the_load(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    model_server.script("```python\ndoubled = loaded * 2\n```")
    out = run_child("""
result, _ = quiet("%load_ext jupyter_ai_ci\\nloaded = 21\\n1/0")  # the tracker must see this cell
out["tracker_after_load"] = "jupyter_ai_ci.context.tracker" in sys.modules
quiet("plain = 'kept'")
out["context_before_ask"] = "jupyter_ai_ci.context.kernel_state" in sys.modules
result, printed = quiet("%%ask\\ndouble loaded")
out["success"] = result.success
out["printed"] = printed
out["doubled"] = ip.user_ns.get("doubled")
out["timings"] = ip.magics_manager.registry["AskMagics"].last_timings.total > 0
""", tmp_path)
    assert out["tracker_after_load"] is True and out["context_before_ask"] is False
    assert out["success"] and out["doubled"] == 42 and out["timings"]
    assert "✓ done in 1 attempt" in out["printed"]
    sent = model_server.request_texts()[0]
    assert "loaded: int = 21" in sent and "plain: str" in sent
    # The load cell's error was recorded: the tracker starts within the cell that loads it.
    assert "raised ZeroDivisionError: division by zero" in sent


def test_line_ask_outside_a_cell_and_unload(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    model_server.script("It is 7.")
    out = run_child("""
def state():
    m = ip.magics_manager
    return {"hooks": {e: len(ip.events.callbacks[e]) for e in ("pre_run_cell", "post_run_cell")},
            "magics": {k: sorted(m.magics[k]) for k in ("line", "cell")},
            "ours": "AskMagics" in m.registry, "transformers": len(ip.input_transformers_cleanup),
            "publish": ip.display_pub.publish}
before = state()
ip.run_line_magic("load_ext", "jupyter_ai_ci")
ip.run_line_magic("unload_ext", "jupyter_ai_ci")
out["back"] = state() == before
out["context"] = "jupyter_ai_ci.context.kernel_state" in sys.modules
ip.run_line_magic("load_ext", "jupyter_ai_ci")
with contextlib.redirect_stdout(io.StringIO()) as buf:
    ip.run_line_magic("ask", "what is seven")  # no cell ran since the load
out["answer"] = buf.getvalue()
ip.run_line_magic("ask_usage", "")  # the implementation is loaded now: unloading must undo it too
ip.run_line_magic("unload_ext", "jupyter_ai_ci")
out["after"] = state() == before
out["left"] = [n for k in ("line", "cell") for n in ip.magics_manager.magics[k] if n.startswith("ask")]
""", tmp_path)
    assert out["back"] and out["context"] is False
    assert "It is 7." in out["answer"]
    # %ask, %%ask, %ask_usage, %ask_replay, the registered AskMagics, hooks and transformers: all gone.
    assert out["after"] and out["left"] == []
