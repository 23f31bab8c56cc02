"""A real kernel started with jupyter_client, and a way to run a cell in it
collecting everything the kernel sent back."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel


@dataclass
class CellRun:
    reply: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.reply["content"]["status"])

    @property
    def stdout(self) -> str:
        return "".join(m["content"]["text"] for m in self.messages
                       if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(m["content"]["text"] for m in self.messages
                       if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")

    @property
    def displays(self) -> dict[str, dict[str, Any]]:
        """Each display with an id, as its last update left it (the %%ask cell's progress)."""
        shown: dict[str, dict[str, Any]] = {}
        for m in self.messages:
            if m["msg_type"] in ("display_data", "update_display_data"):
                display_id = (m["content"].get("transient") or {}).get("display_id")
                if display_id:
                    shown[display_id] = m["content"]["data"]
        return shown

    @property
    def shown(self) -> str:
        """What a text/plain reader sees: printed text, then each display's final text."""
        return self.stdout + "\n".join(d.get("text/plain", "") for d in self.displays.values())

    @property
    def html(self) -> str:
        return "\n".join(d.get("text/html", "") for d in self.displays.values())

    def of_type(self, msg_type: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["msg_type"] == msg_type]

    @property
    def next_inputs(self) -> list[str]:
        return [p["text"] for p in self.reply["content"].get("payload", []) if p.get("source") == "set_next_input"]


def start_kernel(env: dict[str, str], cwd: str | None = None) -> tuple[KernelManager, BlockingKernelClient]:
    full = dict(os.environ)
    full.update(env)
    # A notebook kernel shows figures inline, whatever the test process uses.
    full["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    # A fresh folder per kernel unless told: replay records never leak into the repo.
    if cwd is None:
        cwd = tempfile.mkdtemp(prefix="aici-kernel-")
        # Removed when the test process ends (the kernel is long gone by then), not left in /tmp.
        atexit.register(shutil.rmtree, cwd, True)
    km, kc = start_new_kernel(kernel_name="python3", env=full, startup_timeout=60, cwd=cwd)
    return km, kc


@contextmanager
def ask_kernel(base_url: str) -> Iterator[BlockingKernelClient]:
    """A kernel with the extension loaded, pointed at the scripted model at ``base_url``."""
    km, kc = start_kernel({"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "",
                           "JUPYTER_AI_CI_MODEL": "scripted-model"})
    try:
        assert run_cell(kc, "%load_ext jupyter_ai_ci").status == "ok"
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run_cell(kc: BlockingKernelClient, code: str, timeout: float = 60) -> CellRun:
    """Run ``code`` as a cell and collect what it sent.  A cell right after one that failed may
    come back 'aborted' with no output: ipykernel 6 aborts requests that arrive while it still
    aborts its queue (stop_on_error), which a loaded machine makes likely.  An aborted request
    never ran, so it is asked again; it is over in moments."""
    for _ in range(20):
        messages: list[dict[str, Any]] = []
        run = CellRun(kc.execute_interactive(code, output_hook=messages.append, timeout=timeout, allow_stdin=False),
                      messages)
        if run.status != "aborted":
            return run
        time.sleep(0.1)
    return run
