"""jupyter-ai-ci: the notebook as a code interpreter.

``%load_ext jupyter_ai_ci`` registers ``%%ask`` and ``%ask``.  Loading stays
cheap (``bench/bench_load_ext.py``): it imports only ``drivers.magic_entry``;
the run behind the magics is imported on their first call, the openai SDK on
the first request.
"""

from __future__ import annotations

from typing import Any

from jupyter_ai_ci import pristine

# Every module of ours, this one included, looks builtins up in a copy taken now (pristine.py).
globals()["__builtins__"] = pristine.OWN
pristine.install()

__version__ = "0.1.0"

__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    from jupyter_ai_ci.drivers.magic_entry import register

    register(ipython)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    # The MCP endpoint after the sidebar: it uses the settings the sidebar's point made.
    return [{"module": "jupyter_ai_ci.drivers.server"}, {"module": "jupyter_ai_ci.drivers.mcp.extension"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-ai-ci"}]


def unload_ipython_extension(ipython: Any) -> None:
    from jupyter_ai_ci.drivers.magic_entry import unregister

    unregister(ipython)
