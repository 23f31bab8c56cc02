"""The chat panel: a request becomes a cell that runs in the active notebook."""

from __future__ import annotations

from typing import Any

from labutil import ARTIFACTS, make_notebook, open_notebook, wait_idle

from jupyter_ai_ci.core import prompts
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer


def prepare(page: Any, lab: dict[str, Any], name: str) -> None:
    make_notebook(lab, name, ["x = 5"])
    open_notebook(page, lab, name)
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    page.wait_for_selector(".jp-Notebook .jp-Cell >> nth=0 >> .jp-InputPrompt:has-text('[1]')")
    wait_idle(page)
    page.locator(".jp-SideBar [data-id='jupyter-ai-ci-chat']").click()
    page.wait_for_selector("#jupyter-ai-ci-chat .jp-aici-input")


ENDS = "#jupyter-ai-ci-chat .jp-aici-done, #jupyter-ai-ci-chat .jp-aici-error"


def send(page: Any, text: str) -> None:
    """Type a request into the panel and send it, as a user does (Enter)."""
    box = page.locator("#jupyter-ai-ci-chat .jp-aici-input")
    box.click()
    box.type(text)
    page.keyboard.press("Enter")


def ask(page: Any, text: str) -> None:
    """Send a request from the panel and wait for the run to end."""
    ended = page.locator(ENDS).count()
    send(page, text)
    page.wait_for_function(f"document.querySelectorAll({ENDS!r}).length > {ended}", timeout=60_000)
    wait_idle(page)


def test_panel_request_inserts_and_runs_a_cell(page: Any, lab: dict[str, Any],
                                               model: ScriptedOpenAIServer) -> None:
    model.script(Reply("Squaring it:\n```python\nprint('x squared is', x ** 2)\n```"))
    prepare(page, lab, "panel.ipynb")
    panel = page.locator("#jupyter-ai-ci-chat")
    assert "scripted-model" in panel.locator(".jp-aici-header").inner_text()
    assert "panel.ipynb" in panel.locator(".jp-aici-header").inner_text()

    ask(page, "square x")
    page.screenshot(path=str(ARTIFACTS / "sidebar-request.png"))

    assert panel.locator(".jp-aici-error").count() == 0, panel.inner_text()
    assert "Done in 1 attempt" in panel.locator(".jp-aici-done").inner_text()
    assert "Squaring it" in panel.locator(".jp-aici-model").inner_text()
    assert "print('x squared is', x ** 2)" in panel.locator(".jp-aici-model .jp-aici-codeblock").inner_text()
    assert "cell ran" in panel.locator(".jp-aici-run-ok").inner_text()
    cells = page.locator(".jp-Notebook .jp-Cell")
    assert cells.count() == 2
    new = cells.nth(1)
    assert "x ** 2" in new.locator(".jp-InputArea-editor").inner_text()
    assert "x squared is 25" in new.locator(".jp-OutputArea").inner_text()
    assert "[2]" in new.locator(".jp-InputPrompt").inner_text()  # it really ran in the kernel
    # The model was told about the kernel's variables and the notebook's cells.
    (request,) = model.request_texts()
    assert "x: int = 5" in request and "square x" in request


def test_a_fix_answered_in_words_is_asked_again_and_headed_so(page: Any, lab: dict[str, Any],
                                                               model: ScriptedOpenAIServer) -> None:
    # Attempt 1 raises, the fix comes back in words, the next reply is the fix: the panel heads the
    # first reply after the failure "fix" and the next "asked again for code" (it said "fix" twice).
    model.script(
        Reply("```python\ny = x / 0\nprint('y is', y)\n```"),
        Reply("Dividing by zero is not allowed; divide by one instead.", require="ZeroDivisionError"),
        Reply("```python\ny = x / 1\nprint('y is', y)\n```", require=prompts.NEED_CODE),
    )
    prepare(page, lab, "again.ipynb")
    panel = page.locator("#jupyter-ai-ci-chat")
    ask(page, "divide x")
    page.screenshot(path=str(ARTIFACTS / "sidebar-asked-again.png"))
    assert model.misses == [] and len(model.requests) == 3
    assert panel.locator(".jp-aici-model .jp-aici-label").all_text_contents() == ["fix", "asked again for code"]
    # What asking again costs, as the magic and the terminal say it.
    assert "answered the fix request without code — asking it for code (1 try left)" in panel.inner_text()
    assert "Done in 2 attempts" in panel.locator(".jp-aici-done").inner_text()
    assert "y is 5.0" in page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea").inner_text()


