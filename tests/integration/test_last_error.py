"""The user's last error in the context: a real IPython shell and a real kernel
(jupyter_client); the model is the scripted HTTP server."""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest

from jupyter_ai_ci.context.kernel_state import gather_context
from jupyter_ai_ci.context.last_error import TRACEBACK_CHARS
from jupyter_ai_ci.testing import ScriptedOpenAIServer
from jupyter_ai_ci.tokens import count_tokens

from .kernel_helpers import run_cell, start_kernel

FAILING = "total = sales['Revenue'].sum()"


def run(ip: Any, *cells: str) -> None:
    for cell in cells:
        ip.run_cell(cell, store_history=True)


def sent_context(server: ScriptedOpenAIServer) -> str:
    user = [m for m in server.requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
    return str(user).partition("## Request")[0]


def error_section(text: str) -> str:
    return "### The last error" + text.split("### The last error")[1].split("\n### ")[0].split("\n## Request")[0]


def test_fix_the_cell_above_gets_the_traceback_and_the_failing_line(
        ip: Any, model_server: ScriptedOpenAIServer) -> None:
    run(ip, "import pandas as pd", "sales = pd.DataFrame({'region': ['n', 's'], 'revenue': [1.0, 2.0]})",
        f"x = 1\n{FAILING}")
    model_server.script("```python\ntotal = sales['revenue'].sum()\n```")
    run(ip, "%%ask\nfix the cell above")
    context = sent_context(model_server)
    section = error_section(context)
    assert section.startswith("### The last error (In [3])\nKeyError: 'Revenue'\n"
                              f"Failing line (In [3], line 2):\n    {FAILING}\n```\nTraceback (most recent call last):")
    assert f"  Cell In [3], line 2, in <module>\n    {FAILING}\n" in section
    assert 'File "pandas/core/frame.py"' in section  # library paths without the machine's prefix
    assert section.rstrip().endswith("KeyError: 'Revenue'\n```")
    assert "\x1b[" not in section
    # Last, right after the variables the request is about: next to the request.
    assert context.index("### Recent cells") < context.index("### Variables the request is about") \
        < context.index("### The last error")
    assert ip.user_ns["total"] == 3.0
    # Told once unprompted: the next request, after the %%ask that saw it, goes without.
    model_server.script("```python\nmean = sales['revenue'].mean()\n```")
    run(ip, "%%ask\nnow the mean revenue")
    assert "The last error" not in sent_context(model_server)
    model_server.script("ok")
    run(ip, "%%ask\nwhy did it fail?")
    assert "### The last error (In [3])" in sent_context(model_server)


def test_an_error_in_a_function_from_an_earlier_cell(ip: Any) -> None:
    run(ip, "def ratio(a, b):\n    return a / b", "r = ratio(1, 0)")
    section = error_section(gather_context(ip, "why?", [], 3000).text)
    assert section.startswith("### The last error (In [2])\nZeroDivisionError: division by zero\n"
                              "Failing line (In [1], line 2):\n    return a / b\n")
    assert "  Cell In [2], line 1, in <module>\n    r = ratio(1, 0)\n  Cell In [1], line 2, in ratio" in section


def test_recent_errors_are_told_stale_ones_only_when_asked(ip: Any) -> None:
    run(ip, "import pandas as pd", "sales = pd.DataFrame({'revenue': [1.0]})", FAILING)
    # Recent (the cell just before): told whatever the request.
    assert "### The last error (In [3])" in gather_context(ip, "summarise the data", [], 3000).text
    run(ip, *(f"step_{i} = {i}" for i in range(5)))
    # Five good cells later: an unrelated request does not pay for it...
    assert "The last error" not in gather_context(ip, "summarise the data", [], 3000).text
    assert "The last error" not in gather_context(ip, "rows with revenue above 100", [], 3000).text
    # ...a request about an error still gets it.
    assert "### The last error (In [3])" in gather_context(ip, "why did it fail?", [], 3000).text
    assert "### The last error (In [3])" in gather_context(ip, "this doesn't work", [], 3000).text


def test_errors_from_before_a_reset_an_ask_cell_or_excluded_names_stay_out(ip: Any) -> None:
    run(ip, "1/0")
    ip.reset(new_session=True)  # the history starts again: In [1] is no longer that cell
    run(ip, "a = 1")
    assert "The last error" not in gather_context(ip, "fix the error", [], 3000).text
    run(ip, "raw_rows = ['secret customer']", "raw_rows[5]")
    assert "The last error" in gather_context(ip, "fix it", [], 3000).text
    assert "The last error" not in gather_context(ip, "fix it", [], 3000, exclude=["raw_*"]).text


def test_secrets_in_the_traceback_are_masked(ip: Any) -> None:
    run(ip, "db_password = 'Tr0ub4dor&3-x9k'", "raise RuntimeError('login refused for ' + db_password)")
    text = gather_context(ip, "fix it", [], 3000).text
    assert "RuntimeError: login refused for ***" in error_section(text)
    assert "Tr0ub4dor&3-x9k" not in text


@pytest.mark.parametrize("code", [
    "def f(n):\n    return f(n + 1)\nf(0)",  # one line repeated: said once
    "def a(n):\n    return b(n)\ndef b(n):\n    return a(n)\na(0)",  # two alternating: frames cut
])
def test_a_recursion_error_is_bounded(ip: Any, code: str) -> None:
    # 250 frames deep, not Python's 1,000: IPython's formatting looks each frame's module up
    # through all of sys.modules (inspect.getmodule), and after the unit tests loaded thousands of
    # modules that took 30 s per test in CI. 250 frames are still several times the section's bound.
    limit = sys.getrecursionlimit()
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    sys.setrecursionlimit(depth + 250)
    try:
        run(ip, code)
    finally:
        sys.setrecursionlimit(limit)
    started = time.perf_counter()
    context = gather_context(ip, "fix the error", [], 3000)
    assert time.perf_counter() - started < 1.0
    section = error_section(context.text)
    assert "RecursionError: maximum recursion depth exceeded" in section
    assert len(section) < TRACEBACK_CHARS + 400 and context.tokens <= 3000
    assert "more times]" in section or "frames not shown" in section


def test_the_section_shrinks_to_its_failing_line_when_the_budget_is_short(ip: Any) -> None:
    run(ip, "import pandas as pd", "sales = pd.DataFrame({'revenue': [1.0]})", FAILING)
    context = gather_context(ip, "fix it", [], 300)
    assert count_tokens(context.text) <= 300
    section = error_section(context.text)
    assert f"KeyError: 'Revenue'\nFailing line (In [3], line 1):\n    {FAILING}" in section
    assert "(traceback not shown: no room)" in section


def test_an_error_before_load_ext_reaches_the_kernel_request(model_server: ScriptedOpenAIServer) -> None:
    km, kc = start_kernel({"OPENAI_BASE_URL": model_server.base_url, "OPENAI_API_KEY": "",
                           "JUPYTER_AI_CI_MODEL": "scripted-model"})
    try:
        assert run_cell(kc, "import pandas as pd\n"
                            "sales = pd.DataFrame({'region': ['n'], 'revenue': [1.0]})").status == "ok"
        failed = run_cell(kc, FAILING)
        assert failed.status == "error" and failed.reply["content"]["ename"] == "KeyError"
        assert run_cell(kc, "%load_ext jupyter_ai_ci").status == "ok"
        shown = run_cell(kc, "%%ask --show-context\nfix the cell above")
        assert shown.status == "ok", shown.reply
        out = shown.stdout
        assert "not sent" in out and not model_server.requests
        section = error_section(out)
        assert section.startswith("### The last error (In [2])\nKeyError: 'Revenue'\n"
                                  f"Failing line (In [2], line 1):\n    {FAILING}\n```\n")
        assert f"  Cell In [2], line 1, in <module>\n    {FAILING}" in section
        assert section.rstrip().endswith("KeyError: 'Revenue'\n```")
        assert out.rstrip().endswith("## Request\nfix the cell above")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
