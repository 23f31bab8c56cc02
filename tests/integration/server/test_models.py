"""The sidebar uses only the models the server offers (#15 item 5).

The attack: a websocket client names a model the panel never offers,
``local:/etc/shadow``, and the server used to start ``llama_cpp.server`` on that
file.  Now it is refused with one line, before any model or process is touched.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from .test_server import open_notebook, until

from jupyter_ai_ci.testing import ScriptedOpenAIServer

OFFERED = ["scripted-model", "scripted-large"]


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"jupyter_ai_ci": True}},
            "AICISettings": {"local_fallback": False, "models": OFFERED}}


def _llama_processes() -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "llama_cpp.server" in cmdline:
            found.append(cmdline)
    return found


@pytest.fixture
def spawned() -> Iterator[list[str]]:
    """Every llama.cpp server seen while the test runs (polled: a bad file makes it exit fast)."""
    seen: list[str] = []
    before = set(_llama_processes())
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.extend(p for p in _llama_processes() if p not in before and p not in seen)
            stop.wait(0.01)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    yield seen
    stop.set()
    thread.join()


def _bundled() -> str | None:
    from jupyter_ai_ci.model.local import bundled_model

    path = bundled_model()
    return str(path) if path else None


async def test_config_lists_exactly_the_offered_models(jp_fetch: Any, model: ScriptedOpenAIServer) -> None:
    data = json.loads((await jp_fetch("jupyter-ai-ci", "config")).body)
    assert [m["name"] for m in data["models"]] == OFFERED
    assert data["model"] == "scripted-model"


@pytest.mark.parametrize("named", ["local:/etc/shadow", "local:BUNDLED", "gpt-4o", ["scripted-model"]])
async def test_a_model_the_server_does_not_offer_is_refused(
        jp_fetch: Any, jp_ws_fetch: Any, model: ScriptedOpenAIServer, spawned: list[str], named: Any) -> None:
    if named == "local:BUNDLED":
        # A real GGUF: before the fix the server started llama.cpp on it and asked it.
        bundled = _bundled()
        if bundled is None:
            pytest.skip("the [local] extra is not installed")
        named = f"local:{bundled}"
    session = await open_notebook(jp_fetch)
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ws.write_message(json.dumps({"type": "ask", "request": "print the file", "model": named,
                                 "path": session["path"], "kernel_id": session["kernel"]["id"]}))
    log: list[dict[str, Any]] = []
    done = await until(ws, "done", log)
    assert done["status"] == "error"
    shown = repr(named) if len(repr(named)) <= 80 else repr(named)[:77] + "..."  # one line, however long
    assert done["message"] == (f"The model {shown} is not offered by this server; pick one of "
                               "scripted-model, scripted-large (AICISettings.models).")
    assert [m["type"] for m in log] == ["done"]  # nothing started, nothing ran
    assert model.requests == []
    assert spawned == []
    from jupyter_ai_ci.model import local

    assert local._servers == {}
    ws.close()


async def test_a_request_uses_the_picked_model(jp_fetch: Any, jp_ws_fetch: Any,
                                              model: ScriptedOpenAIServer) -> None:
    session = await open_notebook(jp_fetch)
    model.script("Hello from the large one.", "Hello from the default.")
    ws = await jp_ws_fetch("jupyter-ai-ci", "run")
    ask = {"type": "ask", "request": "hi", "path": session["path"], "kernel_id": session["kernel"]["id"]}
    ws.write_message(json.dumps({**ask, "model": "scripted-large"}))
    started = await until(ws, "started", [])
    assert started["model"] == "scripted-large"
    assert (await until(ws, "done", []))["status"] == "answered"
    ws.write_message(json.dumps(ask))  # no model named: the server's default
    assert (await until(ws, "done", []))["status"] == "answered"
    assert [r["model"] for r in model.requests] == ["scripted-large", "scripted-model"]
    ws.close()
