"""pytest-jupyter's server fixtures, for these tests only.

``pytest_plugins`` may only be set in the top-level conftest, and the plugin
brings autouse fixtures (a fresh event loop, ServerApp cleanup) that the other
integration tests should not pay for; importing it here keeps it local.
"""

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403


@pytest.fixture
def jp_server_config():
    # No automatic local model: "no endpoint" must stay an error here.
    return {"ServerApp": {"jpserver_extensions": {"jupyter_ai_ci": True}},
            "AICISettings": {"local_fallback": False}}
