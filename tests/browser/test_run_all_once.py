"""Restart Kernel and Run All applies a generated in-place step once, in JupyterLab and
in Notebook 7 (docs/reproducibility.md): the generated cell runs, the %%ask cell does not."""

from __future__ import annotations

import re
from typing import Any

import pytest
from labutil import ARTIFACTS, make_notebook, open_notebook, wait_idle

from jupyter_ai_ci.testing import ScriptedOpenAIServer

DOUBLE = "Doubling in place:\n```python\nX[:] = [x * 2 for x in X]\n```\n"


def menu(page: Any, top: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{top}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{item}")).click()


def printed_x(page: Any) -> str:
    return str(page.locator(".jp-Notebook .jp-Cell").last.locator(".jp-OutputArea").inner_text()).strip()


@pytest.mark.parametrize("notebook7", [False, True], ids=["jupyterlab", "notebook7"])
def test_restart_and_run_all_doubles_once(page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer,
                                          notebook7: bool) -> None:
    model.script(DOUBLE)
    folder = "once-nb7" if notebook7 else "once-lab"
    (lab["root"] / folder).mkdir(exist_ok=True)  # its own replay records
    name = make_notebook(lab, f"{folder}/x.ipynb", ["%load_ext jupyter_ai_ci", "X = [1, 2, 3]",
                                                    "%%ask\ndouble every element of X in place", "print('X =', X)"])
    open_notebook(page, lab, name, notebook7=notebook7)
    cells = page.locator(".jp-Notebook .jp-Cell")

    menu(page, "Run", "Run All Cells")
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length == 5")
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell')[4].innerText.includes('X =')")
    wait_idle(page)
    assert printed_x(page) == "X = [2, 4, 6]"
    assert "X[:] = [x * 2 for x in X]" in cells.nth(3).locator(".jp-InputArea-editor").inner_text()

    # What users do next: Kernel > Restart Kernel and Run All Cells.
    menu(page, "Kernel", "Restart Kernel and Run All Cells")
    page.locator(".jp-Dialog .jp-mod-accept").click()
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell')[4]"
                           ".querySelector('.jp-InputPrompt').innerText.includes('[5]')", timeout=60_000)
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / f"run-all-once-{'notebook7' if notebook7 else 'lab'}.png"))
    assert printed_x(page) == "X = [2, 4, 6]"
    assert cells.count() == 5  # nothing inserted twice
    assert "replayed by the generated cell below" in cells.nth(2).locator(".jp-OutputArea").inner_text()
    assert len(model.requests) == 1 and model.misses == []
