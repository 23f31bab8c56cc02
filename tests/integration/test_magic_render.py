"""What %%ask shows in a real kernel, and answers in words (the scripted model, over HTTP).

The cell's progress is one display, updated in place: HTML for frontends that render it
(sections per attempt, highlighted code) with a text/plain beside it that has no tag.
A question ends with an answer in words from the model, which was sent the output."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

from .kernel_helpers import CellRun, run_cell, start_kernel

SALES = ("import pandas as pd\n"
         "sales = pd.DataFrame({'region': ['north', 'south', 'north', 'east'], 'revenue': [12.0, 20.0, 12.5, 4.0]})")
QUESTION = "%%ask\nWhich region has the highest total revenue?"
CODE = "```python\ntotals = sales.groupby('region')['revenue'].sum()\nprint(totals.idxmax(), totals.max())\n```\n"
ANSWER = "North has the highest total revenue: 24.5."


def _kernel(server: ScriptedOpenAIServer, folder: Path) -> tuple[Any, Any]:
    km, kc = start_kernel({"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "",
                           "JUPYTER_AI_CI_MODEL": "scripted-model"}, cwd=str(folder))
    assert run_cell(kc, "%load_ext jupyter_ai_ci").status == "ok"
    assert run_cell(kc, SALES).status == "ok"
    return km, kc


@pytest.fixture
def kernel(model_server: ScriptedOpenAIServer, tmp_path: Path) -> Iterator[Any]:
    km, kc = _kernel(model_server, tmp_path)
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def usage(kc: Any) -> list[int]:
    run = run_cell(kc, "print(list(get_ipython().magics_manager.registry['AskMagics'].session.usage.total()))")
    return json.loads(run.stdout)  # type: ignore[no-any-return]


def test_a_question_ends_with_an_answer_from_the_output(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(CODE, Reply(ANSWER, require="north 24.5"))
    run = run_cell(kernel, QUESTION)
    assert run.status == "ok", run.reply
    assert model_server.misses == [] and len(model_server.requests) == 2
    # The answer request carried what the code printed.
    answer_request = model_server.requests[1]["messages"][-1]["content"]
    assert "north 24.5" in answer_request and "answer the request in words" in answer_request
    # One display, its final state: the status line, then the answer containing the printed result.
    assert len(run.displays) == 1
    text = run.shown
    assert re.search(r"✓ done in 1 attempt · \d+ tokens · \d+\.\d s", text), text
    assert ANSWER in text and "24.5" in text.split(ANSWER)[0] + ANSWER
    assert "<" not in next(iter(run.displays.values()))["text/plain"]  # no tag in the text/plain
    html = run.html
    assert '<div class="aici-ask-answer"><p>North has the highest total revenue: 24.5.</p>' in html
    assert "<details>" in html and "```" not in html  # sections, folded; the fences rendered
    assert "<span style=" in html  # the code is highlighted
    # Usage counts the extra call: 2 requests, and their tokens.
    requests, prompt, completion = usage(kernel)
    assert requests == 2 and prompt > 0 and completion > 0


def test_a_plot_request_makes_no_extra_call(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script("```python\nimport matplotlib.pyplot as plt\n"
                        "sales.groupby('region')['revenue'].sum().plot.bar()\nplt.title('revenue')\n```\n")
    run = run_cell(kernel, "%%ask\nplot total revenue per region as a bar chart")
    assert run.status == "ok", run.reply
    assert len(model_server.requests) == 1
    assert [m for m in run.of_type("display_data") if "image/png" in m["content"]["data"]]
    assert "aici-ask-answer" not in run.html
    assert usage(kernel)[0] == 1


def test_a_transform_that_prints_makes_no_extra_call_and_no_answer_turns_it_off(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script("```python\nsales['share'] = sales.revenue / sales.revenue.sum()\nsales.head()\n```\n",
                        "```python\nprint(sales.revenue.max())\n```\n")
    assert run_cell(kernel, "%%ask\nadd a column share with each row's share of revenue").status == "ok"
    run = run_cell(kernel, "%%ask --no-answer\nwhat is the largest revenue?")
    assert run.status == "ok" and "20.0" in run.stdout
    assert len(model_server.requests) == 2  # neither asked for words


def test_replay_shows_the_answer_and_calls_no_model(model_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    model_server.script(CODE, ANSWER)
    for attempt in ("live", "replayed"):
        km, kc = _kernel(model_server, tmp_path)  # a fresh kernel in the same folder: Run All tomorrow
        try:
            run = run_cell(kc, QUESTION)
            assert run.status == "ok", run.reply
            assert ANSWER in run.shown, (attempt, run.shown)
            if attempt == "replayed":
                assert "replayed, no model call" in run.shown
                assert usage(kc)[0] == 0
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    assert len(model_server.requests) == 2  # the first run's two; the replay made none


def test_a_cell_run_three_times_in_one_kernel_asks_the_model_once(
        model_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    model_server.script(CODE)
    km, kc = _kernel(model_server, tmp_path)
    try:
        runs = [run_cell(kc, "%%ask --no-answer\nWhich region has the highest total revenue?") for _ in range(3)]
        assert all(run.status == "ok" for run in runs)
        assert ["replayed, no model call" in run.shown for run in runs] == [False, True, True]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert len(model_server.requests) == 1


def test_a_record_without_an_answer_replays_without_calling_the_model(
        model_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    model_server.script(CODE)
    km, kc = _kernel(model_server, tmp_path)
    try:
        assert run_cell(kc, "%%ask --no-answer\nWhich region has the highest total revenue?").status == "ok"
        # The same request, now wanting an answer: its record has none, and replay asks no model.
        run = run_cell(kc, QUESTION)
        assert run.status == "ok" and "replayed, no model call" in run.shown
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert len(model_server.requests) == 1


def test_a_failed_attempt_shows_its_traceback_and_what_went_back(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script("```python\ntotals = sales.groupby('regoin')['revenue'].sum()\ntotals\n```\n",
                        Reply("```python\ntotals = sales.groupby('region')['revenue'].sum()\ntotals\n```\n",
                              require="KeyError"))
    run = run_cell(kernel, "%%ask\ntotal revenue by region")
    assert run.status == "ok", run.reply
    text = run.shown
    assert "✓ done in 2 attempts" in text and "✗ attempt 1 · KeyError: 'regoin'" in text
    html = run.html
    sections = html.split("<details>")
    failed = next(i for i, s in enumerate(sections) if s.startswith("<summary>✗ attempt 1"))
    assert "traceback · KeyError" in sections[failed + 1] and "Traceback" in sections[failed + 1]
    assert "sent back to the model" in html and "Traceback (library frames folded)" in html
    assert "aici-ask-answer" not in html  # a request to do something: the cell is the answer


def test_giving_up_names_the_last_error_once(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    # Found by a newcomer: the folded line and the error right under it said the same sentence.
    model_server.script("```python\nsales['zz']\n```", "```python\nsales['zz'] + 1\n```")
    run = run_cell(kernel, "%%ask --retries 1\nshow zz")
    content = run.reply["content"]
    assert run.status == "error" and content["ename"] == "RetriesExhausted" and "KeyError: 'zz'" in content["evalue"]
    head = run.shown.splitlines()[0]
    assert head.startswith("✗ gave up after 2 attempts · ") and "last error" not in head, head


def test_the_models_html_is_shown_as_text_never_run(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    # Data in the notebook can steer the model: its text must not become markup in a trusted output.
    model_server.script('<img src=x onerror="alert(1)"><script>alert(2)</script> '
                        "[click](javascript:alert(3)) ![seen](http://attacker.invalid/pixel.png)")
    run = run_cell(kernel, "%ask what is this?")
    assert run.status == "ok", run.reply
    html = run.html
    assert "<img" not in html and "<script" not in html and "javascript:" not in html
    assert "attacker.invalid" not in html
    assert "&lt;img src=x onerror=" in html  # shown, as text


def test_terminal_shell_prints_lines_and_no_html(ip: Any, model_server: ScriptedOpenAIServer,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell(SALES)
    model_server.script(CODE, ANSWER)
    assert ip.run_cell(QUESTION).success
    out = capsys.readouterr().out
    assert ": answering from the output ──" in out and ANSWER in out
    assert "✓ done in 1 attempt · " in out and "<details" not in out


def test_a_failed_model_call_never_shows_as_a_reply_without_code(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    # Found by hand: while the SDK retried a 500 (and after an interrupt), the status read
    # "reply without code" until the error came, as if the model had answered.
    model_server.script(*[Reply(status=500)] * 4)
    run = run_cell(kernel, "%%ask\nplot revenue")
    assert run.status == "error" and run.reply["content"]["ename"] == "ModelServerError"
    updates = [m["content"]["data"].get("text/plain", "") for m in run.messages
               if m["msg_type"] in ("display_data", "update_display_data")]
    assert updates and not [u for u in updates if "without code" in u], updates
    assert "without code" not in run.html  # nor folded under the final line


def test_a_failed_answer_in_words_keeps_the_cells_and_says_so(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(CODE, *[Reply(status=500)] * 4)
    run = run_cell(kernel, QUESTION)
    assert run.status == "ok", run.reply
    assert "✓ done in 1 attempt" in run.shown and "no answer in words: " in run.shown, run.shown
    assert run.next_inputs == [CODE.split("\n", 1)[1].rsplit("```", 1)[0].rstrip("\n")]  # the cell, inserted
    assert usage(kernel)[0] == 1  # one model call: the failed answer call is not counted
    # Run again: the code replays, and the answer it lacks is asked for (the one model call).
    model_server.requests.clear()
    model_server.script(Reply(ANSWER, require="north 24.5"))
    again = run_cell(kernel, QUESTION)
    assert again.status == "ok" and len(model_server.requests) == 1 and model_server.misses == []
    assert "replayed" in again.shown and ANSWER in again.shown, again.shown


def test_interrupting_the_answer_in_words_keeps_the_cells(model_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    # Found in review: Ctrl-C while a slow model wrote the answer threw the cells away, said
    # "an attempt that was running has been undone" (it had not: it had worked), and kept its variables.
    model_server.script(CODE, Reply(ANSWER, delay=30))
    km, kc = _kernel(model_server, tmp_path)
    try:
        done: list[CellRun] = []
        waiter = threading.Thread(target=lambda: done.append(run_cell(kc, QUESTION, timeout=60)))
        waiter.start()
        deadline = time.monotonic() + 30
        while len(model_server.requests) < 2:  # the answer is being written
            assert time.monotonic() < deadline
            time.sleep(0.05)
        km.interrupt_kernel()
        waiter.join(40)
        [run] = done
        assert run.status == "ok", run.reply
        assert "✓ done in 1 attempt" in run.shown and "no answer in words: stopped" in run.shown, run.shown
        assert run.next_inputs and "idxmax" in run.next_inputs[0]
        assert run_cell(kc, "print(totals.idxmax())").stdout == "north\n"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
