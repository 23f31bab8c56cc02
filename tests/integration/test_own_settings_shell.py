"""Security review #38, finding 1, performed in a real IPython shell with the scripted model: the
model's code switched the policy off for the rest of the session (``%config AskMagics.policy =
'auto'``, ``run_line_magic('config', …)``, the attribute set on the magic), and the next
request's ``os.system`` ran unasked.  Such code is asked about (here nobody can be asked, so it
is refused); and when it runs anyway (``--yes``), the next request still reads the person's
settings, so its ``os.system`` is refused too."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer

pytestmark = pytest.mark.timeout(120)

ROUTES = {
    "%config": "%config AskMagics.policy = 'auto'",
    "run_line_magic": "get_ipython().run_line_magic('config', \"AskMagics.allow = ['*']\")",
    "attribute": "ip = get_ipython()\nip.magics_manager.registry['AskMagics'].policy = 'auto'",
    "AICISettings section": "%config AICISettings.policy = 'auto'",
    "the traits' storage": "get_ipython().magics_manager.registry['AskMagics']._trait_values['policy'] = 'auto'",
    "a list changed in place": "get_ipython().magics_manager.registry['AskMagics'].allow.append('*')",
    "the shell's configuration": "get_ipython().config.AskMagics.policy = 'auto'",
    "a thread, later": ("import threading\nm = get_ipython().magics_manager.registry['AskMagics']\n"
                        "threading.Timer(0.2, setattr, (m, 'policy', 'auto')).start()"),
    "the environment": "import os\nos.environ['OPENAI_BASE_URL'] = 'http://127.0.0.1:9/v1'",
}


def py(code: str) -> str:
    return f"Here it is.\n```python\n{code}\n```\n"


def refused(ip: Any, model_server: ScriptedOpenAIServer, code: str, request: str = "do it") -> str:
    model_server.script(py(code))
    result = ip.run_cell(f"%%ask --retries 0\n{request}")
    assert not result.success and type(result.error_in_exec).__name__ == "PolicyRefused", result.error_in_exec
    return str(result.error_in_exec)


@pytest.fixture
def magics(ip: Any) -> Any:
    return ip.magics_manager.registry["AskMagics"]


@pytest.mark.parametrize("route", list(ROUTES))
def test_code_that_changes_the_settings_is_asked_about(
        ip: Any, model_server: ScriptedOpenAIServer, magics: Any, route: str) -> None:
    said = refused(ip, model_server, ROUTES[route])
    assert "settings" in said or "environment" in said, said
    assert magics.policy == "ask-risky" and list(magics.allow) == []
    assert os.environ["OPENAI_BASE_URL"] == model_server.base_url


@pytest.mark.parametrize("route", list(ROUTES))
def test_a_change_that_ran_anyway_does_not_reach_the_next_request(
        ip: Any, model_server: ScriptedOpenAIServer, magics: Any, tmp_path: Path, route: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--yes`` stands for a route the scan missed: the change runs, and has no effect."""
    model_server.script(py(ROUTES[route] + "\nprint('done')"))
    assert ip.run_cell("%%ask --yes\ndo it").success
    time.sleep(0.5)  # the thread's change lands after the request, between the person's cells
    assert magics.policy == "ask-risky" and list(magics.allow) == []
    assert os.environ["OPENAI_BASE_URL"] == model_server.base_url
    marker = tmp_path / "marker"
    said = refused(ip, model_server, f"import os\nos.system('touch {marker}')", "now the next thing")
    assert "os.system: runs a shell command" in said and not marker.exists()
    # Said when the request ends (a change made between requests: when the next one does).
    assert "put back (settings change only in your own cells)" in capsys.readouterr().out
    assert magics.policy == "ask-risky"


def test_the_persons_own_config_still_applies(
        ip: Any, model_server: ScriptedOpenAIServer, magics: Any, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    assert refused(ip, model_server, f"import os\nos.system('touch {marker}')", "one") and not marker.exists()
    assert ip.run_cell("%config AskMagics.policy = 'auto'").success  # the person's own cell
    model_server.script(py(f"import os\nos.system('touch {marker}')"))
    assert ip.run_cell("%%ask\ntwo").success and marker.exists()
    assert magics.policy == "auto"
    ip.run_cell("m = get_ipython().magics_manager.registry['AskMagics']\nm.policy = 'ask-risky'")  # typed by them
    marker.unlink()
    assert refused(ip, model_server, f"import os\nos.system('touch {marker}')", "three") and not marker.exists()
