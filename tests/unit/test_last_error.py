"""The last error's parts: when it is told, how it is rendered and fitted."""

from __future__ import annotations

import linecache
import sys

import pytest

from jupyter_ai_ci.context.build import SHARES, fit_context
from jupyter_ai_ci.context.last_error import LastError, last_error, worth_telling

ERROR = LastError(7, "KeyError: 'Revenue'", "Failing line (In [7], line 1):\n    sales['Revenue']",
                  "Traceback (most recent call last):\n  Cell In [7], line 1, in <module>\n    sales['Revenue']\n"
                  "KeyError: 'Revenue'", "sales['Revenue']")


@pytest.mark.parametrize(("request_text", "told"), [
    ("fix the cell above", True), ("why did it fail?", True), ("this doesn't work", True),
    ("what does this traceback mean", True), ("It is not working", True), ("the code above is wrong", True),
    ("rows with revenue above 100", False), ("plot revenue per region", False), ("summarise", False),
])
def test_told_when_asked_about_an_error_or_recent(request_text: str, told: bool) -> None:
    assert worth_telling(ERROR, request_text, next_count=30) is told
    # Raised by one of the 3 cells before the running %%ask cell (In [10] runs: the count is 11).
    assert worth_telling(ERROR, request_text, next_count=11)
    assert worth_telling(ERROR, request_text, next_count=12) is told  # In [7] is 4 cells back
    assert worth_telling(ERROR, request_text, next_count=11, asked_since=True) is told  # told once already


def test_rendered_with_its_title_message_failing_line_and_traceback() -> None:
    assert ERROR.render() == (
        "### The last error (In [7])\nKeyError: 'Revenue'\nFailing line (In [7], line 1):\n    sales['Revenue']\n"
        "```\nTraceback (most recent call last):\n  Cell In [7], line 1, in <module>\n    sales['Revenue']\n"
        "KeyError: 'Revenue'\n```")


def test_fitted_after_the_named_variables_and_shortened_when_short_of_room() -> None:
    assert sum(SHARES.values()) <= 1
    variables = [("sales", {"a": 1}), ("other", 2)]
    text = fit_context("fix sales", variables, [], 1000, last_error=ERROR.render()).text
    # Written steadiest first: the other variables, then the named ones and the error, next to the request.
    assert text.index("### Other variables") < text.index("### Variables the request is about") \
        < text.index("### The last error (In [7])")
    assert "Cell In [7], line 1, in <module>" in text
    long = ERROR.render().replace("  Cell In [7]", "  Cell In [7]" + "x" * 3000)
    short = fit_context("fix sales", [], [], 200, last_error=long).text
    assert "Failing line (In [7], line 1):\n    sales['Revenue']\n(traceback not shown: no room)" in short
    # A caller's plain text gets a plain title; none, no section.
    assert "### The last error\nValueError: x" in fit_context("go", [], [], 500, last_error="ValueError: x").text
    assert "last error" not in fit_context("go", [("a", 1)], [], 500).text


def test_without_ipython_records_cells_are_told_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    # A shell without a compile map or history: the count comes from IPython's cell name.
    name = "<ipython-input-4-0123456789ab>"
    source = "def load():\n    return {}['Revenue']\nload()\n"
    monkeypatch.setitem(linecache.cache, name, (len(source), None, source.splitlines(True), name))
    try:
        exec(compile(source, name, "exec"), {})
    except KeyError as exc:
        for attr, value in (("last_type", type(exc)), ("last_value", exc), ("last_traceback", exc.__traceback__)):
            monkeypatch.setattr(sys, attr, value, raising=False)
    error = last_error(object())
    assert error is not None and error.count == 4 and error.message == "KeyError: 'Revenue'"
    assert error.failing == "Failing line (In [4], line 2):\n    return {}['Revenue']"
    assert "  Cell In [4], line 3, in <module>\n    load()\n  Cell In [4], line 2, in load" in error.traceback
    monkeypatch.setattr(sys, "last_value", None)
    monkeypatch.setattr(sys, "last_exc", None, raising=False)
    assert last_error(object()) is None
