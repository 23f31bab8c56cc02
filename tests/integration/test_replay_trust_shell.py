"""In a real IPython shell: a replay record changed behind the user's back asks first; once
approved it is the user's own and replays silently (docs/safety.md, planted files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer


def py(code: str) -> str:
    return f"Sure.\n```python\n{code}\n```\n"


def test_an_edited_record_needs_approval_then_becomes_the_users(
        ip: Any, model_server: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(py("answer = 42"))
    assert ip.run_cell("%%ask\nset the answer").success
    [store] = (tmp_path / "replay").glob("*.json")  # the ip fixture's replay_file, one file per record
    record = json.loads(store.read_text())
    record["replies"] = [py("answer = 'edited by someone else'")]  # its signature no longer matches
    store.write_text(json.dumps(record))
    capsys.readouterr()

    ip.user_ns.pop("answer")
    result = ip.run_cell("%%ask\nset the answer")  # nobody can answer input() here
    assert not result.success and type(result.error_in_exec).__name__ == "PolicyRefused"
    assert "made elsewhere, not verified" in str(result.error_in_exec)
    assert "answer" not in ip.user_ns and len(model_server.requests) == 1  # nothing ran, nothing asked
    assert "answer = 'edited by someone else'" in capsys.readouterr().out  # shown for review

    assert ip.run_cell("%%ask --yes\nset the answer").success  # approved up front
    assert ip.user_ns["answer"] == "edited by someone else" and len(model_server.requests) == 1

    ip.user_ns.pop("answer")
    capsys.readouterr()
    # Now signed with the user's key: silent.  (--new: as in a fresh kernel; the same request
    # asked a third time in one conversation has a conversation of its own, so another key.)
    assert ip.run_cell("%%ask --new\nset the answer").success
    assert ip.user_ns["answer"] == "edited by someone else" and len(model_server.requests) == 1
    assert "not verified" not in capsys.readouterr().out
