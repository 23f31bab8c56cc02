"""In a real IPython shell: a replay record changed behind the user's back asks first; once
approved it is the user's own and replays silently (docs/safety.md, planted files)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer


class _Terminal(io.StringIO):
    """A terminal on stdin with a person's answers typed in (the shell asks only a terminal)."""

    def isatty(self) -> bool:
        return True


def py(code: str) -> str:
    return f"Sure.\n```python\n{code}\n```\n"


def test_an_edited_record_needs_approval_then_becomes_the_users(
        ip: Any, model_server: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
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

    # A person at a terminal approves it (answers y): now it runs.
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    assert ip.run_cell("%%ask\nset the answer").success
    assert ip.user_ns["answer"] == "edited by someone else" and len(model_server.requests) == 1

    ip.user_ns.pop("answer")
    capsys.readouterr()
    # Now signed with the user's key: silent.  (--new: as in a fresh kernel; the same request
    # asked a third time in one conversation has a conversation of its own, so another key.)
    assert ip.run_cell("%%ask --new\nset the answer").success
    assert ip.user_ns["answer"] == "edited by someone else" and len(model_server.requests) == 1
    shown = capsys.readouterr().out
    assert "not verified" not in shown and "(made elsewhere, approved by you)" in shown  # no claim reads as fact


def test_a_planted_record_with_yes_in_its_own_cell_neither_runs_nor_is_signed(
        ip: Any, model_server: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #30, item 6: a notebook someone sent says ``%%ask --yes`` over a request whose
    record they planted.  Its --yes approves none of that record's code: with nobody to ask it
    does not run; asked, the user can refuse; the record is never signed with the user's key."""
    model_server.script(py("answer = 42"))
    assert ip.run_cell("%%ask\nset the answer").success  # the user's own record: the key exists
    [store] = (tmp_path / "replay").glob("*.json")  # the ip fixture's replay_file, one file per record
    record = json.loads(store.read_text())
    record.update(replies=[py("planted = 'by the sender'")], model="trusted-model", generated_at="2020-01-01T00:00:00Z")
    store.write_text(json.dumps(record))
    planted = store.read_text()
    ip.user_ns.pop("answer")
    capsys.readouterr()

    # Nobody can be asked (stdin is no terminal): not run, one line says what to do.
    result = ip.run_cell("%%ask --yes\nset the answer")
    assert not result.success and type(result.error_in_exec).__name__ == "PolicyRefused"
    said = str(result.error_in_exec)
    assert "made elsewhere, not verified" in said and "--regenerate" in said and "nobody can be asked" in said
    assert "planted" not in ip.user_ns and len(model_server.requests) == 1
    assert store.read_text() == planted  # not signed: still unverified
    assert "trusted-model" not in capsys.readouterr().out  # the claims are not shown as fact

    # A terminal is there: --yes still asks, and the user says no.
    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))
    result = ip.run_cell("%%ask --yes\nset the answer")
    assert not result.success and "rejected by the user" in str(result.error_in_exec)
    assert "needs approval" in capsys.readouterr().out  # it was asked, --yes or not
    assert "planted" not in ip.user_ns and store.read_text() == planted
