"""Code that changed a copy, not the DataFrame (core/noop.py, issue #37), through every driver:
pandas 3's ChainedAssignmentError warning makes the attempt a failed one, undone, and the fix
request carries pandas' advice; the corrected code's result is what stands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer

from .test_conformance import SETUP, every_driver, py

pytestmark = pytest.mark.skipif(int(pd.__version__.split(".")[0]) < 3,
                                reason="pandas 3 (Copy-on-Write) is what warns ChainedAssignmentError")


async def test_an_inplace_change_on_a_copy_is_a_failed_attempt_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # The first reply's clip changes a copy: its total (8.0) is the unclipped one, and would stand.
    replies = [py("first_try = 1\nsales['price'].clip(upper=3, inplace=True)\ncapped = sales['price'].sum()\n"
                  "print(capped)"),
               py("sales['price'] = sales['price'].clip(upper=3)\ncapped = sales['price'].sum()\nprint(capped)",
                  require="pandas warned that a step changed nothing")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "Cap the prices at 3 and give the total", replies,
                              probe=("first_try", "capped"), mcp=True)
    assert [s.driver for s in seen] == ["magic", "sidebar", "cli", "mcp"]
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert len(s.requests) == 2, s.driver
        fix = s.texts()[1]
        assert "at `sales['price'].clip(upper=3, inplace=True)`: the change never reached the DataFrame" in fix
        assert fix.count("Copy-on-Write") == 1, s.driver  # pandas' warning once, not in the output as well
        assert "Output printed before the error:\n```\n8.0\n```" in fix, s.driver
        # The failed attempt was undone (its first_try is gone); the fix's result stands.  (The
        # command line's kernel ends with its run: it is asked no probe.)
        assert s.names == ([] if s.driver == "cli" else ["capped"]), s.driver
        assert "ChainedAssignmentError" not in s.last_error, s.driver
        assert s.usage == (2, 200, 40), s.driver
