"""A real ``jupyter lab`` with the extension installed, headless Chromium via
Playwright, and the scripted OpenAI-compatible server as the model."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labutil import ARTIFACTS

from jupyter_ai_ci.testing import ScriptedOpenAIServer

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run"]

playwright_api = pytest.importorskip("playwright.sync_api")
if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (scripts/test.sh installs it)", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def model() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def lab(model: ScriptedOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield from start_lab(tmp_path_factory, {"OPENAI_BASE_URL": model.base_url})


def start_lab(tmp_path_factory: pytest.TempPathFactory, endpoint: dict[str, str]) -> Iterator[dict[str, Any]]:
    """A JupyterLab server with the extension, its model at ``endpoint`` (environment variables)."""
    root = tmp_path_factory.mktemp("lab")
    home = tmp_path_factory.mktemp("home")
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_AI_CI_MODEL": "scripted-model",
        **endpoint,
        # Kernels must run this environment's python, with this checkout installed.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    }
    env.pop("OPENAI_API_KEY", None)
    # The tests' Agg (tests/conftest.py) is not what a person's kernel has: ipykernel picks inline.
    env.pop("MPLBACKEND", None)
    # No "get notified about news?" toast over the notebook in screenshots.
    notification = home / "settings" / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    # The models the panel may use (its picker): the first is the default, JUPYTER_AI_CI_MODEL.
    # "scripted-vision" is a name of a family that takes images at a loopback endpoint: sent pictures.
    (home / "config").mkdir()
    (home / "config" / "jupyter_server_config.json").write_text(
        '{"AICISettings": {"models": ["scripted-model", "scripted-large", "scripted-vision"]}}')
    tracker = home / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"autoStartDefaultKernel": true}')
    log = open(home / "lab.log", "w")  # noqa: SIM115 - the server writes to it until teardown
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.token=",
         "--ServerApp.password=", "--allow-root", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.root_dir={root}"],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("jupyter lab did not start:\n" + (home / "lab.log").read_text()) from None
            time.sleep(0.3)
    try:
        yield {"url": url, "root": root, "log": home / "lab.log"}
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


# Module scope: sync Playwright keeps an event loop running while it is open,
# which other tests' asyncio (pytest-jupyter) must not meet.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(60_000)  # generous: CI machines have 2 busy cores
    messages: list[str] = []
    pg.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
    pg.console_messages = messages
    yield pg
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}-end.png"))
    context.close()
