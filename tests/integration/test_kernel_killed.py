"""A kernel killed in the middle of an attempt (issue #30, faults): the replay store beside the
notebook is left as it was, and a new kernel replays what was recorded before, with no model."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_ai_ci.testing.kernel import KernelSession
from jupyter_ai_ci.testing.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.timeout(180)
STORE = ".jupyter-ai-ci-replay"


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((folder / STORE).iterdir())}


def test_a_kernel_killed_mid_attempt_leaves_the_store_whole(tmp_path: Path) -> None:
    with ScriptedOpenAIServer() as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key"}
        kernel = KernelSession(env, cwd=str(tmp_path))
        try:
            assert kernel.run("%load_ext jupyter_ai_ci").status == "ok"
            server.script("```python\ntotal = sum([1, 2, 3])\nprint(total)\n```")
            assert kernel.run("%%ask\nadd up one, two and three").status == "ok"
            before = snapshot(tmp_path)
            assert any(name.endswith(".json") for name in before)
            # The attempt kills its own kernel (--yes: os.kill is flagged, nobody is here to ask).
            server.script("```python\nimport os, signal\nprint('going')\nos.kill(os.getpid(), signal.SIGKILL)\n```")
            with pytest.raises(TimeoutError):
                kernel.run("%%ask --yes\nstop the kernel", timeout=15)
            assert not kernel.alive()
            assert snapshot(tmp_path) == before  # nothing half-written, nothing lost
        finally:
            kernel.close()

        fresh = KernelSession({**env, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, cwd=str(tmp_path))
        try:  # the model is unreachable now: the earlier request is served from the store
            assert fresh.run("%load_ext jupyter_ai_ci").status == "ok"
            run = fresh.run("%%ask\nadd up one, two and three")
            assert run.status == "ok" and "6" in run.stdout, (run.ename, run.evalue)
            assert fresh.value("total") == "6"
        finally:
            fresh.close()
