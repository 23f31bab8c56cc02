"""tests/scheduling.py: a worker that dies costs its one test, never the run.

A real pytest run in two xdist workers (a subprocess) over files of which one kills its worker with
SIGSEGV, as a crash in a C extension does. xdist 3.8's own scheduler runs that test again in each
replacement worker and then waits forever (CI's 90 minutes, once); ours reports it failed, runs
every other test once and ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _plant(folder: Path) -> None:
    (folder / "test_a_crash.py").write_text(
        "import os, signal\n"
        "def test_before(): pass\n"
        "def test_dies(): os.kill(os.getpid(), signal.SIGSEGV)\n"
        "def test_after(): pass\n")
    for i in range(5):
        (folder / f"test_b{i}.py").write_text("def test_one(): pass\ndef test_two(): pass\n")
    # A file of one test: the unit a new worker may be handed alone.
    (folder / "test_c_single.py").write_text("def test_alone(): pass\n")


def test_a_crashed_worker_fails_its_one_test_and_the_run_ends(tmp_path: Path) -> None:
    _plant(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", "-p", "tests.scheduling",
         "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    summary = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 1, done.stdout[-2000:]
    assert "1 failed, 13 passed" in summary, done.stdout[-2000:]
    assert "crashed while running 'test_a_crash.py::test_dies'" in done.stdout
    # The test it died on ran once: a second run would have crashed a second worker.
    assert done.stderr.count("Fatal Python error: Segmentation fault") == 1, done.stderr[-2000:]


class _Worker:
    """What the scheduler sees of one of xdist's workers: it is sent units, or, dead, cannot be.
    A stand-in, not a real worker: the race it plays (a report read after its worker died) cannot
    be forced with real ones; the test above runs real workers."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.dead = False
        self.sent: list[list[int]] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        if self.dead:  # what execnet raises on a pipe whose worker is gone
            raise OSError("cannot send (already closed?)")
        self.sent.append(list(indices))

    def shutdown(self) -> None:
        self.shutting_down = True


def test_a_unit_handed_to_a_worker_that_died_unseen_goes_to_the_other_worker() -> None:
    # The race CI met on 5 Dec, made certain: the worker reported the test before the crash and
    # died before that report was read, so the next unit cannot be sent to it.
    from tests.scheduling import pytest_xdist_make_scheduler

    config = pytest.Config.fromdictargs({"tx": ["2*popen"], "dist": "loadfile"}, [])
    sched = pytest_xdist_make_scheduler(config, None)
    collection = ["a.py::before", "a.py::dies", "a.py::after"] + [
        f"b{i}.py::{name}" for i in range(4) for name in ("one", "two")]
    crashing, other = _Worker("gw0"), _Worker("gw1")
    for worker in (crashing, other):
        sched.add_node(worker)
        sched.add_node_collection(worker, collection)
    sched.schedule()
    assert collection.index("a.py::before") in crashing.sent[0]

    crashing.dead = True
    head = next(iter(sched.workqueue))
    sched.mark_test_complete(crashing, collection.index("a.py::before"))  # raised OSError before
    assert next(iter(sched.workqueue)) == head  # the unit that could not be sent is next again
    assert sched.remove_node(crashing) == "a.py::dies"

    # Every test but the crashed one is run once, by the worker left, which is then told to stop.
    while pending := [nodeid for unit in sched.assigned_work[other].values()
                      for nodeid, done in unit.items() if not done]:
        sched.mark_test_complete(other, collection.index(pending[0]))
    handed = [collection[i] for sent in other.sent for i in sent]
    assert sorted(handed) == sorted(set(collection) - {"a.py::before", "a.py::dies"})
    assert not sched.workqueue and other.shutting_down


def test_a_worker_that_ended_its_units_and_died_unseen_loses_no_test() -> None:
    # It finished every test it had, then died before the next unit could be sent: no test was
    # running, none is reported crashed, and the unit goes to the other worker whole.
    from tests.scheduling import pytest_xdist_make_scheduler

    config = pytest.Config.fromdictargs({"tx": ["2*popen"], "dist": "loadfile"}, [])
    sched = pytest_xdist_make_scheduler(config, None)
    collection = [f"{f}.py::{name}" for f in ("a", "b", "c", "d", "e") for name in ("one", "two", "three")]
    first, other = _Worker("gw0"), _Worker("gw1")
    for worker in (first, other):
        sched.add_node(worker)
        sched.add_node_collection(worker, collection)
    sched.schedule()
    mine = [collection[i] for i in first.sent[0]]
    first.dead = True
    for nodeid in mine:
        sched.mark_test_complete(first, collection.index(nodeid))
    assert sched.remove_node(first) is None  # nothing was running on it
    while pending := [nodeid for unit in sched.assigned_work[other].values()
                      for nodeid, done in unit.items() if not done]:
        sched.mark_test_complete(other, collection.index(pending[0]))
    handed = [collection[i] for sent in other.sent for i in sent]
    assert sorted(handed + mine) == sorted(collection)
