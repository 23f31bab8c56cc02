import pytest

# pytest_plugins may only be set in the top-level conftest; importing the
# plugin's fixtures and hooks here keeps them local to these tests.
from pytest_jupyter.jupyter_server import *


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"jupyter_ai_ci": True}}}