def test_a_failing_cell_is_fixed_from_its_traceback(page: Any, lab: dict[str, Any],
                                                    model: ScriptedOpenAIServer) -> None:
    # The failed attempt changes x before it raises: the rollback must undo that.
    model.script(
        Reply("```python\nx = x + 100\ny = x / 0\nprint('y is', y)\n```"),
        Reply("Fixed:\n```python\ny = x / 1\nprint('y is', y)\n```", require="ZeroDivisionError"),
    )
    prepare(page, lab, "retry.ipynb")
    panel = page.locator("#jupyter-ai-ci-chat")
    ask(page, "divide x")
    page.screenshot(path=str(ARTIFACTS / "sidebar-retry.png"))

    assert model.misses == [], "the fix was asked for without the traceback"
    assert len(model.requests) == 2
    assert "y = x / 0" in model.request_texts()[1]
    assert "(line 2)" in panel.locator(".jp-aici-run").nth(0).inner_text()
    assert "Done in 2 attempts" in panel.locator(".jp-aici-done").inner_text()
    codes = panel.locator(".jp-aici-run")
    assert codes.count() == 2
    assert "ZeroDivisionError" in codes.nth(0).inner_text()
    assert "jp-aici-run-error" in (codes.nth(0).get_attribute("class") or "")
    assert "jp-aici-run-ok" in (codes.nth(1).get_attribute("class") or "")
    # The fix took the failed cell's place: x = 5, then the fixed cell.
    cells = page.locator(".jp-Notebook .jp-Cell")
    assert cells.count() == 2
    assert "x / 1" in cells.nth(1).locator(".jp-InputArea-editor").inner_text()
    assert "y is 5.0" in cells.nth(1).locator(".jp-OutputArea").inner_text()  # x was rolled back
    assert "Traceback" not in page.locator(".jp-Notebook").inner_text()
    # The failed attempt's cell is gone: no "show the cell" link that does nothing (found by hand).
    assert panel.locator(".jp-aici-cell-gone").all_inner_texts() == ["cell no longer in the notebook"]
    assert panel.locator(".jp-aici-cell-link").count() == 1


def test_a_model_error_is_a_sentence_and_the_panel_keeps_working(page: Any, lab: dict[str, Any],
                                                                 model: ScriptedOpenAIServer) -> None:
    model.script(Reply(status=401), Reply("```python\nprint('second try', x)\n```"))
    prepare(page, lab, "errors.ipynb")
    panel = page.locator("#jupyter-ai-ci-chat")
    ask(page, "anything")
    error = panel.locator(".jp-aici-error").inner_text()
    assert "rejected the API key (401): check OPENAI_API_KEY." in error
    assert page.locator(".jp-Notebook .jp-Cell").count() == 1  # nothing inserted

    ask(page, "again")
    page.screenshot(path=str(ARTIFACTS / "sidebar-error.png"))
    assert "Done in 1 attempt" in panel.locator(".jp-aici-done").inner_text()
    cells = page.locator(".jp-Notebook .jp-Cell")
    assert cells.count() == 2
    assert "second try 5" in cells.nth(1).locator(".jp-OutputArea").inner_text()


def test_stop_ends_a_run_and_interrupts_its_cell(page: Any, lab: dict[str, Any],
                                                 model: ScriptedOpenAIServer) -> None:
    model.script(Reply("```python\nimport time\nprint('sleeping')\ntime.sleep(600)\n```"))
    prepare(page, lab, "stop.ipynb")
    panel = page.locator("#jupyter-ai-ci-chat")
    send(page, "sleep a minute")
    cells = page.locator(".jp-Notebook .jp-Cell")
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length == 2")
    cells.nth(1).locator(".jp-OutputArea:has-text('sleeping')").wait_for()
    panel.locator(".jp-aici-stop").click()
    panel.locator(".jp-aici-done:has-text('Stopped.')").wait_for(timeout=20_000)
    wait_idle(page, timeout=20_000)  # the kernel was interrupted, well before the ten minutes
    # Found by hand: the hung cell stayed, and Run All hung on it again.  Undone, it goes.
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length == 1")
    page.screenshot(path=str(ARTIFACTS / "sidebar-stop.png"))
    assert len(model.requests) == 1  # no fix was asked for
    assert "attempt 1: stopped" in panel.locator(".jp-aici-run").inner_text()
    assert "time.sleep(600)" in panel.inner_text()  # the panel keeps its code
    assert panel.locator(".jp-aici-send").is_visible()  # ready for the next request


def test_risky_code_waits_for_approve_in_the_panel(page: Any, lab: dict[str, Any],
                                                    model: ScriptedOpenAIServer) -> None:
    model.script(Reply("```python\nimport os\nopen('scratch.txt', 'w').close()\nos.remove('scratch.txt')\n"
                       "print('removed', not os.path.exists('scratch.txt'))\n```"))
    prepare(page, lab, "approve.ipynb")
    panel = page.locator("#jupyter-ai-ci-chat")
    send(page, "make and delete a scratch file")
    approval = panel.locator(".jp-aici-approval")
    approval.wait_for()
    assert "deletes a file" in approval.inner_text() and "os.remove" in approval.inner_text()
    assert page.locator(".jp-Notebook .jp-Cell").count() == 1  # nothing ran yet
    page.screenshot(path=str(ARTIFACTS / "sidebar-approval.png"))
    approval.locator("button", has_text="Approve").click()
    panel.locator(".jp-aici-done").wait_for()
    wait_idle(page)
    cells = page.locator(".jp-Notebook .jp-Cell")
    assert cells.count() == 2
    assert "removed True" in cells.nth(1).locator(".jp-OutputArea").inner_text()
    assert "approved" in approval.inner_text()


