"""Fixtures the scan's attack tests in a real shell share (test_scan_escapes_shell.py,
test_scan_hidden_calls_shell.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The notebook's folder, one level below files the user did not offer."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder
