"""The jupyter_server extension point that serves the MCP tools at ``/ai-ci/mcp`` (``http.py``).

A point of its own beside the sidebar's (``drivers/server``), listed after it so the settings it
made (the key kept out of kernels) are the ones used; light, so a server without the ``mcp``
package says so in one line instead of a failed extension's traceback.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_ai_ci.drivers.server.handlers import SETTINGS_KEY

    log = serverapp.log
    if importlib.util.find_spec("mcp") is None:
        log.info("jupyter_ai_ci: MCP tools not served at /ai-ci/mcp: pip install 'jupyter-ai-ci[mcp]'")
        return
    state = serverapp.web_app.settings.get(SETTINGS_KEY)
    root = getattr(serverapp.contents_manager, "root_dir", None)
    if state is None or not isinstance(root, str) or not Path(root).is_dir():
        log.warning("jupyter_ai_ci: MCP tools not served: %s", "the sidebar's extension did not load"
                    if state is None else "the contents manager keeps no folder on disk")
        return
    from jupyter_ai_ci.drivers.mcp.http import setup

    url = setup(serverapp.web_app, state["settings"], Path(root), serverapp.kernel_manager, serverapp.session_manager)
    log.info("jupyter_ai_ci: MCP tools (streamable HTTP) at %s", url)
