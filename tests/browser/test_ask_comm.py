"""``%%ask`` in JupyterLab inserts real cells, with outputs, through the comm."""

from __future__ import annotations

import json
import re
from typing import Any

from labutil import ARTIFACTS, make_notebook, open_notebook, wait_idle

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

TWO_BLOCKS = """Two steps:
```python
a = 6
print("a is", a)
```
```python
b = a * 7
b
```
"""


def run_all(page: Any) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def test_ask_inserts_several_cells_with_outputs(page: Any, lab: dict[str, Any],
                                                 model: ScriptedOpenAIServer) -> None:
    model.script(Reply(TWO_BLOCKS))
    name = make_notebook(lab, "ask_comm.ipynb", ["%load_ext jupyter_ai_ci",
                                                 "%%ask\nset a to 6 and b to a times 7"])
    open_notebook(page, lab, name)
    # Run All: the extension's announcement must already be in the kernel,
    # since a reply to anything would queue behind these cells.
    run_all(page)
    cells = page.locator(".jp-Notebook .jp-Cell")
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length >= 4")
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "ask-comm.png"))

    assert cells.count() == 4
    third, fourth = cells.nth(2), cells.nth(3)
    assert 'a = 6' in third.locator(".jp-InputArea-editor").inner_text()
    assert "a is 6" in third.locator(".jp-OutputArea").inner_text()
    assert "b = a * 7" in fourth.locator(".jp-InputArea-editor").inner_text()
    assert "42" in fourth.locator(".jp-OutputArea").inner_text()
    assert "2 new cells below" in cells.nth(1).locator(".jp-OutputArea").inner_text()
    assert len(model.requests) == 1

    # Saved to disk: the new cells name the %%ask cell they came from.
    page.keyboard.press("Control+s")
    page.wait_for_timeout(1000)
    nb = json.loads((lab["root"] / name).read_text())
    ask_id = nb["cells"][1]["id"]
    meta = nb["cells"][2]["metadata"]["jupyter_ai_ci"]
    assert meta["ask_cell_id"] == ask_id
    assert meta["model"] == "scripted-model" and meta["attempts"] == 1
    assert nb["cells"][3]["metadata"]["jupyter_ai_ci"]["ask_cell_id"] == ask_id
