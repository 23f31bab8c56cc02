"""The keeper stops a shared server when nobody uses it (model/keeper.py): the real keeper process,
with ``sleep`` standing in for llama.cpp (what it serves does not matter to the keeper)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_ai_ci.model import runtime

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    yield tmp_path / "m.gguf"


def keep(model: Path, log: Path, idle: float, starter: int) -> tuple[int, int]:
    """Start a keeper over ``sleep 60``: its pid and the stand-in server's."""
    log.write_text("loading\n")
    keeper = subprocess.Popen([sys.executable, "-m", "jupyter_ai_ci.model.keeper", "--model", str(model),
                               "--idle", str(idle), "--log", str(log), "--starter", str(starter), "--", "sleep", "60"],
                              stdout=subprocess.PIPE, start_new_session=True)
    assert keeper.stdout is not None
    pids = json.loads(keeper.stdout.readline())
    keeper.wait()
    return int(pids["keeper"]), int(pids["server"])


def register(model: Path, server: int, keeper: int, log: Path) -> None:
    runtime.write(runtime.Entry(model=str(model.resolve()), port=1, pid=server, keeper=keeper, key="k", alias="a",
                                uid=os.getuid(), log=str(log)))


def gone_within(seconds: float, *pids: int) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(runtime.running(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def test_a_server_whose_starter_died_before_sharing_it_goes_with_the_keeper(model: Path, tmp_path: Path) -> None:
    starter = subprocess.Popen(["sleep", "60"])
    keeper, server = keep(model, tmp_path / "log", idle=600, starter=starter.pid)
    assert not gone_within(1.0, server)  # its starter is alive: it is still starting it
    starter.kill()
    starter.wait()  # a kernel killed while the model loaded
    assert gone_within(3.0, keeper, server)
    assert (tmp_path / "log").exists()  # the starter was to read why; nobody's now, but never shared


def test_a_shared_server_stops_after_the_idle_timeout_but_never_under_a_request(model: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    keeper, server = keep(model, log, idle=1.0, starter=os.getpid())
    register(model, server, keeper, log)
    with runtime.Lease(model):  # a request of 3 s, three times the idle timeout
        assert not gone_within(3.0, server)
    started_idle = time.monotonic()
    assert gone_within(5.0, keeper, server)
    assert time.monotonic() - started_idle >= 0.9  # counted from the request's end
    assert not runtime.file_for(model).exists() and not log.exists()  # the file and the log go with it


def test_with_no_idle_timeout_it_stops_when_no_process_that_used_it_is_left(model: Path, tmp_path: Path) -> None:
    user = subprocess.Popen([sys.executable, "-c", "import sys\nfrom pathlib import Path\n"
                             "from jupyter_ai_ci.model import runtime\n"
                             f"runtime.register_user(Path({str(model)!r}))\nprint('in', flush=True)\nsys.stdin.read()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=os.environ.copy())
    assert user.stdout is not None and user.stdout.readline() == b"in\n"
    keeper, server = keep(model, tmp_path / "log", idle=0, starter=os.getpid())
    register(model, server, keeper, tmp_path / "log")
    assert not gone_within(1.5, server)  # a kernel that used it is alive
    user.kill()
    user.wait()  # killed: its lock went with it
    assert gone_within(3.0, keeper, server)


def test_the_keeper_leaves_a_runtime_file_that_names_another_server(model: Path, tmp_path: Path) -> None:
    keeper, server = keep(model, tmp_path / "log", idle=600, starter=os.getpid())
    register(model, server, keeper, tmp_path / "log")
    register(model, server + 100000, keeper, tmp_path / "log")  # a newer server's file
    os.kill(keeper, 15)
    assert gone_within(3.0, keeper, server)
    assert runtime.file_for(model).exists()


def test_a_server_whose_file_now_names_another_stops_once_no_request_holds_it(model: Path, tmp_path: Path) -> None:
    """Its file was refused or failed its proof, and a new server's replaced it: nobody can find the
    old one any more, and its gigabytes go -- after the requests that still use it."""
    keeper, server = keep(model, tmp_path / "log", idle=600, starter=os.getpid())
    register(model, server, keeper, tmp_path / "log")
    assert not gone_within(1.0, server)
    with runtime.Lease(model):
        register(model, server + 100000, keeper, tmp_path / "log")  # the new server's file
        assert not gone_within(1.5, server)  # a request still in flight on it
    assert gone_within(3.0, keeper, server)
    assert runtime.file_for(model).exists()  # the new server's file stays
