"""An answer the output already states in the form asked (``@name[value]`` fields, core/answer.py,
issue #37): no model call to say it again, in every driver; the output's lines are the answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

from .test_conformance import SETUP, TOKENS, every_driver, py

ASKED = ("What is the mean price of sales?\n\nAnswer format: @mean_price[mean_price_value], rounded to two "
         "decimals.")


async def test_fields_the_output_fills_in_are_the_answer_with_no_more_calls_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # The reply in words is scripted too: a driver that asked for it would be told it, and fail below.
    code = ("mean_price = round(sales['price'].mean(), 2)\nprint('mean:', mean_price)\n"
            "print(f'@mean_price[{mean_price}]')")
    replies = [py(code), py("print('@mean_price[1.0]')")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, ASKED, replies, probe=("mean_price",), mcp=True)
    assert [s.driver for s in seen] == ["magic", "sidebar", "cli", "mcp"]
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert len(s.requests) == 1, s.driver  # the code; the answer is its output's line
        assert s.usage == (1, *TOKENS), s.driver
        [record] = s.records  # replayed, the output states it again: no call then either
        assert record["replies"] == [f"```python\n{code}\n```", "@mean_price[2.67]"], s.driver
        assert record["requests"] == 1, s.driver
        shown = s.message + s.told + s.answer
        assert "@mean_price[2.67]" in shown and "@mean_price[1.0]" not in shown, (s.driver, shown)


async def test_a_field_the_output_leaves_out_is_answered_in_words_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # Two fields asked, one printed (and the other's placeholder echoed): the model says the rest.
    asked = "What are the mean and max price of sales?\n\nAnswer format: @mean_price[value], @max_price[value]"
    replies = [py("print('@mean_price[2.67]')\nprint('@max_price[value]')"),
               Reply("@mean_price[2.67], @max_price[4.0]", tokens=TOKENS, require="@max_price[value]")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, asked, replies)
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert len(s.requests) == 2, s.driver  # the code, then the answer in words
        assert s.records[0]["replies"][-1].startswith("@mean_price[2.67], @max_price[4.0]"), s.driver


async def test_with_two_candidates_the_answer_in_words_comes_before_the_check_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # Shown when the first result is, not after the second candidate (on a CPU the long part), and
    # asked while the model's cache still holds the first candidate's reply.
    answer = "North has the highest total price: 5.5."
    replies = [py("totals = sales.groupby('region')['price'].sum()\nprint(totals.idxmax(), totals.max())"),
               Reply(answer, tokens=TOKENS, require="north 5.5"),
               py("top = sales.groupby('region')['price'].sum()\nprint(top.idxmax(), top.max())")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "Which region has the highest total price?", replies, candidates=2,
                              mcp=True)
    for s in seen:
        assert s.status == "success" and "2 of 2 candidates agree" in s.message, (s.driver, s.message)
        assert len(s.requests) == 3, s.driver
        assert "in words" in s.texts()[1] and "in words" not in s.texts()[2], s.driver  # the answer, then the check
        assert s.usage == (3, 300, 60), s.driver
        assert answer in s.message + s.told + s.answer, s.driver
        [record] = s.records  # the kept (second) candidate's code, and the answer
        assert "top = " in record["replies"][0] and record["replies"][-1] == answer, s.driver


async def test_two_candidates_whose_fields_say_other_words_disagree_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # DABench question 429: the same numbers, other words; compared by numbers alone, the two
    # "agreed" and a wrong answer wore a tick.
    asked = ("How are price and region related?\n\nAnswer format: @corr[value] rounded to two decimals, "
             "@kind[value], one of linear, nonlinear or none.")
    replies = [py("print('@corr[0.12]')\nprint('@kind[nonlinear]')"), py("print('@corr[0.12]')\nprint('@kind[none]')")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, asked, replies, candidates=2, mcp=True)
    for s in seen:
        message = s.message.lower()
        assert "candidates disagree: @corr[0.12] / @kind[nonlinear] (1 of 2) vs @corr[0.12] / @kind[none]" in message, (
            s.driver, s.message)
        assert "agree" not in message.replace("disagree", "") and "✓" not in s.message, (s.driver, s.message)
        assert s.usage == (2, 200, 40), s.driver  # both state the answer: no call for words
        [record] = s.records  # the first candidate, applied
        assert "@kind[nonlinear]" in record["replies"][0], s.driver
