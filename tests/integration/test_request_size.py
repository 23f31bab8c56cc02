"""A 9 MB request is refused with one line by the magic and the CLI: no model request,
nothing in the notebook's metadata (issue 15, item 9; the websocket: server/test_server.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer
from tests.integration.test_cli import existing_notebook, run

HUGE = "sum these numbers: " + "1234567, " * 1_000_000  # ~9 MB, pasted data
LINE = "the request is 9.0 MB; the limit is 64 kB — put large data in a file or variable and refer to it"


def test_the_magic_refuses_a_9_mb_request(ip: Any, model_server: ScriptedOpenAIServer,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    result = ip.run_cell("%%ask\n" + HUGE)
    # The magic shows a run's UsageProblem as IPython's UsageError: one line, no traceback.
    assert type(result.error_in_exec).__name__ == "UsageError" and str(result.error_in_exec) == LINE
    assert model_server.requests == []
    text = "".join(capsys.readouterr())
    assert "Traceback" not in text and "1234567" not in text
    assert ip.run_cell("1 + 1").result == 2  # the kernel is fine


def test_the_cli_refuses_a_9_mb_request(tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    before = existing_notebook(tmp_path / "a.ipynb", "x = 1")
    (tmp_path / "big.txt").write_text(HUGE)
    proc = run(["a.ipynb", "--prompt-file", "big.txt"], tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert LINE in proc.stderr and "Traceback" not in proc.stderr
    assert model_server.requests == []
    assert (tmp_path / "a.ipynb").read_bytes() == before
    assert all("jupyter_ai_ci" not in c.metadata for c in nbformat.read(tmp_path / "a.ipynb", 4).cells)


def test_just_over_the_limit_says_bytes_not_the_same_kb_twice() -> None:
    # Found by a newcomer: 64,011 bytes read "the request is 64.0 kB; the limit is 64 kB".
    from jupyter_ai_ci.errors import UsageProblem
    from jupyter_ai_ci.run.rules import check_size

    with pytest.raises(UsageProblem, match=r"^the request is 64,011 bytes; the limit is 64,000 bytes \(64 kB\)"):
        check_size("x" * 64_011, 64)
    with pytest.raises(UsageProblem, match=r"^the request is 65\.5 kB; the limit is 64 kB"):
        check_size("x" * 65_536, 64)
    check_size("x" * 64_000, 64)  # at the limit: sent
