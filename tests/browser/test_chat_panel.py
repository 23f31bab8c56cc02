"""The chat panel as people expect it (#17): a model picker fed by the server's
allow-list, rendered Markdown with wrapped, copyable code, Stop (and Escape) during
a hung cell, the conversation after a page reload, a figure's thumbnail that links
to its cell."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import nbformat
from labutil import ARTIFACTS, make_notebook, open_notebook, saved_notebook, wait_idle
from test_sidebar import ask, prepare, send

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

PANEL = "#jupyter-ai-ci-chat"
OFFERED = ["scripted-model", "scripted-large", "scripted-vision"]  # conftest's AICISettings.models
DOCS_IMG = ARTIFACTS.parent / "docs" / "img"


def picture(page: Any, name: str) -> None:
    """A screenshot for the run's artifacts; with JUPYTER_AI_CI_UPDATE_PICTURES=1 also the docs'."""
    page.screenshot(path=str(ARTIFACTS / name))
    if os.environ.get("JUPYTER_AI_CI_UPDATE_PICTURES"):
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOCS_IMG / name))


def test_the_picker_lists_exactly_the_offered_models_and_a_request_uses_the_pick(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    model.script(Reply("Hello from the large one."))
    prepare(page, lab, "picker.ipynb")
    picker = page.locator(f"{PANEL} .jp-aici-picker select")  # HTMLSelect: the class is on its wrapper
    options = picker.locator("option")
    assert [options.nth(i).get_attribute("value") for i in range(options.count())] == OFFERED
    assert picker.input_value() == "scripted-model"  # the server's default
    picker.select_option("scripted-large")
    ask(page, "say hello")
    assert [r["model"] for r in model.requests] == ["scripted-large"]
    assert picker.input_value() == "scripted-large"
    # A long name is cut off in the select: its title has it whole (the label, then the endpoint).
    assert picker.get_attribute("title").startswith(
        options.nth(OFFERED.index("scripted-large")).inner_text() + " — endpoint: 127.0.0.1")


LONG = "totals = " + " + ".join(f"len('region_{i}')" for i in range(30))
MARKDOWN = f"""The **total** over all regions, in two steps:

1. add the columns
2. print the sum

```python
{LONG}
print('total', totals)
```

