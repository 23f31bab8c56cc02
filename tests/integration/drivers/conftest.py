"""pytest-jupyter's server fixtures (see tests/integration/server/conftest.py for why here),
and one environment for every driver: the scripted model and the planted secrets."""

from collections.abc import Iterator

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403

from jupyter_ai_ci.testing import ScriptedOpenAIServer

# Fake credentials, planted where a careless run would pick them up.  None may reach the model.
ENV_SECRETS = {
    "OPENAI_API_KEY": "sk-proj-Tq3xR8vLm2Np5Wk9Yz4Bc7Df1Gh6Jk0LqRs",
    "DB_PASSWORD": "Pg7s3cretWd2024xQ",
    "AZURE_OPENAI_API_KEY": "9f8e7d6c5b4a39281716f5e4d3c2b1a0",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY12",
}


@pytest.fixture
def jp_server_config():
    # No automatic local model: the scripted server is the model.
    return {"ServerApp": {"jpserver_extensions": {"jupyter_ai_ci": True}},
            "AICISettings": {"local_fallback": False}}


@pytest.fixture(autouse=True)
def planted(model_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    """Set before the Jupyter server starts, so its kernels inherit them too."""
    for name, value in ENV_SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("JUPYTER_AI_CI_MODEL", "scripted-model")
    yield model_server
