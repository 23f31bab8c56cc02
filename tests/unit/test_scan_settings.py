"""The scan flags code that changes the person's settings (security review #38, finding 1), and
leaves ordinary configuration and environment reads alone."""

from __future__ import annotations

import pytest

from jupyter_ai_ci.config import SETTINGS_SECTIONS
from jupyter_ai_ci.drivers.magic_entry import AskMagics
from jupyter_ai_ci.safety.policy import PolicySettings, decide, scan


def settings(code: str) -> list[str]:
    return [r.name for r in scan([code]).risks if r.kind == "settings"]


@pytest.mark.parametrize("code", [
    "%config AskMagics.policy = 'auto'",
    "%config AICISettings.allow = ['*']",
    "%config Configurable.policy = 'auto'",
    "%config InlineBackend.figure_format = 'png'; cfg.AskMagics.policy = 'auto'",
    "get_ipython().run_line_magic('config', \"AskMagics.allow = ['*']\")",
    "get_ipython().run_line_magic('config', line)",
    "get_ipython().magic('config AskMagics.policy = \"auto\"')",
    "ip = get_ipython()\nip.magics_manager.registry['AskMagics'].policy = 'auto'",
    "m = getattr(get_ipython(), 'magics_manager')",
    "get_ipython().find_line_magic('ask').__self__.deny = []",
    "get_ipython().config.AskMagics.policy = 'auto'",
    "from traitlets.config import Application\nApplication.instance().config",
    "import jupyter_ai_ci.drivers.magic_entry as e",
    "import sys\nsys.modules['jupyter_ai_ci.config']",
    "%reload_ext jupyter_ai_ci",
    "import os\nos.environ['OPENAI_BASE_URL'] = 'http://elsewhere/v1'",
    "from os import environ\nenviron['OPENAI_API_KEY'] = 'k'",
    "import os\ndel os.environ['OPENAI_API_KEY']",
    "import os\nos.environ.update(JUPYTER_AI_CI_MODEL='local:/tmp/x')",
    "import os\nos.environ.update({'HTTPS_PROXY': 'http://proxy'})",
    "import os\nos.environ.setdefault('https_proxy', 'http://proxy')",
    "import os\nos.environ[name] = value",
    "import os\nos.putenv('OPENAI_BASE_URL', 'x')",
    "import os\nos.environ |= {'OPENAI_BASE_URL': 'x'}",
    "%env OPENAI_BASE_URL=http://elsewhere/v1",
    "%set_env JPY_SESSION_NAME /",
])
def test_changing_the_settings_is_asked_about(code: str) -> None:
    assert settings(code), code
    assert decide(PolicySettings(), scan([code])).verdict == "ask"


@pytest.mark.parametrize("code", [
    "%config InlineBackend.figure_format = 'retina'",
    "import os\nos.environ['MPLBACKEND'] = 'Agg'",
    "import os\nprint(os.environ.get('OPENAI_BASE_URL'))",
    "%env MPLBACKEND=Agg",
    "%env OPENAI_BASE_URL",
    "config = {'policy': 'auto'}\nsettings = config",
])
def test_ordinary_configuration_is_not(code: str) -> None:
    assert not settings(code), code


def test_the_sections_that_reach_the_magic_are_all_known() -> None:
    from jupyter_ai_ci.safety.ownsettings import _SECTIONS

    assert set(AskMagics.section_names()) <= _SECTIONS and set(SETTINGS_SECTIONS) <= _SECTIONS
