"""Shared fixtures: a real OpenAI-protocol HTTP server with scripted replies,
a real IPython shell, and a real kernel started with jupyter_client."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from jupyter_ai_ci.notebook.signing import KEY_ENV
from jupyter_ai_ci.testing import ScriptedOpenAIServer
from tests.scheduling import pytest_xdist_make_scheduler  # noqa: F401  (a hook: pytest finds it here)

# Replay records are signed with a per-user key (notebook/signing.py): the tests use their own,
# never the user's, set here so every kernel, server and CLI they start inherits it.
_KEYS = tempfile.mkdtemp(prefix="jupyter-ai-ci-test-keys-")
atexit.register(shutil.rmtree, _KEYS, True)
os.environ[KEY_ENV] = str(Path(_KEYS) / "replay.key")

# The property tests check what holds for any input, not how fast inputs are drawn: on a loaded
# CI machine (two test runs at once, parallel workers) Hypothesis's timing checks failed a correct
# test ("input generation is slow", 1.2 s for two inputs).
settings.register_profile("ci-load", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("ci-load")

# A shell starts a background job (`bash .ci/run &`, nohup) with SIGINT ignored, and Python then
# installs no handler of its own: the watchdog, which interrupts through that handler, stays off
# and its tests fail (seen running the oldest-versions suite in the background). A terminal's run
# has Python's handler: give every run the same.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def _server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
def model_server(_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedOpenAIServer:
    """The scripted model, emptied for each test; OPENAI_* point at it."""
    _server.script()
    _server.api_key = None
    _server.max_n = None
    _server.refuse_images = False
    _server.models, _server.models_headers = None, {}
    monkeypatch.setenv("OPENAI_BASE_URL", _server.base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("JUPYTER_AI_CI_MODEL", raising=False)
    return _server


@pytest.fixture
def ip(model_server: ScriptedOpenAIServer, tmp_path: Any) -> Iterator[Any]:
    """A real IPython shell with the extension loaded and a clean namespace."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    start_ipython()  # once per process; later calls return None
    shell = get_ipython()
    assert shell is not None
    shell.reset(new_session=True)
    shell.run_line_magic("load_ext", "jupyter_ai_ci")
    # Each test gets a fresh AskMagics (settings and conversation); %config in an
    # earlier test lives on in shell.config, so forget it first.
    from jupyter_ai_ci.drivers.magic_entry import AskMagics

    for section in ("AskMagics", "AICISettings"):
        shell.config.pop(section, None)
    shell.register_magics(AskMagics)
    # Replay records go to a temp file: one left in the repo would replay in the next run.
    shell.run_line_magic("config", f"AskMagics.replay_file = {str(tmp_path / 'replay.json')!r}")
    yield shell
    shell.rl_next_input = None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs a real shell, kernel or server")
    os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True)
def _no_kept_key_marker(monkeypatch: pytest.MonkeyPatch) -> None:
    # A Jupyter server started in this process marks its environment when it keeps
    # OPENAI_API_KEY from kernels (drivers/server/__init__.py); undone after each test.
    monkeypatch.setenv("JUPYTER_AI_CI_KEY_KEPT", "")


def _mount_tmpfs(folder: Path, size: str) -> bool:
    """A small tmpfs on ``folder`` (root only); False where mounting is not allowed."""
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, check=False)
    return done.returncode == 0


def _umount(folder: Path) -> None:
    import subprocess

    subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


@pytest.fixture
def readonly_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder no file can be written in: a read-only tmpfs where we are root (root writes
    through mode bits), else mode 0o555."""
    folder = tmp_path / "readonly"
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        if not _mount_tmpfs(folder, "1m"):
            pytest.skip("root without permission to mount: no read-only folder to test with")
        import subprocess

        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True, capture_output=True)
        yield folder
        _umount(folder)
        return
    folder.mkdir()
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


@pytest.fixture
def full_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder on a file system with no space left (a 256 kB tmpfs, filled up)."""
    folder = tmp_path / "full"
    if not _mount_tmpfs(folder, "256k"):
        pytest.skip("cannot mount a small file system here (needs root)")
    try:
        with open(folder / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError:
        pass
    yield folder
    _umount(folder)
