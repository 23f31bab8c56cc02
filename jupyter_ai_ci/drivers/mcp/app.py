"""``jupyter ai-ci mcp``: the MCP server over stdio, for Claude Code, Codex, VS Code and others.

Options are the person's (command line or ``jupyter_ai_ci_config.py``): ``--yes`` and the allow
list live here, never in a tool's arguments, so an agent cannot approve its own code.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from jupyter_core.application import JupyterApp, base_aliases
from traitlets import Bool, CFloat, Unicode, default

from jupyter_ai_ci import __version__
from jupyter_ai_ci.config import AICISettings


class MCPApp(JupyterApp):
    name = "jupyter-ai-ci-mcp"
    version = __version__
    description = """Serve jupyter-ai-ci's tools (ask, run, context, fix, undo) over MCP on stdio. Each notebook
    named by a call gets a kernel started in its folder, kept for the session. Code the policy flags is
    asked about through the client (MCP elicitation) or refused; --yes approves it (not the deny list)."""
    examples = "jupyter ai-ci mcp --root-dir ~/analysis"
    classes = [AICISettings]

    root_dir = Unicode(help="Notebooks are named under this folder; none outside it (default: the "
                            "current folder).").tag(config=True)
    kernel_name = Unicode("python3", help="Kernel to start for a notebook.").tag(config=True)
    timeout = CFloat(600.0, help="Seconds a cell may run before it is interrupted.").tag(config=True)
    yes = Bool(False, help="Approve what the policy would ask about without asking "
                           "(the deny list still applies).").tag(config=True)

    server_url = Unicode("", help="A running Jupyter server whose notebooks' session kernels the tools use "
                                  "(default: one of yours found in Jupyter's runtime files whose root holds "
                                  "--root-dir; none: kernels of our own).").tag(config=True)
    server_token = Unicode(help="The token of --server-url (default: $JUPYTER_TOKEN).").tag(config=True)
    own_kernels = Bool(False, help="Start kernels of our own even when a Jupyter server is running.").tag(config=True)

    @default("server_token")
    def _default_token(self) -> str:
        return os.environ.get("JUPYTER_TOKEN", "")

    @default("root_dir")
    def _default_root(self) -> str:
        return os.getcwd()

    @default("config_file_name")
    def _default_config_file_name(self) -> str:
        return "jupyter_ai_ci_config"

    aliases = {**base_aliases, "root-dir": "MCPApp.root_dir", "kernel": "MCPApp.kernel_name",
               "timeout": "MCPApp.timeout", "model": "AICISettings.model", "policy": "AICISettings.policy",
               "allow": "AICISettings.allow", "deny": "AICISettings.deny", "retries": "AICISettings.retries",
               "candidates": "AICISettings.candidates", "server-url": "MCPApp.server_url",
               "server-token": "MCPApp.server_token"}
    flags: dict[str, Any] = {"yes": ({"MCPApp": {"yes": True}}, "Approve flagged code without asking."),
                             "own-kernels": ({"MCPApp": {"own_kernels": True}},
                                             "Start our own kernels, never a running server's.")}

    def start(self) -> None:
        try:
            from jupyter_ai_ci.drivers.mcp.notebooks import Notebooks
            from jupyter_ai_ci.drivers.mcp.server import build
        except ImportError as exc:  # the [mcp] extra is not installed
            print(f"jupyter ai-ci mcp: needs the mcp package ({exc.name}): pip install 'jupyter-ai-ci[mcp]'",
                  file=sys.stderr)
            raise SystemExit(2) from None
        from jupyter_ai_ci.drivers.headless import KernelOptions
        from jupyter_ai_ci.drivers.server import keep_keys_from_kernels

        root = Path(self.root_dir).expanduser()
        if not root.is_dir():
            print(f"jupyter ai-ci mcp: --root-dir {root} is not a folder", file=sys.stderr)
            raise SystemExit(2)
        settings = AICISettings(parent=self)
        if settings.keep_key_from_kernels:  # as the command line: the kernels never see the key
            keep_keys_from_kernels(settings, os.environ)
        kernel = KernelOptions(kernel_name=self.kernel_name, timeout=self.timeout,
                               hide_keys=settings.keep_key_from_kernels)
        server = build(Notebooks(root, settings, kernel, source=self.kernel_source(root)), yes=self.yes)
        # The SDK's stdio transport diverts fd 1 to stderr while it serves: a kernel started here
        # (which inherits it) or a stray print cannot put a line into the protocol's stream.
        asyncio.run(server.run_stdio_async())

    def kernel_source(self, root: Path) -> Any:
        """The running Jupyter server's session kernels (said on stderr), or None: our own."""
        from jupyter_ai_ci.drivers.mcp.remote_sessions import RemoteSessions, find_server

        if self.own_kernels:
            return None
        if self.server_url:
            return RemoteSessions(self.server_url, self.server_token, root.resolve())
        found = find_server(root)
        if found is None:
            return None
        print(f"jupyter ai-ci mcp: using the kernels of the Jupyter server at {found.url} (its notebooks' "
              "sessions; --own-kernels starts our own)", file=sys.stderr)
        return RemoteSessions(found.url, found.token, found.root)

