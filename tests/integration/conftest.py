"""Fixtures the integration tests share: the scan's attack tests in a real shell
(test_scan_escapes_shell.py, test_scan_hidden_calls_shell.py) and the local model's tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The notebook's folder, one level below files the user did not offer."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def model_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A runtime folder of the test's own (kernels it starts inherit it): the local model servers
    it starts are found by it alone -- never another test's or the person's -- and stopped after it."""
    from jupyter_ai_ci.model import llama_server, runtime

    folder = tmp_path / "runtime"
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(folder))
    yield folder
    llama_server.stop_all()
    for file in folder.glob(f"{runtime.PREFIX}*.json"):  # the kernels' servers
        llama_server.LocalServer.found(runtime.Entry(**json.loads(file.read_text()))).stop()
