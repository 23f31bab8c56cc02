"""Helpers of the browser tests: notebooks on disk, a JupyterLab page, the kernel."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def make_notebook(lab: dict[str, Any], name: str, sources: list[str]) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab["root"] / name)
    return name


def open_notebook(page: Any, lab: dict[str, Any], name: str, notebook7: bool = False) -> None:
    """Open ``name`` in JupyterLab, or in Notebook 7's single-document page, and wait for its kernel."""
    if notebook7:
        page.goto(f"{lab['url']}/notebooks/{name}")
    else:
        page.goto(f"{lab['url']}/lab/tree/{name}?reset")
        page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=60_000)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    deadline = time.monotonic() + 60
    while not kernel_of(lab, name):
        assert time.monotonic() < deadline, "no kernel was started for the notebook"
        time.sleep(0.2)
    wait_idle(page)


def kernel_of(lab: dict[str, Any], name: str) -> dict[str, Any] | None:
    sessions = json.loads(urllib.request.urlopen(f"{lab['url']}/api/sessions", timeout=5).read())
    for s in sessions:
        if s["path"] == name and s.get("kernel"):
            return s["kernel"]  # type: ignore[no-any-return]
    return None


def wait_idle(page: Any, timeout: float = 60_000) -> None:
    # The toolbar's execution indicator, once the kernel has started and is idle.
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=timeout)


def run_first_cell(page: Any, timeout: float = 90) -> None:
    """Run the notebook's first cell as a user would (click, Shift+Enter), until the kernel took it
    (its prompt ``[*]`` or ``[1]``); the next cell is then selected.  Under load the key can come
    before the page's session is connected: JupyterLab then runs nothing and the prompt stays
    ``[ ]`` (CI, 6 Dec), so it is pressed again; nothing ran, so nothing runs twice."""
    cell = page.locator(".jp-Notebook .jp-Cell").first
    took = cell.locator(".jp-InputPrompt", has_text=re.compile(r"\[(\*|\d+)\]"))
    deadline = time.monotonic() + timeout
    while True:
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        try:
            took.wait_for(timeout=15_000)
            return
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise


def saved_notebook(lab: dict[str, Any], name: str, until: Callable[[dict[str, Any]], Any],
                   timeout: float = 30) -> dict[str, Any]:
    """The notebook as saved, once ``until(notebook)`` holds.

    Jupyter Server's "atomic" save writes the file in place (the old copy is its backup), so a
    read during a save can find it empty or cut short: that read is taken as not saved yet."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = json.loads((lab["root"] / name).read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            last = None
        if last is not None and until(last):
            return last  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"{name} not saved as expected: {json.dumps(last)[:2000]}"
        time.sleep(0.2)


def goto(page: Any, lab: dict[str, Any], name: str, frontend: str) -> None:
    """Open the notebook in JupyterLab (its layout reset) or in Notebook 7, until its cells show."""
    if frontend == "lab":
        page.goto(f"{lab['url']}/lab/tree/{name}?reset")
        page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=60_000)
    else:
        page.goto(f"{lab['url']}/notebooks/{name}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)


def open_panel(page: Any, frontend: str) -> None:
    """Show the chat panel: its side bar tab in JupyterLab, a menu in Notebook 7."""
    if frontend == "lab":
        page.locator(".jp-SideBar [data-id='jupyter-ai-ci-chat']").click()
    else:  # Notebook 7: View > Right Sidebar > Show AI code interpreter
        page.locator(".lm-MenuBar-itemLabel", has_text="View").click()
        page.locator(".lm-Menu-itemLabel", has_text="Right Sidebar").hover()
        page.locator(".lm-Menu-itemLabel", has_text="Show AI code interpreter").click()
    page.locator("#jupyter-ai-ci-chat .jp-aici-input").wait_for(state="visible")
