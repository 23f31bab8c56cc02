"""Jupyter AI's agents call our tools: ``ask``, ``run``, ``context``, ``fix``, ``undo`` in jupyter-server-mcp.

Jupyter AI 3 gives its personas (Claude, Codex, Goose, ... over ACP) the notebook through
jupyter-server-mcp, the MCP server it runs inside the Jupyter server.  That server registers every
function the ``jupyter_server_mcp.tools`` entry point group names (pyproject.toml names ``offered``)
and builds each tool's schema from the function's signature.  So these are plain functions with
the stdio server's arguments (``signatures.py``), each a thin call of the same ``Tools``
(``tools.py``): nothing of the run is re-implemented here.

They are offered only when the person turns them on (``c.JupyterAITools.enabled = True``):
jupyter-server-mcp's port takes no Jupyter token, so any process on the machine, another user's
among them, could otherwise run code through ``run`` in the person's kernels.

They run in the Jupyter server's process and event loop, as the server's own ``/ai-ci/mcp`` does
(``http.py``), and work as it does: notebooks are named under the server's root; the settings are
the sidebar's (``c.AICISettings``, the model's key kept out of kernels); a notebook's kernel is its
open session's, or one started through the server's session manager as opening it would.  What the
policy asks about is put to the person through the agent's client (elicitation) where it can ask,
else refused: there is no ``--yes`` here, only ``c.AICISettings.allow``.

jupyter-server-mcp imports this module when it starts: only the signatures load then, the run on
the first call.  Nothing of the 2.x ``mcp`` SDK is used: Jupyter AI 3.2 pins jupyter-server-mcp
0.3, which serves with fastmcp 3 on the 1.x SDK.  No ``from __future__ import annotations``
either: jupyter-server-mcp re-wraps each function and FastMCP reads the annotations as objects.
"""

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from traitlets import Bool
from traitlets.config import Configurable

from jupyter_ai_ci.drivers.mcp.signatures import (ASK, CONTEXT, FIX, RUN, UNDO, Candidates, Cell, Code, HowMany,
                                                  Notebook, Preview, Request, Retries, Steps, Verdict)

if TYPE_CHECKING:
    from mcp.types import CallToolResult

    from jupyter_ai_ci.drivers.mcp.tools import Tools

# The tools as jupyter-server-mcp names them: "module:function".
TOOLS = [f"{__name__}:{name}" for name in ("ask", "run", "context", "fix", "undo")]
NOT_ENABLED = ("jupyter-ai-ci's server extension is not enabled in this Jupyter server: "
               "jupyter server extension enable jupyter_ai_ci, then restart it")

_tools: "Tools | None" = None


class JupyterAITools(Configurable):
    """Our tools in jupyter-server-mcp, the MCP server Jupyter AI 3 gives its agents."""

    enabled = Bool(False, help="Offer ask, run, context, fix and undo to jupyter-server-mcp's agents (Jupyter AI's "
                               "personas). Its port takes no Jupyter token: any process on this machine can "
                               "call them, and run executes code.").tag(config=True)


def offered() -> list[str]:
    """What the ``jupyter_server_mcp.tools`` entry point answers: the tools when the person turned
    them on, else none, and the server's log says how to."""
    from jupyter_server.serverapp import ServerApp

    app = ServerApp.instance()
    if JupyterAITools(parent=app).enabled:
        return TOOLS
    app.log.info("jupyter_ai_ci: ask, run, context, fix, undo are not offered to jupyter-server-mcp (its port takes "
                 "no token); c.JupyterAITools.enabled = True offers them")
    return []


def tools_for(serverapp: Any) -> "Tools":
    """The tools of the Jupyter server ``serverapp``, as its own ``/ai-ci/mcp`` has them (``http.py``):
    its root, the sidebar's settings, the kernels of the notebooks' sessions."""
    from pathlib import Path

    from jupyter_ai_ci.drivers.headless import KernelOptions
    from jupyter_ai_ci.drivers.mcp.notebooks import Notebooks
    from jupyter_ai_ci.drivers.mcp.progress import HOW_TO_ALLOW_IN_SERVER
    from jupyter_ai_ci.drivers.mcp.sessions import SessionKernels
    from jupyter_ai_ci.drivers.mcp.tools import Tools
    from jupyter_ai_ci.drivers.server.handlers import SETTINGS_KEY
    from jupyter_ai_ci.errors import UsageProblem

    # The sidebar's settings, not a second copy: when the extension keeps the model's key out of
    # kernels, the key lives only in that object (moved out of os.environ at the server's start).
    shared = getattr(getattr(serverapp, "web_app", None), "settings", {}).get(SETTINGS_KEY)
    if shared is None:
        raise UsageProblem(NOT_ENABLED)
    settings = shared["settings"]
    root = Path(shared["root_dir"] or serverapp.root_dir)
    kernels = SessionKernels(root, serverapp.kernel_manager, serverapp.session_manager)
    notebooks = Notebooks(root, settings, KernelOptions(timeout=settings.execution_timeout), kernels)
    return Tools(notebooks, how_to_allow=HOW_TO_ALLOW_IN_SERVER)


def _the_tools() -> "Tools":
    global _tools
    if _tools is None:
        from jupyter_server.serverapp import ServerApp

        # The running server (jupyter_ai_tools finds it the same way): tools get no handle to it.
        _tools = tools_for(ServerApp.instance())
    return _tools


def _context() -> Any:
    """FastMCP's context of the call (progress, elicitation), or None outside one."""
    try:
        from fastmcp.server.dependencies import get_context

        return get_context()
    except (ImportError, RuntimeError):
        return None  # progress goes nowhere; what needs approval is refused, saying how to allow it


async def _call(work: "Callable[[Tools, Any], Awaitable[CallToolResult]]") -> Any:
    from fastmcp.tools import ToolResult

    from jupyter_ai_ci.drivers.mcp.tools import failure

    try:
        tools = _the_tools()
    except Exception as exc:  # noqa: BLE001 - every failure is one line to the agent
        result = failure(exc)
    else:
        result = await work(tools, _context())
    # FastMCP would serialize an SDK result as text; its own ToolResult keeps the line first, the
    # structured content beside it and the error flag.  Wire names: the 1.x and 2.x SDKs agree on those.
    wire = result.model_dump(mode="json", by_alias=True)
    return ToolResult(content=list(result.content), structured_content=wire.get("structuredContent"),
                      is_error=bool(wire.get("isError")))


async def ask(request: Request, notebook: Notebook, retries: Retries = None, candidates: Candidates = None,
              steps: Steps = None) -> Any:
    return await _call(lambda tools, ctx: tools.ask(request, notebook, ctx, retries, candidates, steps))


async def run(code: Code, notebook: Notebook) -> Any:
    return await _call(lambda tools, ctx: tools.run(code, notebook, ctx))


async def context(notebook: Notebook, request: Preview = "") -> Any:
    return await _call(lambda tools, ctx: tools.context(notebook, ctx, request))


async def fix(notebook: Notebook, cell: Cell = "", decision: Verdict = None) -> Any:
    return await _call(lambda tools, ctx: tools.fix(notebook, ctx, cell, decision))


async def undo(notebook: Notebook, n: HowMany = 1) -> Any:
    return await _call(lambda tools, ctx: tools.undo(notebook, ctx, n))


# jupyter-server-mcp and FastMCP describe a tool by its function's docstring.
ask.__doc__, run.__doc__, context.__doc__, fix.__doc__, undo.__doc__ = ASK, RUN, CONTEXT, FIX, UNDO
