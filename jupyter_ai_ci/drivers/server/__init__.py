"""The jupyter_server extension behind the JupyterLab sidebar.

Enabled by ``jupyter-config/jupyter_server_config.d/jupyter_ai_ci.json``;
configured with ``c.AICISettings.*`` in ``jupyter_server_config.py``.
"""

from __future__ import annotations

from typing import Any


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_ai_ci.config import AICISettings
    from jupyter_ai_ci.drivers.server.handlers import setup_handlers

    root_dir = getattr(serverapp.contents_manager, "root_dir", None)
    setup_handlers(serverapp.web_app, AICISettings(parent=serverapp), root_dir if isinstance(root_dir, str) else None)
    serverapp.log.info("jupyter_ai_ci: sidebar handlers at /jupyter-ai-ci/")