Then `totals` holds it.
"""


def test_markdown_is_rendered_and_code_wraps_with_a_copy_button(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    model.script(Reply(MARKDOWN, tokens=(1500, 120)))
    prepare(page, lab, "markdown.ipynb")
    panel = page.locator(PANEL)
    ask(page, "sum every region")
    message = panel.locator(".jp-aici-model")
    message.locator("p code", has_text="totals").wait_for()  # the last streamed render
    assert "```" not in panel.evaluate("el => el.textContent")
    assert message.locator("strong", has_text="total").count() == 1
    assert message.locator("ol li").count() == 2
    assert message.locator("p code", has_text="totals").count() == 1
    block = message.locator(".jp-aici-codeblock")
    assert block.count() == 1
    assert "region_29" in block.inner_text()
    # Wrapped, not scrolled: no code block is wider than its box.
    width = block.evaluate("el => [el.scrollWidth, el.clientWidth, el.getBoundingClientRect().width]")
    assert width[0] <= width[1], width
    assert block.evaluate("el => getComputedStyle(el).whiteSpace") == "pre-wrap"
    copy = message.locator(".jp-aici-copy")
    assert copy.count() == 1
    copy.click()
    assert copy.inner_text() == "Copied"
    # Usage of this message, beside the session's.
    # The total is said once, in the status line; the line under it splits it.
    done = panel.locator(".jp-aici-done")
    assert done.inner_text().count("tokens") == 1 and "1.6k tokens" in done.inner_text()
    assert panel.locator(".jp-aici-done .jp-aici-msg-usage").inner_text() == "1.5k in · 120 out"
    picture(page, "panel-lab.png")


def test_escape_stops_a_hung_cell_and_the_kernel_survives(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    model.script(Reply("```python\nimport time\nmade = 1\nx = 99\nprint('sleeping')\ntime.sleep(600)\n```"),
                 Reply("```python\nprint('still here, x =', x, 'made' in dir())\n```"))
    prepare(page, lab, "hung.ipynb")
    panel = page.locator(PANEL)
    send(page, "sleep ten minutes")
    box = panel.locator(".jp-aici-input")
    cells = page.locator(".jp-Notebook .jp-Cell")
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length == 2")
    cells.nth(1).locator(".jp-OutputArea:has-text('sleeping')").wait_for()
    started = time.monotonic()
    box.press("Escape")
    panel.locator(".jp-aici-done:has-text('Stopped.')").wait_for(timeout=20_000)
    wait_idle(page, timeout=20_000)
    assert time.monotonic() - started < 20
    # The stopped attempt was undone, and its cell taken out: Run All would hang on it again.
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length == 1")
    assert len(model.requests) == 1  # no fix was asked for the interrupted cell
    # The kernel survived, with its state: the next request runs in it.
    ask(page, "print x after the interrupted sleep")
    assert "Done in 1 attempt" in panel.locator(".jp-aici-done").last.inner_text()
    # Undone in the kernel too: x as it was, and nothing the stopped cell made (found by hand: both stayed).
    assert "still here, x = 5 False" in cells.nth(1).locator(".jp-OutputArea").inner_text()


def test_stop_cancels_a_slow_model_call(page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    model.script(Reply("```python\nprint('too late')\n```", delay=30), Reply("```python\nprint('next', x)\n```"))
    prepare(page, lab, "slow.ipynb")
    panel = page.locator(PANEL)
    send(page, "take your time")
    panel.locator(".jp-aici-stop").wait_for()
    deadline = time.monotonic() + 20
    while not model.requests:  # the request reached the model, which is thinking
        assert time.monotonic() < deadline
        time.sleep(0.1)
    panel.locator(".jp-aici-stop").click()
    panel.locator(".jp-aici-done:has-text('Stopped.')").wait_for(timeout=10_000)
    assert page.locator(".jp-Notebook .jp-Cell").count() == 1  # the late answer never ran
    ask(page, "try once more after the stop")
    assert "next 5" in page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea").inner_text()


def test_the_conversation_survives_a_reload(page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    model.script(Reply("Here are the prices:\n```python\nprices = [3, 4]\nprint(prices)\n```", tokens=(400, 30)),
                 Reply("The total is **7**.", tokens=(500, 10)))
    prepare(page, lab, "reload.ipynb")
    ask(page, "make a list of prices")
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputPrompt").click()
    page.keyboard.press("Control+s")
    page.wait_for_timeout(500)

    page.reload()
    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=60_000)
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    # No wait for the kernel: the person asks as soon as the page shows. Just reloaded, the page's
    # session has no kernel for a moment (on the loaded fresh-clone CI, after the indicator said
    # idle), and the panel refused the request then ("reload.ipynb has no kernel; start one first");
    # it now waits for the kernel, within bounds.
    page.locator(".jp-SideBar [data-id='jupyter-ai-ci-chat']").click()
    panel = page.locator(PANEL)
    panel.locator(".jp-aici-user", has_text="make a list of prices").wait_for()
    panel.locator(".jp-aici-model", has_text="Here are the prices").wait_for()  # markdown renders a moment later
    assert "prices = [3, 4]" in panel.locator(".jp-aici-model .jp-aici-codeblock").inner_text()
    assert "Done in 1 attempt" in panel.locator(".jp-aici-done").inner_text()
    assert panel.locator(".jp-aici-usage").inner_text() == "session: 1 model call · 430 tokens"

    ask(page, "now add them up")  # continues the conversation
    # The reply first: on a loaded machine the request could still be on its way when ask() returned.
    panel.locator(".jp-aici-model strong", has_text="7").wait_for()
    follow_up = model.requests[1]["messages"]
    assert [m["role"] for m in follow_up] == ["system", "user", "assistant", "user"]
    assert "prices = [3, 4]" in follow_up[2]["content"]
    assert panel.locator(".jp-aici-usage").inner_text() == "session: 2 model calls · 940 tokens"


# A 48x32 PNG made without matplotlib (the test environment may not have it).
FIGURE = """```python
import struct, zlib
from IPython.display import Image, display
w, h = 48, 32
rows = b''.join(b'\\x00' + bytes([200, 60 + 4 * y, 40]) * w for y in range(h))
def chunk(kind, data):
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) \\
    + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b'')
display(Image(data=png))
```"""


def test_a_figure_shows_once_in_its_cell_and_as_a_thumbnail_that_links_to_it(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    model.script(Reply(FIGURE))
    prepare(page, lab, "figure.ipynb")
    panel = page.locator(PANEL)
    ask(page, "draw a picture")
    cells = page.locator(".jp-Notebook .jp-Cell")
    assert cells.count() == 2
    assert page.locator(".jp-Notebook .jp-OutputArea img").count() == 1  # once, in its cell
    thumb = panel.locator(".jp-aici-figure img")
    assert thumb.count() == 1
    assert thumb.get_attribute("src").startswith("data:image/png;base64,iVBOR")
    cells.first.locator(".jp-InputPrompt").click()  # select another cell first
    assert "jp-mod-active" not in (cells.nth(1).get_attribute("class") or "")
    panel.locator(".jp-aici-figure").click()
    page.wait_for_function(
        "document.querySelectorAll('.jp-Notebook .jp-Cell')[1].classList.contains('jp-mod-active')")


def test_comm_metadata_from_the_kernel_is_not_applied(page: Any, lab: dict[str, Any]) -> None:
    """#15 item 7: kernel code opens our comm claiming ``trusted: true`` with a script and
    HTML that runs script: the cell is inserted, untrusted, and nothing runs."""
    payload = {
        "type": "insert", "protocol": 1, "ask_cell_id": None,
        "cells": [{
            "source": "print('inserted')", "trusted": True,
            "metadata": {"trusted": True, "editable": False, "jupyter_ai_ci": {"request": "planted"},
                         "tags": ["hostile"]},
            "outputs": [{"output_type": "display_data", "metadata": {}, "data": {
                "application/javascript": "window.__aiciPwned = 'javascript'",
                "text/html": "<b>bold</b><img src='data:,' onerror=\"window.__aiciPwned = 'html'\">",
                "text/plain": "plain"}}],
        }],
    }
    code = ("import comm, json\n"
            f"comm.create_comm(target_name='jupyter_ai_ci', data=json.loads({json.dumps(json.dumps(payload))}))")
    name = make_notebook(lab, "hostile.ipynb", [code])
    open_notebook(page, lab, name)
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length == 2")
    wait_idle(page)
    inserted = page.locator(".jp-Notebook .jp-Cell").nth(1)
    inserted.locator(".jp-OutputArea b", has_text="bold").wait_for()  # the HTML, sanitized
    page.wait_for_timeout(1000)
    assert page.evaluate("window.__aiciPwned") is None
    assert inserted.locator(".jp-OutputArea img").evaluate("el => el.getAttribute('onerror')") is None
    page.screenshot(path=str(ARTIFACTS / "comm-hostile.png"))
    # Saved: only our own metadata key, and the server does not count the cell as trusted.
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputPrompt").click()
    page.keyboard.press("Control+s")
    cell = saved_notebook(lab, name, lambda nb: len(nb["cells"]) >= 2)["cells"][1]
    assert set(cell["metadata"]) <= {"jupyter_ai_ci", "trusted"}, cell["metadata"]
    assert cell["metadata"].get("trusted") in (None, False)
    assert "application/javascript" not in json.dumps(cell["outputs"])


def test_a_cell_that_printed_megabytes_does_not_block_the_next_request(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    # Found by hand: the panel sent every cell's whole output, and past 2 MB every later request
    # of that notebook was refused ("The message is 3.3 MB; the limit for a request is 64 kB").
    model.script(Reply("Hello."))
    nb = nbformat.v4.new_notebook()
    printed = "".join(f"row {i} {'x' * 20}\n" for i in range(100_000))  # 3.3 MB, saved with the notebook
    nb.cells = [nbformat.v4.new_code_cell("for i in range(100_000): print('row', i, 'x' * 20)", execution_count=1,
                                          outputs=[nbformat.v4.new_output("stream", name="stdout", text=printed)])]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab["root"] / "big.ipynb")
    open_notebook(page, lab, "big.ipynb")
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputArea-editor").click()
    page.locator(".jp-SideBar [data-id='jupyter-ai-ci-chat']").click()
    panel = page.locator(PANEL)
    long = "say hello " + "and more " * 300
    box = panel.locator(".jp-aici-input")
    box.fill(long)  # pasted, not typed
    box.press("Enter")
    panel.locator(".jp-aici-done, .jp-aici-error").first.wait_for(timeout=60_000)
    assert panel.locator(".jp-aici-error").count() == 0, panel.inner_text()[:500]
    # The reply's markdown is rendered after the line that ends the run, a moment later when busy.
    panel.locator(".jp-aici-model", has_text="Hello.").last.wait_for()
    # "Answered without code" is said once, by the last line (an italic notice said it too).
    assert panel.locator(".jp-aici-notice").count() == 0, panel.locator(".jp-aici-notice").all_inner_texts()
    assert "Answered without code" in panel.locator(".jp-aici-done").last.inner_text()
    sent = model.request_texts()[-1]
    assert "row 0 xxx" in sent and "row 99999 xxx" in sent and "characters cut" in sent  # head and tail
    # A long request is shown shortened in the chat (sent whole: the model got all of it).
    shown = panel.locator(".jp-aici-user").last.inner_text()
    head = shown.split(" … and ")[0]
    assert long.startswith(head) and 540 < len(head) <= 600 and long[len(head)] == " "  # whole words
    assert shown.endswith(f"… and {len(long.strip()) - len(head)} more characters"), shown[-80:]
    assert long.strip() in sent
    page.screenshot(path=str(ARTIFACTS / "panel-big-output.png"))


def test_a_failed_answer_in_words_leaves_the_cell_and_no_empty_reply(
        page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    # Found in review: after a failed answer call, its empty reply stayed in the chat as "…" for good.
    model.script(Reply("```python\nprint('x is', x)\n```"), *[Reply(status=500)] * 4)
    prepare(page, lab, "unanswered.ipynb")
    panel = page.locator(PANEL)
    ask(page, "what is x?")
    assert "Done in 1 attempt" in panel.locator(".jp-aici-done").last.inner_text()
    assert "no answer in words: " in panel.locator(".jp-aici-notice").last.inner_text()
    assert "x is 5" in page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea").inner_text()
    replies = [panel.locator(".jp-aici-model").nth(i).inner_text().strip()
               for i in range(panel.locator(".jp-aici-model").count())]
    assert replies and all(r and r != "…" for r in replies), replies
    picture(page, "panel-unanswered.png")
