"""Security review #38: a candidate that patched ``builtins.sum`` changed the vote's count ("999
of 999 candidates agree").  Performed in a real IPython shell with the scripted model: the
candidate rebinds ``sum`` and ``len`` on the ``builtins`` module for callers in jupyter_ai_ci
alone (the notebook's own code keeps working, as an attack would), and the vote is counted as
before, by our own builtins (``jupyter_ai_ci/pristine.py``)."""

from __future__ import annotations

import builtins
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_ai_ci import pristine
from jupyter_ai_ci.testing import ScriptedOpenAIServer

# Self-contained (the rollback of this candidate removes its names): 999 for our callers only.
PATCH = """import builtins, sys
builtins.sum = lambda *a, _s=builtins.sum, _f=sys._getframe, **k: (
    999 if _f(1).f_globals.get('__name__', '').startswith('jupyter_ai_ci') else _s(*a, **k))
builtins.len = lambda o, _l=builtins.len, _f=sys._getframe: (
    999 if _f(1).f_globals.get('__name__', '').startswith('jupyter_ai_ci') else _l(o))
print(76)"""


def py(code: str) -> str:
    return f"Sure.\n```python\n{code}\n```\n"


@pytest.fixture
def restored() -> Iterator[None]:
    saved = {name: getattr(builtins, name) for name in ("sum", "len")}
    yield
    for name, value in saved.items():
        setattr(builtins, name, value)


def test_a_candidate_that_patches_builtins_does_not_change_the_vote(
        ip: Any, model_server: ScriptedOpenAIServer, restored: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert ip.run_cell("%config AskMagics.policy = 'auto'").success  # the person's: it all runs
    # Both candidates patch: each is rolled back before the next (the transaction restores
    # builtins), and the committed winner's patch is live while the vote is counted.
    model_server.script(py(PATCH), py(PATCH))
    assert ip.run_cell("%%ask --candidates 3 --no-answer\nHow many answered yes?").success
    # The winner's patch is live: it is our code that did not use it.
    assert builtins.sum is not pristine.OWN["sum"] and builtins.len is not pristine.OWN["len"]
    out = capsys.readouterr().out
    assert "✓ done · 2 of 2 candidates agree" in out and "999 of" not in out
    vote = ip.magics_manager.registry["AskMagics"].last_outcome.consensus
    assert vote.counted == 2 and [g.candidates for g in vote.groups] == [(1, 2)]


def test_every_module_of_ours_looks_builtins_up_in_its_own_copy() -> None:
    import jupyter_ai_ci.drivers.magic  # noqa: F401 -- the whole run, as %%ask loads it

    ours = {name: m for name, m in sys.modules.items() if name.split(".")[0] == "jupyter_ai_ci"}
    assert len(ours) > 50
    assert [name for name, m in ours.items() if vars(m).get("__builtins__") is not pristine.OWN] == []
