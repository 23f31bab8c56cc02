"""The chat panel after a run: the cells get the run's provenance, the panel shows
the session's usage, and a replayed request can be asked of the model again."""

from __future__ import annotations

from typing import Any

from labutil import ARTIFACTS, saved_notebook, wait_idle
from test_sidebar import ask, prepare

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer


def save(page: Any) -> None:
    """Save the notebook as a user would: focus it, Ctrl+S."""
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputPrompt").click()
    page.keyboard.press("Control+s")


def saved_cells(lab: dict[str, Any], name: str, count: int, timeout: float = 30) -> list[dict[str, Any]]:
    """The notebook's cells on disk, once it has ``count`` cells whose provenance is complete."""
    def complete(nb: dict[str, Any]) -> bool:
        done = [c for c in nb["cells"] if "attempts" in c.get("metadata", {}).get("jupyter_ai_ci", {})]
        return len(nb["cells"]) == count and len(done) == count - 1
    return saved_notebook(lab, name, complete, timeout)["cells"]  # type: ignore[no-any-return]


def test_provenance_usage_and_regenerate(page: Any, lab: dict[str, Any], model: ScriptedOpenAIServer) -> None:
    model.script(
        Reply("Squaring it:\n```python\nprint('x squared is', x ** 2)\n```", tokens=(1200, 34)),
        Reply("Again, fresh:\n```python\nprint('x squared, fresh:', x * x)\n```", tokens=(800, 66)),
    )
    # Its own folder: replay records are kept per folder, and other tests ask "square x" too.
    (lab["root"] / "provenance").mkdir(exist_ok=True)
    name = "provenance/provenance.ipynb"
    prepare(page, lab, name)
    panel = page.locator("#jupyter-ai-ci-chat")

    ask(page, "square x")
    assert panel.locator(".jp-aici-error").count() == 0, panel.inner_text()
    usage = panel.locator(".jp-aici-usage")
    assert usage.inner_text() == "session: 1 model call · 1.2k tokens"
    assert panel.locator(".jp-aici-replayed").count() == 0
    page.screenshot(path=str(ARTIFACTS / "sidebar-provenance.png"))

    save(page)
    cells = saved_cells(lab, name, 2)
    meta = cells[1]["metadata"]["jupyter_ai_ci"]
    assert "x ** 2" in "".join(cells[1]["source"])
    assert meta["attempts"] == 1
    assert meta["tokens"] == {"prompt": 1200, "completion": 34}
    assert meta["requests"] == 1
    assert meta["request"] == "square x" and meta["source"] == "sidebar"
    assert meta["model"] == "scripted-model" and meta["generated_at"].endswith("Z")
    assert "jupyter_ai_ci" not in cells[0]["metadata"]  # the user's own cell is untouched

    # The same request again is answered from the replay record beside the notebook.
    ask(page, "square x")
    assert len(model.requests) == 1, "a replayed request went to the model"
    done = panel.locator(".jp-aici-done").last
    assert "replayed (no model request)" in done.inner_text()
    # The recorded reply is rendered like the model's (found by hand: raw ``` fences in italics).
    assert panel.locator(".jp-aici-model").count() == 2  # the first reply, then the recorded one
    replayed = panel.locator(".jp-aici-model").last
    assert replayed.locator(".jp-aici-codeblock", has_text="x ** 2").count() == 1
    assert "```" not in panel.inner_text()
    assert usage.inner_text() == "session: 1 model call · 1.2k tokens"
    page.screenshot(path=str(ARTIFACTS / "sidebar-replayed.png"))

    # Regenerate asks the model, not the record.
    ended = page.locator("#jupyter-ai-ci-chat .jp-aici-done").count()
    done.locator("button.jp-aici-regenerate").click()
    page.wait_for_function(
        f"document.querySelectorAll('#jupyter-ai-ci-chat .jp-aici-done').length > {ended}", timeout=60_000)
    wait_idle(page)
    assert panel.locator(".jp-aici-error").count() == 0, panel.inner_text()
    assert len(model.requests) == 2
    assert "replayed" not in panel.locator(".jp-aici-done").last.inner_text()
    assert panel.locator("button.jp-aici-regenerate").count() == 0
    assert usage.inner_text() == "session: 2 model calls · 2.1k tokens"
    assert panel.locator(".jp-aici-user").last.inner_text() == "square x"

    save(page)
    # The fresh cell took the replayed one's place (found by hand: Regenerate added a third copy).
    cells = saved_cells(lab, name, 3)
    assert sorted(("x ** 2" in "".join(c["source"]), "x * x" in "".join(c["source"])) for c in cells) == [
        (False, False), (False, True), (True, False)]
    (fresh,) = [c for c in cells if "x * x" in "".join(c["source"])]
    assert fresh["metadata"]["jupyter_ai_ci"]["tokens"] == {"prompt": 800, "completion": 66}
    assert fresh["metadata"]["jupyter_ai_ci"]["requests"] == 1
    page.screenshot(path=str(ARTIFACTS / "sidebar-regenerated.png"))
