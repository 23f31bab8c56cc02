"""jupyter_ai_ci_config.py reaches every driver, each driver's own configuration over it."""

from __future__ import annotations

from pathlib import Path

import pytest
from traitlets.config import Config

from jupyter_ai_ci.config import AICISettings, apply_shared, shared_settings


def test_the_server_takes_what_its_own_config_leaves_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "jupyter_ai_ci_config.py").write_text(
        "c.AICISettings.retries = 0\nc.AICISettings.model = 'shared-model'\nc.Other.x = 1\n")
    (tmp_path / "jupyter_ai_ci_config.json").write_text('{"AICISettings": {"steps": 3, "model": "from-json"}}')
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path))
    # The .py file over the .json one in a folder, as Jupyter's own apps read them.
    assert shared_settings() == {"retries": 0, "model": "shared-model", "steps": 3}
    own = Config({"AICISettings": {"retries": 5}})  # as in jupyter_server_config.py
    settings = AICISettings(config=own)
    apply_shared(settings, own)
    assert (settings.retries, settings.model, settings.steps) == (5, "shared-model", 3)


def test_no_file_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path))
    settings = AICISettings()
    apply_shared(settings, Config())
    assert settings.retries == AICISettings().retries and shared_settings() == {}