def test_a_rejected_approval_ends_in_one_warning_line(page: Any, lab: dict[str, Any],
                                                       model: ScriptedOpenAIServer) -> None:
    model.script(Reply("```python\nimport os\nos.remove('nothing-here.txt')\n```"))
    prepare(page, lab, "reject.ipynb")
    panel = page.locator("#jupyter-ai-ci-chat")
    send(page, "delete a file")
    panel.locator(".jp-aici-approval button", has_text="Reject").click()
    done = panel.locator(".jp-aici-done")
    done.wait_for()
    # Found by hand: said twice, the second time in the colour of success.
    assert "rejected in the panel" in done.inner_text()
    assert panel.inner_text().count("rejected in the panel") == 1
    assert "jp-aici-status-refused" in (done.get_attribute("class") or "")
    colour = ("(el, name) => { const d = document.createElement('div'); d.style.color = `var(${name})`;"
              " el.appendChild(d); const c = getComputedStyle(d).color; d.remove(); return c; }")
    success, warn = (panel.evaluate(colour, name) for name in ("--jp-success-color1", "--jp-warn-color1"))
    assert done.evaluate("el => getComputedStyle(el).color") == warn != success
    assert page.locator(".jp-Notebook .jp-Cell").count() == 1  # nothing ran
    # Found by hand: the next run's Approve did nothing (its approval was "a1" too, and the
    # panel answered the chat's first "a1", decided already); the run waited until Stop.
    model.script(Reply("```python\nimport os\nopen('made.txt', 'w').close()\nos.remove('made.txt')\n"
                       "print('second ran')\n```"))
    send(page, "make and delete a file")
    panel.locator(".jp-aici-approval").nth(1).locator("button", has_text="Approve").click()
    panel.locator(".jp-aici-done").nth(1).wait_for()
    wait_idle(page)
    assert "approved" in panel.locator(".jp-aici-approval").nth(1).inner_text()
    assert "second ran" in page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea").inner_text()
    # Stopped while it waits: its buttons go (they said "approved" and ran nothing; found by hand).
    model.script(Reply("```python\nimport os\nos.remove('kept.txt')\n```"))
    send(page, "delete kept.txt")
    waiting = panel.locator(".jp-aici-approval").nth(2)
    waiting.locator("button", has_text="Approve").wait_for()
    panel.locator(".jp-aici-stop").click()
    panel.locator(".jp-aici-done:has-text('Stopped.')").wait_for(timeout=20_000)
    assert waiting.locator("button.jp-mod-accept, button.jp-mod-reject").count() == 0  # Copy stays
    assert "not answered: the run ended first" in waiting.inner_text()


def test_a_kernel_killed_mid_attempt_is_one_line_and_nothing_is_kept(page: Any, lab: dict[str, Any],
                                                                    model: ScriptedOpenAIServer) -> None:
    # Issue #30, faults: the panel's attempt kills its own kernel (approved: os.kill is flagged).
    model.script(Reply("```python\nimport os, signal\nprint('going')\nos.kill(os.getpid(), signal.SIGKILL)\n```"),
                 Reply("```python\nprint('x is back at', x)\n```"))
    prepare(page, lab, "killed.ipynb")
    saved = (lab["root"] / "killed.ipynb").read_bytes()
    store = lab["root"] / ".jupyter-ai-ci-replay"
    records = sorted(p.name for p in store.glob("*.json")) if store.exists() else []
    panel = page.locator("#jupyter-ai-ci-chat")
    send(page, "stop the kernel")
    panel.locator(".jp-aici-approval button", has_text="Approve").click()
    panel.locator(".jp-aici-error").wait_for(timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "sidebar-kernel-killed.png"))
    error = panel.locator(".jp-aici-error").inner_text()
    assert "kernel" in error and "\n" not in error.strip(), error  # one line, about the kernel
    assert len(model.requests) == 1  # no fix was asked of a dead kernel
    # The cell that killed the kernel leaves with its attempt (Run All would run it again).
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length == 1")
    assert (lab["root"] / "killed.ipynb").read_bytes() == saved  # the file on disk, untouched
    assert (sorted(p.name for p in store.glob("*.json")) if store.exists() else []) == records
    # The kernel restarts (JupyterLab's own dialog says so); the panel works again.
    dialog = page.locator(".jp-Dialog button", has_text="Ok")
    if dialog.count():
        dialog.first.click()
    wait_idle(page, timeout=60_000)
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")  # x again, in the new kernel
    wait_idle(page, timeout=60_000)
    ask(page, "print x")
    assert "x is back at 5" in page.locator(".jp-Notebook").inner_text()
