"""Issue #38, items 3 and 4, in every driver: code that hides a process (handed on as a value,
run from a string, started by a call the scan did not know) or writes through a link that leads
out of the notebook's folder is asked about by ``%%ask`` (no stdin in the kernel: refused), the
panel (the user rejects it), ``jupyter ai-ci run`` (no terminal: refused) and the MCP server (a
client that cannot be asked: refused) alike, and never runs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer

from . import three
from .test_conformance import py

SETUP = ["x = 1"]


async def every_driver_refuses(server: ScriptedOpenAIServer, tmp_path: Path, jp: tuple[Any, Any, Any, Path],
                               code: str) -> list[three.Seen]:
    jp_fetch, jp_ws_fetch, jp_serverapp, root = jp
    seen = [await three.magic(server, tmp_path / "magic", SETUP, "do it", [py(code)], allow_stdin=False)]
    seen.append(await three.sidebar(server, jp_fetch, jp_ws_fetch, jp_serverapp, root, SETUP, "do it", [py(code)],
                                    approve=False))
    seen.append(await asyncio.to_thread(three.cli, server, tmp_path / "cli", SETUP, "do it", [py(code)]))
    # The MCP server's ask: its client here cannot be asked (no elicitation), so it is refused.
    seen.append(await three.mcp(server, tmp_path / "mcp", SETUP, "do it", [py(code)]))
    for s in seen:
        assert s.status != "success" and len(s.requests) == 1, (s.driver, s.message)
    return seen


@pytest.mark.parametrize(("code", "says"), [
    ("import os\nlist(map(os.system, ['touch MARK']))",
     "os.system: runs a shell command (passed on as a value, to be called elsewhere)"),
    ("get_ipython().run_cell(\"import os; os.system('touch MARK')\")",
     "os.system: runs a shell command (in a string run as code)"),
    ("get_ipython().system_raw('touch MARK')", "get_ipython().system_raw: runs a shell command"),
])
async def test_a_hidden_process_runs_in_no_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path, code: str, says: str) -> None:
    marker = tmp_path / "ran"
    seen = await every_driver_refuses(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                                      code.replace("MARK", str(marker)))
    assert not marker.exists()
    for s in seen:
        assert says in s.message, (s.driver, s.message)
    [asked] = seen[1].approvals  # the panel showed the code and why
    assert says in asked["reason"]


async def test_a_write_through_a_link_out_of_the_notebooks_folder_happens_in_no_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    home = tmp_path / "users-home"  # (tmp_path / "home" is the Jupyter server's)
    home.mkdir()
    for folder in (tmp_path / "magic", jp_root_dir, tmp_path / "cli", tmp_path / "mcp"):
        folder.mkdir(exist_ok=True)
        (folder / "home").symlink_to(home)  # as ``ln -s ~ home`` in the notebook's folder
    seen = await every_driver_refuses(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                                      "open('home/.bashrc', 'a').write('echo hi')")
    assert not (home / ".bashrc").exists()
    says = f"writes outside the working directory: 'home/.bashrc' (a link leads it to {str(home / '.bashrc')!r})"
    for s in seen:
        assert says in s.message, (s.driver, s.message)
    assert says in seen[1].approvals[0]["reason"]
