"""In a real IPython shell: a replay store that cannot be written does not fail the run; one
line says the record was not kept (issue 30).  The run layer says it, so the panel and the
command line say it too (the same ``Run.say``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer


def py(code: str) -> str:
    return f"Sure.\n```python\n{code}\n```\n"


def ask_twice(ip: Any, model_server: ScriptedOpenAIServer, folder: Path, capsys: pytest.CaptureFixture[str]) -> str:
    ip.run_line_magic("config", f"AskMagics.replay_file = {str(folder / '.jupyter-ai-ci-replay')!r}")
    model_server.script(py("total = 40 + 2"), py("total = 40 + 2"))
    capsys.readouterr()
    first = ip.run_cell("%%ask --no-answer\nset total")
    said = capsys.readouterr().out
    assert first.success and ip.user_ns["total"] == 42  # the run worked
    again = ip.run_cell("%%ask --no-answer --new\nset total")
    assert again.success and len(model_server.requests) == 2  # nothing was kept to replay from
    return said


def test_a_read_only_folder_runs_and_says_the_record_was_not_kept(
        ip: Any, model_server: ScriptedOpenAIServer, readonly_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    said = ask_twice(ip, model_server, readonly_folder, capsys)
    [line] = [s for s in said.splitlines() if "replay record" in s]
    assert line.startswith("· this request's replay record was not kept: cannot write in ")
    assert "the run itself is not affected" in line


def test_a_full_disk_runs_and_says_the_record_was_not_kept(
        ip: Any, model_server: ScriptedOpenAIServer, full_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    said = ask_twice(ip, model_server, full_folder, capsys)
    [line] = [s for s in said.splitlines() if "replay record" in s]
    assert "was not kept" in line and "No space left on device" in line


def test_an_old_replay_file_is_moved_in_replays_and_can_be_listed_and_cleared(
        ip: Any, model_server: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import shutil

    model_server.script(py("total = 40 + 2"))
    assert ip.run_cell("%%ask --no-answer\nset total").success
    # Turn the store back into the single file of earlier versions, signatures and all.
    folder = tmp_path / "replay"  # the ip fixture's replay_file, replay.json, names this folder
    records = {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}
    shutil.rmtree(folder)
    (tmp_path / "replay.json").write_text(json.dumps({"version": 1, "records": records}))
    ip.user_ns.pop("total")
    capsys.readouterr()

    assert ip.run_cell("%%ask --no-answer --new\nset total").success
    out = capsys.readouterr().out
    assert ip.user_ns["total"] == 42 and len(model_server.requests) == 1  # replayed, no model call
    assert "· moved 1 replay record(s) from replay.json into replay/, one file each; the old file is kept " \
           "as replay.json.migrated" in out
    assert (tmp_path / "replay.json.migrated").exists() and not (tmp_path / "replay.json").exists()

    ip.run_line_magic("ask_replay", "")
    assert "set total" in capsys.readouterr().out
    ip.run_line_magic("ask_replay", "--clear")
    assert f"cleared 1 replay record(s) from {folder}" in capsys.readouterr().out
    assert list(folder.glob("*.json")) == []
