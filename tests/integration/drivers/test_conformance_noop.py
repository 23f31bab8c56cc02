"""Code that changed a copy, not the DataFrame (core/noop.py, issue #37), through every driver:
pandas 3's ChainedAssignmentError warning makes the attempt a failed one, undone.  An inplace
method on a column is run again as the assignment, with no model call (core/mends.py); any other
line is the model's to fix, and the fix request carries pandas' advice.  The corrected code's
result is what stands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer

from .test_conformance import SETUP, every_conversing_driver, every_driver, py

pytestmark = pytest.mark.skipif(int(pd.__version__.split(".")[0]) < 3,
                                reason="pandas 3 (Copy-on-Write) is what warns ChainedAssignmentError")


async def test_an_inplace_change_on_a_copy_is_run_again_as_the_assignment_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # The clip changes a copy: its total (8.0) would be the unclipped one, and would stand.
    replies = [py("first_try = 1\nsales['price'].clip(upper=3, inplace=True)  # cap\ncapped = sales['price'].sum()\n"
                  "capped_right = 1 if capped == 7.0 else None\nprint(capped)")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "Cap the prices at 3 and give the total", replies,
                              probe=("first_try", "capped", "capped_right"), mcp=True)
    assert [s.driver for s in seen] == ["magic", "sidebar", "cli", "mcp"]
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert len(s.requests) == 1 and s.usage == (1, 100, 20), s.driver  # no model call for the mend
        assert ("attempt 1 failed: ChainedAssignmentError (warning)" in s.told
                and "wrote `sales['price'] = sales['price'].clip(upper=3)  # cap` for the line that changed a copy "
                    "and running it again (no model call)" in s.told), (s.driver, s.told)
        if s.driver == "magic":  # the section shows the cell as it ran now, once
            assert "✓ attempt 2 · 1 cell ·" in s.told, s.told
        # The mended attempt ran the whole code again, and the prices were capped.
        assert s.names == ([] if s.driver == "cli" else ["capped", "capped_right", "first_try"]), s.driver
        assert "ChainedAssignmentError" not in s.last_error, s.driver


async def test_the_conversation_holds_the_code_as_it_ran_for_a_follow_up(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    asked = ["Fill the missing prices with the mean", "Now print the mean price"]
    setup = [*SETUP, "sales.loc[1, 'price'] = float('nan')"]
    replies = [py("sales['price'].fillna(sales['price'].mean(), inplace=True)\nprint(sales['price'].isna().sum())"),
               py("print(sales['price'].mean())",
                  require="sales['price'] = sales['price'].fillna(sales['price'].mean())")]
    seen = await every_conversing_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                                         setup, asked, replies)
    for s in seen:
        assert s.status == "success" and len(s.requests) == 2, (s.driver, s.message)
        # The follow-up's conversation holds the line the kernel ran, not the one that changed
        # nothing: a small model copies what its own earlier reply says.
        earlier = [m["content"] for m in s.requests[1]["messages"] if m["role"] == "assistant"]
        assert len(earlier) == 1 and "sales['price'] = sales['price'].fillna(sales['price'].mean())" in earlier[0]
        # Nor is the undone attempt among the cells that ran (the panel and MCP run an attempt's
        # cells as the kernel's own, in its history): nothing of it is left, in the kernel or told.
        assert "inplace=True" not in s.texts()[1], (s.driver, s.texts()[1][-1500:])


async def test_a_chained_assignment_the_run_cannot_mend_is_the_models_to_fix_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # The assignment goes through a chained selection: it changes a copy, and has no one mend.
    replies = [py("first_try = 1\nsales['price'][2] = 3.0\ncapped = sales['price'].sum()\nprint(capped)"),
               py("sales.loc[2, 'price'] = 3.0\ncapped = sales['price'].sum()\nprint(capped)",
                  require="pandas warned that a step changed nothing")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "Cap the last price at 3 and give the total", replies,
                              probe=("first_try", "capped"), mcp=True)
    assert [s.driver for s in seen] == ["magic", "sidebar", "cli", "mcp"]
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert len(s.requests) == 2, s.driver
        fix = s.texts()[1]
        assert "at `sales['price'][2] = 3.0`: the change never reached the DataFrame" in fix
        assert fix.count("Copy-on-Write") == 1, s.driver  # pandas' warning once, not in the output as well
        assert "Output printed before the error:\n```\n8.0\n```" in fix, s.driver
        # The failed attempt was undone (its first_try is gone); the fix's result stands.  (The
        # command line's kernel ends with its run: it is asked no probe.)
        assert s.names == ([] if s.driver == "cli" else ["capped"]), s.driver
        assert "ChainedAssignmentError" not in s.last_error, s.driver
        assert s.usage == (2, 200, 40), s.driver
