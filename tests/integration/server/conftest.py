"""pytest-jupyter's server fixtures, for these tests only.

``pytest_plugins`` may only be set in the top-level conftest, and the plugin
brings autouse fixtures (a fresh event loop, ServerApp cleanup) that the other
integration tests should not pay for; importing it here keeps it local.
"""

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403

from jupyter_ai_ci.testing import ScriptedOpenAIServer


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch):
    """The scripted model, as the server's endpoint (through the SDK's own variables)."""
    with ScriptedOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.setenv("JUPYTER_AI_CI_MODEL", "scripted-model")
        yield server


@pytest.fixture
def jp_server_config():
    # No automatic local model: "no endpoint" must stay an error here.
    return {"ServerApp": {"jpserver_extensions": {"jupyter_ai_ci": True}},
            "AICISettings": {"local_fallback": False}}
