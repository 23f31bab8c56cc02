"""The jupyter_server extension behind the JupyterLab sidebar.

Enabled by ``jupyter-config/jupyter_server_config.d/jupyter_ai_ci.json``;
configured with ``c.AICISettings.*`` in ``jupyter_server_config.py``.
"""

from __future__ import annotations

from typing import Any


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from ..config import AICISettings
    from .handlers import setup_handlers

    setup_handlers(serverapp.web_app, AICISettings(parent=serverapp))
    serverapp.log.info("jupyter_ai_ci: sidebar handlers at /jupyter-ai-ci/")
