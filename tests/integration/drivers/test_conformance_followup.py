"""A follow-up in the same notebook, through every driver that keeps a conversation (``%%ask``,
the panel, the MCP server; the command line asks one request per command): sent after the
earlier request exactly as it was sent, so a model server's prompt cache reads only what is new
(issue #37), and told only what changed in the notebook since (context/since.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_ai_ci.context.since import CHANGED
from jupyter_ai_ci.testing import ScriptedOpenAIServer

from .test_conformance import SETUP, every_conversing_driver, py


async def test_a_follow_up_is_sent_after_the_earlier_request_as_it_was_sent_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    asked = ["Compute the total price of all sales and print it", "Now print the mean price too"]
    replies = [py("total = sales['price'].sum()\nprint(total)"),
               py("print(sales['price'].mean())", require="total: numpy.float64 = 8.0")]  # told of the new variable
    seen = await every_conversing_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                                         SETUP, asked, replies)
    for s in seen:
        assert s.status == "success" and len(s.requests) == 2, (s.driver, s.message)
        first, follow_up = (r["messages"] for r in s.requests)
        # The earlier prompt and its reply, unchanged: the prefix a prompt cache keeps.
        assert follow_up[:len(first) + 1] == [*first, {"role": "assistant", "content": replies[0].text}], s.driver
        assert len(follow_up) == len(first) + 2, s.driver
        told = follow_up[-1]["content"]
        assert told.startswith(CHANGED) and told.endswith(f"## Request\n{asked[1]}"), (s.driver, told)
        # What the first context held is not told again (the sales DataFrame's description).
        assert "sales: pandas.DataFrame" in first[1]["content"] and "sales: pandas.DataFrame" not in told, s.driver
