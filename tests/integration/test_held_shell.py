"""A fix held open (run/held.py) in a real IPython shell: reject puts the kernel back,
accept keeps the attempt's state without running it again."""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.executors.shell import ShellExecutor
from jupyter_ai_ci.run import fixcell
from jupyter_ai_ci.run.flow import InProcessKernel, run_sync
from jupyter_ai_ci.run.held import HeldAttempt
from jupyter_ai_ci.run.session import Session
from jupyter_ai_ci.testing import ScriptedOpenAIServer

CELL = fixcell.from_outputs("runs += 1\nlabels.append('x')\ntotal = df['Revenue'].sum()", "KeyError", "'Revenue'")
FIXED = "runs += 1\nlabels.append('x')\ntotal = df['revenue'].sum()"


def tried(ip: Any, server: ScriptedOpenAIServer) -> HeldAttempt:
    ip.run_cell("import pandas as pd\ndf = pd.DataFrame({'revenue': [1.5, 2.5]})\nruns, labels = 1, ['x']")
    server.script(f"```python\n{FIXED}\n```")
    held = HeldAttempt(ShellExecutor(ip))
    run = fixcell.make_run(Session(AICISettings()), CELL, "fix")
    outcome = run_sync(run, InProcessKernel(ip), held).outcome  # type: ignore[arg-type]
    assert fixcell.fixed_code(CELL, outcome) == FIXED
    assert held.held and (ip.user_ns["runs"], ip.user_ns["labels"], ip.user_ns["total"]) == (2, ["x", "x"], 4.0)
    return held


def test_reject_puts_back_what_the_tried_fix_changed(ip: Any, model_server: ScriptedOpenAIServer) -> None:
    held = tried(ip, model_server)
    assert held.reject().supported
    assert (ip.user_ns["runs"], ip.user_ns["labels"], "total" in ip.user_ns) == (1, ["x"], False)
    assert not held.reject().supported  # decided once: a second click does nothing
    held.accept()
    assert ip.user_ns["runs"] == 1


def test_accept_keeps_the_attempt_applied_once(ip: Any, model_server: ScriptedOpenAIServer) -> None:
    held = tried(ip, model_server)
    asyncio.run(held.aaccept())
    assert (ip.user_ns["runs"], ip.user_ns["labels"], ip.user_ns["total"]) == (2, ["x", "x"], 4.0)
    assert not held.reject().supported and ip.user_ns["runs"] == 2  # accepted: no rollback after it


def test_reject_later_leaves_what_the_users_own_cells_did_since(ip: Any, model_server: ScriptedOpenAIServer) -> None:
    held = tried(ip, model_server)
    ip.run_cell("made_since = 'mine'\nfig_title = 'kept'")  # the user works on while the offer waits
    assert held.reject().supported
    assert (ip.user_ns["runs"], "total" in ip.user_ns) == (1, False)
    assert (ip.user_ns["made_since"], ip.user_ns["fig_title"]) == ("mine", "kept")
