"""The MCP server object: the tools registered with their schemas and annotations.

The same object serves stdio (``app.py``) and streamable HTTP inside Jupyter (``http.py``).  Argument schemas come
from the signatures (the SDK validates every call against them: a malformed call gets the SDK's
own schema error); output schemas from ``results.py``'s models.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations

from jupyter_ai_ci import __version__
from jupyter_ai_ci.drivers.mcp import results as r
from jupyter_ai_ci.drivers.mcp.notebooks import Notebooks
from jupyter_ai_ci.drivers.mcp.progress import HOW_TO_ALLOW
from jupyter_ai_ci.drivers.mcp.signatures import (ASK, CONTEXT, FIX, RUN, UNDO, Candidates, Cell, Code, HowMany,
                                                  Notebook, Preview, Request, Retries, Steps, Verdict)
from jupyter_ai_ci.drivers.mcp.tools import Tools

INSTRUCTIONS = """jupyter-ai-ci runs code in a Jupyter notebook's live kernel transactionally: code that raises is
rolled back (names, process state, files), so a failed try leaves nothing half done. `run` executes
your code that way; `ask` has jupyter-ai-ci's own model write, run, check and fix code for a request;
`context` shows what that model would be told; `fix` offers a tried fix of a failed cell; `undo` takes
back the last requests. Every result
starts with one status line (✓ done / ✗ failed / ⚠ not sure); read it before you go on."""


def build(notebooks: Notebooks, yes: bool = False, how_to_allow: str = HOW_TO_ALLOW) -> MCPServer[Any]:
    tools = Tools(notebooks, yes, how_to_allow)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield None
        finally:
            await notebooks.close()  # the session's kernels go with it

    # WARNING: at INFO every model request's HTTP line went to the client's log of this server.
    server: MCPServer[Any] = MCPServer("jupyter-ai-ci", version=__version__, instructions=INSTRUCTIONS,
                                       lifespan=lifespan, log_level="WARNING")

    async def ask(request: Request, notebook: Notebook, ctx: Context, retries: Retries = None,
                  candidates: Candidates = None, steps: Steps = None) -> Annotated[CallToolResult, r.AskResult]:
        return await tools.ask(request, notebook, ctx, retries, candidates, steps)

    async def run(code: Code, notebook: Notebook, ctx: Context) -> Annotated[CallToolResult, r.RunCodeResult]:
        return await tools.run(code, notebook, ctx)

    async def context(notebook: Notebook, ctx: Context, request: Preview = "") -> Annotated[CallToolResult,
                                                                                           r.ContextResult]:
        return await tools.context(notebook, ctx, request)

    async def fix(notebook: Notebook, ctx: Context, cell: Cell = "", decision: Verdict = None,
                  ) -> Annotated[CallToolResult, r.FixResult]:
        return await tools.fix(notebook, ctx, cell, decision)

    async def undo(notebook: Notebook, ctx: Context, n: HowMany = 1) -> Annotated[CallToolResult, r.UndoResult]:
        return await tools.undo(notebook, ctx, n)

    server.add_tool(ask, description=ASK,
                    annotations=ToolAnnotations(title="Ask", read_only_hint=False, destructive_hint=False))
    server.add_tool(run, description=RUN, annotations=ToolAnnotations(
        title="Run code transactionally", read_only_hint=False, destructive_hint=False))
    server.add_tool(context, description=CONTEXT, annotations=ToolAnnotations(title="Context", read_only_hint=True))
    server.add_tool(fix, description=FIX, annotations=ToolAnnotations(
        title="Fix a failed cell", read_only_hint=False, destructive_hint=False))
    server.add_tool(undo, description=UNDO,
                    annotations=ToolAnnotations(title="Undo", read_only_hint=False, destructive_hint=True))
    return server
