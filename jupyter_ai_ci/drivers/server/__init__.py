"""The jupyter_server extension behind the JupyterLab sidebar.

Enabled by ``jupyter-config/jupyter_server_config.d/jupyter_ai_ci.json``;
configured with ``c.AICISettings.*`` in ``jupyter_server_config.py``.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from typing import Any

from jupyter_ai_ci.config import KEY_VARIABLES  # the keys the model client reads from the environment


def keep_keys_from_kernels(settings: Any, environ: MutableMapping[str, str]) -> list[str]:
    """Move the model's key from the server's environment into ``settings``.

    Kernels the server starts get a copy of its environment (LocalProvisioner, the session
    manager's kernel env), so generated code could print the key into the notebook.  The
    sidebar calls the model from this process with the key kept in its settings.  Returns
    the variables removed."""
    removed = []
    for name in KEY_VARIABLES:
        value = environ.pop(name, None)
        if value is None:
            continue
        removed.append(name)
        if name == "OPENAI_API_KEY" and value and not settings.api_key:
            settings.api_key, settings.api_key_from_env = value, True
    if removed and environ is os.environ:
        # Unset is not gone: /proc/<this pid>/environ still shows the block the process began
        # with, and a kernel can read its parent's (initialenv.py; docs/safety.md says what remains).
        from jupyter_ai_ci.drivers.server.initialenv import blank_initial

        blank_initial(removed)
    if removed:  # the magic in those kernels says why it has no key (model/client.py)
        from jupyter_ai_ci.model.endpoint import KEY_KEPT_ENV

        environ[KEY_KEPT_ENV] = "1"
    return removed


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_ai_ci.config import AICISettings, apply_shared
    from jupyter_ai_ci.drivers.server.handlers import setup_handlers

    settings = AICISettings(parent=serverapp)
    try:  # jupyter_ai_ci_config.py, under jupyter_server_config.py
        apply_shared(settings, serverapp.config)
    except ValueError as exc:
        serverapp.log.error("jupyter_ai_ci: %s; that setting keeps its value", exc)
    if settings.keep_key_from_kernels:
        removed = keep_keys_from_kernels(settings, os.environ)
        if removed:
            serverapp.log.info("jupyter_ai_ci: %s kept for the sidebar and out of kernels' environment "
                               "(c.AICISettings.keep_key_from_kernels)", ", ".join(removed))
    root_dir = getattr(serverapp.contents_manager, "root_dir", None)
    setup_handlers(serverapp.web_app, settings, root_dir if isinstance(root_dir, str) else None)
    serverapp.log.info("jupyter_ai_ci: sidebar handlers at /jupyter-ai-ci/")
