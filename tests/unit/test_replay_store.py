"""The replay store loses nothing (issue 30): concurrent processes and threads, a writer killed
mid-write, damaged and newer stores, a folder that cannot be written, and the single file of
earlier versions moved in.  Real processes and real files throughout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from jupyter_ai_ci.notebook import signing
from jupyter_ai_ci.notebook.replay import Record, ReplayStore

WRITERS, EACH = 4, 250


def record(key: str, code: str = "x = 1") -> Record:
    return Record(key, f"request {key}", "m", "h", (f"```python\n{code}\n```",), 1, 10, 5, 1, "2026-11-26T00:00:00Z")


# A writer in its own interpreter: the store as every kernel, panel and command line uses it.
WRITER = """
import sys
from jupyter_ai_ci.notebook.replay import Record, ReplayStore
store = ReplayStore(sys.argv[1])
first, count = int(sys.argv[2]), int(sys.argv[3])
for i in range(first, first + count if count else 10**9):
    key = f"{i:032x}"
    assert store.put(Record(key, f"request {key}", "m", "h", ("```python\\nx = 1\\n```",), 1, 10, 5, 1,
                            "2026-11-26T00:00:00Z")), store.notes
    if not count:
        print(key, flush=True)
"""


def writer(folder: Path, first: int, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(first), str(count)],
                            stdout=subprocess.PIPE, text=True)


def test_four_processes_of_250_records_each_keep_all_1000(tmp_path: Path) -> None:
    folder = tmp_path / ".jupyter-ai-ci-replay"
    procs = [writer(folder, w * EACH, EACH) for w in range(WRITERS)]
    assert [p.wait(timeout=300) for p in procs] == [0] * WRITERS
    store = ReplayStore(folder)
    kept = store.all()
    assert len(kept) == WRITERS * EACH
    assert {r.key for r in kept} == {f"{i:032x}" for i in range(WRITERS * EACH)}
    assert all(r.unverified == "" for r in kept)  # each signed, each verified
    assert store.notes == []


def test_threads_writing_at_once_keep_every_record(tmp_path: Path) -> None:
    store = ReplayStore(tmp_path / "r")  # one store object shared, as in the server's process

    def put(t: int) -> None:
        for i in range(50):
            assert store.put(record(f"t{t}-{i}"))

    threads = [threading.Thread(target=put, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ReplayStore(tmp_path / "r").all()) == 400


def test_a_put_costs_one_file_whatever_the_store_holds(tmp_path: Path) -> None:
    store = ReplayStore(tmp_path / "r")
    for i in range(300):
        store.put(record(f"k{i}"))
    before = {p.name: p.stat().st_mtime_ns for p in store.path.iterdir()}
    time.sleep(0.01)
    store.put(record("new"))
    after = {p.name: p.stat().st_mtime_ns for p in store.path.iterdir()}
    assert {n for n in after if after[n] != before.get(n)} == {"new.json"}  # nothing else rewritten


def test_a_writer_killed_mid_write_corrupts_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    ReplayStore(folder).put(record("k0"))
    proc = writer(folder, 1, 0)  # writes until killed
    assert proc.stdout is not None
    for _ in range(40):  # let it get going, then kill it wherever it is
        proc.stdout.readline()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    store = ReplayStore(folder)
    files = sorted(folder.glob("*.json"))
    assert len(files) >= 41
    records = store.all()
    assert len(records) == len(files) and all(r.unverified == "" for r in records)
    assert store.notes == []  # no damaged record: at most a stray temporary file
    stray = [p for p in folder.iterdir() if p.suffix != ".json" and p.name != "FORMAT"]
    assert all(p.name.startswith(".") and p.name.endswith(".tmp") for p in stray)
    for p in stray:  # a killed write's temporary file, an hour later: --clear sweeps it
        os.utime(p, (time.time() - 3600, time.time() - 3600))
    assert store.clear() == len(files) and list(folder.iterdir()) == [folder / "FORMAT"]


def test_a_store_of_a_newer_version_is_left_alone_with_one_line(tmp_path: Path) -> None:
    folder = tmp_path / ".jupyter-ai-ci-replay"
    folder.mkdir()
    (folder / "FORMAT").write_text("3\n")
    (folder / "k.json").write_text('{"key": "k", "future": true}')
    said: list[str] = []
    store = ReplayStore(folder, say=said.append)
    assert store.get("k") is None and not store.put(record("k"))
    assert said == [f"· the replay store {folder} was written by a newer jupyter-ai-ci (format 3): it is left "
                    "as it is, and records are neither replayed nor kept (upgrade jupyter-ai-ci, or set "
                    "replay_file to another name)\n"]
    assert (folder / "k.json").read_text() == '{"key": "k", "future": true}'  # never overwritten


def test_a_file_where_the_store_folder_should_be_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "r").write_text("my notes")
    store = ReplayStore(tmp_path / "r")
    assert not store.put(record("k")) and store.get("k") is None
    assert len(store.notes) == 1 and "is not a replay store folder" in store.notes[0]
    assert (tmp_path / "r").read_text() == "my notes"


def test_a_damaged_record_is_set_aside_and_never_overwritten(tmp_path: Path) -> None:
    store = ReplayStore(tmp_path / "r")
    store.put(record("k"))
    (store.path / "k.json").write_text('{"key": "k", "replies": ["half')  # a hand edit gone wrong
    assert store.get("k") is None
    assert store.put(record("k", "x = 2"))  # the new record beside the damaged one, kept aside
    assert (store.path / "k.json.damaged").read_text() == '{"key": "k", "replies": ["half'
    assert ReplayStore(store.path).get("k") == record("k", "x = 2")


def old_file(path: Path, records: dict[str, dict[str, object]]) -> None:
    """A replay file as versions before this one wrote it: every record in one JSON file."""
    path.write_text(json.dumps({"version": 1, "records": records}, indent=1, sort_keys=True))


def signed(key: str, code: str = "x = 1") -> dict[str, object]:
    fields = {"key": key, "request": f"request {key}", "model": "m", "endpoint_host": "h",
              "replies": [f"```python\n{code}\n```"], "attempts": 1, "prompt_tokens": 10, "completion_tokens": 5,
              "requests": 1, "generated_at": "2026-11-26T00:00:00Z", "unanswered": False}
    return {**fields, "sig": signing.sign(fields)}


def test_an_old_replay_file_is_moved_in_on_first_use_and_kept_aside(tmp_path: Path) -> None:
    old = tmp_path / ".jupyter-ai-ci-replay.json"
    old_file(old, {"a1": signed("a1"), "b2": signed("b2", "y = 2"), "../../evil": {"key": "../../evil"}})
    said: list[str] = []
    store = ReplayStore(tmp_path / ".jupyter-ai-ci-replay", say=said.append)
    assert store.get("a1") == record("a1") and store.get("a1").unverified == ""  # type: ignore[union-attr]
    assert said == ["· moved 2 replay record(s) from .jupyter-ai-ci-replay.json into .jupyter-ai-ci-replay/, "
                    "one file each; the old file is kept as .jupyter-ai-ci-replay.json.migrated (1 malformed "
                    "record(s) stay only there)\n"]
    assert not old.exists() and json.loads((tmp_path / ".jupyter-ai-ci-replay.json.migrated").read_text())
    assert sorted(p.name for p in store.path.glob("*.json")) == ["a1.json", "b2.json"]
    assert not (tmp_path.parent / "evil.json").exists()  # a key is never a path
    again = ReplayStore(tmp_path / ".jupyter-ai-ci-replay")
    assert len(again.all()) == 2 and again.notes == []  # moved once, said once


def test_moving_the_old_file_in_never_overwrites_a_newer_record(tmp_path: Path) -> None:
    store = ReplayStore(tmp_path / "r.json")  # the old setting's value names the same store
    assert store.path == tmp_path / "r"
    store.put(record("a1", "newer = 1"))
    old_file(tmp_path / "r.json", {"a1": signed("a1"), "c3": signed("c3")})  # e.g. an older version ran since
    fresh = ReplayStore(tmp_path / "r.json")
    assert fresh.get("a1") == record("a1", "newer = 1") and fresh.get("c3") == record("c3")
    assert (tmp_path / "r.json.migrated").exists() or (tmp_path / "r.json.migrated.2").exists()


def test_a_damaged_or_newer_old_file_is_kept_aside_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"version": 1, "records": {"k": ')
    damaged = ReplayStore(tmp_path / "a")
    assert damaged.get("k") is None and len(damaged.notes) == 1
    assert damaged.notes[0].startswith("a.json is damaged (") and "kept as a.json.not-migrated" in damaged.notes[0]
    assert (tmp_path / "a.json.not-migrated").read_text() == '{"version": 1, "records": {"k": '
    (tmp_path / "b.json").write_text('{"version": 7, "records": {}}')
    newer = ReplayStore(tmp_path / "b")
    assert newer.all() == [] and newer.notes == [
        "b.json was written by a newer jupyter-ai-ci (format 7): its records were not moved into b/; "
        "it is kept as b.json.not-migrated"]


def test_a_read_only_folder_replays_the_old_file_and_says_a_new_record_is_not_kept(readonly_folder: Path) -> None:
    # Made before the folder turned read-only (a read-only checkout of a notebook with its replay file).
    folder = readonly_folder
    writable = folder.parent / "w"
    writable.mkdir()
    old_file(writable / ".jupyter-ai-ci-replay.json", {"a1": signed("a1")})
    _swap_in(writable / ".jupyter-ai-ci-replay.json", folder)
    store = ReplayStore(folder / ".jupyter-ai-ci-replay")
    assert store.get("a1") == record("a1")  # replayed from the old file
    assert not store.put(record("b2"))
    assert len(store.notes) == 2 and "they are replayed from the old file" in store.notes[0]
    assert store.notes[1].startswith("this request's replay record was not kept: cannot write in")
    assert (folder / ".jupyter-ai-ci-replay.json").exists()  # left as it was


def _swap_in(file: Path, readonly: Path) -> None:
    """Put ``file`` into the read-only folder: remount it writable for a moment (root), or
    lift the mode bits for a moment."""
    if os.geteuid() == 0:
        subprocess.run(["mount", "-o", "remount,rw", str(readonly)], check=True)
        (readonly / file.name).write_bytes(file.read_bytes())
        subprocess.run(["mount", "-o", "remount,ro", str(readonly)], check=True)
    else:
        readonly.chmod(0o755)
        (readonly / file.name).write_bytes(file.read_bytes())
        readonly.chmod(0o555)


def test_a_full_disk_says_the_record_was_not_kept_and_leaves_no_temporary(full_folder: Path) -> None:
    said: list[str] = []
    store = ReplayStore(full_folder / "r", say=said.append)
    assert store.put(record("k")) is False
    assert len(said) == 1 and "this request's replay record was not kept" in said[0] and "No space left" in said[0]
    assert not store.path.exists() or list(store.path.iterdir()) == []  # no half-written file left


def test_clear_forgets_every_record(tmp_path: Path) -> None:
    store = ReplayStore(tmp_path / "r")
    for i in range(5):
        store.put(record(f"k{i}"))
    assert store.clear() == 5 and store.all() == [] and ReplayStore(tmp_path / "r").all() == []


# ---- planted names (issue 38, item 2): a store that cannot be used against its reader ----------

def finishes(fn, pipes: tuple[Path, ...] = (), seconds: float = 10.0):  # type: ignore[no-untyped-def]
    """``fn()`` within ``seconds``, or the test fails (never hangs): a reader stuck on a planted
    pipe is let go by opening the pipe's other end, so the regression shows as a failure."""
    done: list[object] = []
    thread = threading.Thread(target=lambda: done.append(fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for pipe in pipes:  # a reader blocked in open() counts as a reader: this open succeeds
            try:
                os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        thread.join(5)
        raise AssertionError(f"still reading after {seconds:g} s: the store blocked on a planted name")
    return done[0]


def test_a_named_pipe_planted_as_a_record_is_set_aside_unopened(tmp_path: Path) -> None:
    store = ReplayStore(tmp_path / "r")
    store.put(record("k"))
    (store.path / "k.json").unlink()
    os.mkfifo(store.path / "k.json")  # nobody ever writes it: a plain open() waits for good
    said: list[str] = []
    fresh = ReplayStore(store.path, say=said.append)
    assert finishes(lambda: fresh.get("k"), (store.path / "k.json",)) is None
    assert said == ["· the replay record k.json is a named pipe, not a record file: it was not read, it is kept "
                    "as k.json.not-read, and this request asks the model again\n"]
    import stat
    assert stat.S_ISFIFO(os.lstat(store.path / "k.json.not-read").st_mode)  # moved, as it was
    assert fresh.put(record("k", "x = 2")) and ReplayStore(store.path).get("k") == record("k", "x = 2")
    assert finishes(lambda: [r.key for r in ReplayStore(store.path).all()]) == ["k"]


def test_a_link_to_dev_zero_is_never_followed_under_a_memory_limit(tmp_path: Path) -> None:
    # In its own interpreter under 1.5 GB (as the report had it): a regression reads /dev/zero
    # until MemoryError there, not in this process.
    folder = tmp_path / "r"
    ReplayStore(folder).put(record("k"))
    (folder / "k.json").unlink()
    (folder / "k.json").symlink_to("/dev/zero")
    script = ("import resource, sys\n"
              "resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))\n"
              "from jupyter_ai_ci.notebook.replay import ReplayStore\n"
              "store = ReplayStore(sys.argv[1])\n"
              "assert store.get('k') is None and store.all() == []\n"
              "print(store.notes[0])\n")
    done = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == ("the replay record k.json is a symbolic link, not a record file: it was not "
                                   "read, it is kept as k.json.not-read, and this request asks the model again")
    assert os.readlink(folder / "k.json.not-read") == "/dev/zero"  # the link itself, moved


def test_a_link_to_a_good_record_elsewhere_is_not_followed(tmp_path: Path) -> None:
    elsewhere = ReplayStore(tmp_path / "elsewhere")
    elsewhere.put(record("k", "planted = 1"))  # signed with this user's key: it would replay silently
    folder = tmp_path / "r"
    ReplayStore(folder).put(record("other"))
    (folder / "k.json").symlink_to(elsewhere.path / "k.json")
    store = ReplayStore(folder)
    assert store.get("k") is None and "is a symbolic link" in store.notes[0]
    assert (elsewhere.path / "k.json").is_file()  # what it pointed to is untouched


def test_a_record_over_the_size_cap_is_not_read(tmp_path: Path) -> None:
    from jupyter_ai_ci.notebook.store import MAX_RECORD_BYTES

    store = ReplayStore(tmp_path / "r")
    store.put(record("k"))
    with open(store.path / "k.json", "wb") as f:  # sparse: no disk spent, any size
        f.truncate(MAX_RECORD_BYTES + 1)
    assert store.get("k") is None
    assert store.notes == ["the replay record k.json is larger than 8 MB, not a record file: it was not read, "
                           "it is kept as k.json.not-read, and this request asks the model again"]
    # And one that would be over it is never written (it could not be read back).
    assert not store.put(record("big", "x = '" + "a" * MAX_RECORD_BYTES + "'"))
    assert store.notes[-1] == "this request's replay record was not kept: it is larger than 8 MB"


def test_a_named_pipe_as_format_or_as_the_old_file_is_never_opened(tmp_path: Path) -> None:
    folder = tmp_path / ".jupyter-ai-ci-replay"
    ReplayStore(folder).put(record("k"))
    (folder / "FORMAT").unlink()
    os.mkfifo(folder / "FORMAT")
    store = ReplayStore(folder)
    assert finishes(lambda: (store.get("k"), store.put(record("j"))), (folder / "FORMAT",)) == (None, False)
    assert store.notes == [f"the replay store {folder} is not usable: its FORMAT is a named pipe, not a file, and "
                           "was not read; it is left as it is, and records are neither replayed nor kept (remove "
                           "it, or set replay_file to another name)"]
    old = tmp_path / "o.json"
    os.mkfifo(old)
    moved = ReplayStore(tmp_path / "o")
    assert finishes(lambda: moved.all(), (old,)) == []
    assert moved.notes == ["o.json is a named pipe, not a replay file, and was not read: its records were not "
                           "moved into o/; it is kept as o.json.not-migrated"]
    assert moved.put(record("k")) and moved.get("k") == record("k")
