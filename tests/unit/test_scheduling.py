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
