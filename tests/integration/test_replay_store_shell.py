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


class PipeRescue:
    """Opens the write end of each planted pipe after ``seconds``, so that a reader stuck in
    open() goes on (reads nothing) and the test fails instead of hanging CI."""

    def __init__(self, pipes: list[Path], seconds: float = 15.0) -> None:
        import threading

        self.pipes, self.needed = pipes, False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(seconds,), daemon=True)

    def _run(self, seconds: float) -> None:
        import os

        if self._stop.wait(seconds):
            return
        self.needed = True
        while not self._stop.wait(0.2):
            for pipe in self.pipes:
                try:
                    os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:  # nobody reads it (yet)
                    pass

    def __enter__(self) -> PipeRescue:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def first_record(ip: Any, model_server: ScriptedOpenAIServer, tmp_path: Path) -> Path:
    """One ``%%ask`` that leaves its record; the record's path (the key the next run looks up)."""
    model_server.script(py("total = 40 + 2"), py("total = 40 + 2"))
    assert ip.run_cell("%%ask --no-answer\nset total").success
    [record] = (tmp_path / "replay").glob("*.json")  # the ip fixture's replay_file names this folder
    ip.user_ns.pop("total")
    return record


def test_a_named_pipe_at_the_records_own_key_does_not_hang_the_run(
        ip: Any, model_server: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import stat
    import time

    record = first_record(ip, model_server, tmp_path)
    record.unlink()
    os.mkfifo(record)  # planted where this very request's record is looked up; nobody writes it
    capsys.readouterr()
    started = time.monotonic()
    with PipeRescue([record]) as rescue:
        again = ip.run_cell("%%ask --no-answer --new\nset total")
    assert not rescue.needed and time.monotonic() - started < 10, "the run blocked on the planted pipe"
    out = capsys.readouterr().out
    assert again.success and ip.user_ns["total"] == 42 and len(model_server.requests) == 2  # asked the model
    [line] = [s for s in out.splitlines() if "named pipe" in s]
    assert line == (f"· the replay record {record.name} is a named pipe, not a record file: it was not read, it is "
                    f"kept as {record.name}.not-read, and this request asks the model again")
    assert stat.S_ISFIFO(os.lstat(f"{record}.not-read").st_mode) and record.is_file()  # the new record is kept


def test_a_named_pipe_as_the_stores_format_does_not_hang_the_run(
        ip: Any, model_server: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import time

    first_record(ip, model_server, tmp_path)
    fmt = tmp_path / "replay" / "FORMAT"
    fmt.unlink()
    os.mkfifo(fmt)
    capsys.readouterr()
    started = time.monotonic()
    with PipeRescue([fmt]) as rescue:
        again = ip.run_cell("%%ask --no-answer --new\nset total")
    assert not rescue.needed and time.monotonic() - started < 10, "the run blocked on the planted FORMAT"
    out = capsys.readouterr().out
    assert again.success and ip.user_ns["total"] == 42 and len(model_server.requests) == 2
    [line] = [s for s in out.splitlines() if "FORMAT" in s]
    assert line.startswith(f"· the replay store {tmp_path / 'replay'} is not usable: its FORMAT is a named pipe")
