"""Approval through stdin, verified in a real JupyterLab in headless Chromium.

While ``%%ask`` runs, the kernel processes no widget events; ``input()`` goes
over the stdin channel instead, and JupyterLab shows its input box under the
cell.  This test types the answer there, as a person would.  Self-contained
(no labextension needed): its own lab server and browser, module-scoped.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer

CHROMIUM = "/usr/bin/chromium"
playwright_api = pytest.importorskip("playwright.sync_api")
if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing", allow_module_level=True)
pytestmark = pytest.mark.timeout(240)
RISKY = "Here.\n```python\nimport subprocess\nanswer = subprocess.getoutput('echo from-a-process')\n```"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def lab(model: ScriptedOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root, home = tmp_path_factory.mktemp("lab"), tmp_path_factory.mktemp("home")
    port = _free_port()
    env = {**os.environ, "OPENAI_BASE_URL": model.base_url, "JUPYTER_AI_CI_MODEL": "scripted-model",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces")}
    settings = home / "settings" / "@jupyterlab"
    (settings / "apputils-extension").mkdir(parents=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    log = open(home / "lab.log", "w")  # noqa: SIM115 -- written by the server until teardown
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.token=",
         "--ServerApp.password=", "--allow-root", "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={root}"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError((home / "lab.log").read_text()) from None
            time.sleep(0.3)
    try:
        yield {"url": url, "root": root}
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def page(lab: dict[str, Any]) -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        pg = browser.new_page(viewport={"width": 1400, "height": 900})
        pg.set_default_timeout(60_000)
        yield pg
        browser.close()


def run_ask(page: Any, lab: dict[str, Any], name: str, answer: str) -> str:
    """Open a notebook whose second cell is a %%ask, run both, answer the prompt."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext jupyter_ai_ci\n%config AskMagics.replay = False"),
                nbformat.v4.new_code_cell("%%ask\nask a process for a word")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab["root"] / name)
    page.goto(f"{lab['url']}/lab/tree/{name}?reset")
    page.wait_for_selector("#jupyterlab-splash", state="detached")
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    deadline = time.monotonic() + 60
    while not any(s["path"] == name and s.get("kernel") for s in
                  json.loads(urllib.request.urlopen(f"{lab['url']}/api/sessions", timeout=5).read())):
        assert time.monotonic() < deadline, "no kernel was started for the notebook"
        time.sleep(0.2)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Shift+Enter")
    try:
        box = page.wait_for_selector(".jp-Stdin-input")  # JupyterLab's input() box
    except playwright_api.TimeoutError:
        page.screenshot(path=str(lab["root"] / f"{name}.png"))
        raise
    box.fill(answer)
    box.press("Enter")
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
    page.wait_for_function("document.querySelectorAll('.jp-Cell')[1].innerText.includes('approval')")
    time.sleep(0.5)
    return str(page.locator(".jp-Notebook .jp-Cell").nth(1).inner_text())


def test_approve_in_jupyterlab(page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    model.script(RISKY)
    text = run_ask(page, lab, "approve.ipynb", "y")
    assert "subprocess.getoutput: starts a process" in text and "Run this code? [y/N]" in text
    assert "done in 1 attempt" in text, text


def test_reject_in_jupyterlab(page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    model.script(RISKY)
    text = run_ask(page, lab, "reject.ipynb", "n")
    assert "PolicyRefused" in text and "rejected by the user" in text, text
    assert "done in" not in text
