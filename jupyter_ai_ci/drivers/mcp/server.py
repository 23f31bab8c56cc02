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
from pydantic import Field

from jupyter_ai_ci import __version__
from jupyter_ai_ci.drivers.mcp import results as r
from jupyter_ai_ci.drivers.mcp.notebooks import Notebooks
from jupyter_ai_ci.drivers.mcp.progress import HOW_TO_ALLOW
from jupyter_ai_ci.drivers.mcp.tools import Tools

Notebook = Annotated[str, Field(description="The notebook's path under the server's root, e.g. analysis.ipynb")]

INSTRUCTIONS = """jupyter-ai-ci runs code in a Jupyter notebook's live kernel transactionally: code that raises is
rolled back (names, process state, files), so a failed try leaves nothing half done. `run` executes
your code that way; `ask` has jupyter-ai-ci's own model write, run, check and fix code for a request;
`context` shows what that model would be told; `undo` takes back the last requests. Every result
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

    async def ask(request: Annotated[str, Field(description="What to do or find out, in words")],
                  notebook: Notebook, ctx: Context,
                  retries: Annotated[int | None, Field(ge=0, le=10, description="Fix attempts after a failure")] = None,
                  candidates: Annotated[int | None, Field(ge=1, le=5, description="Candidates that must agree")] = None,
                  steps: Annotated[int | None, Field(ge=1, le=10, description="Steps the request may take")] = None,
                  ) -> Annotated[CallToolResult, r.AskResult]:
        """Have jupyter-ai-ci's model write code for the request, run it in the notebook's kernel,
        fix it from the traceback, and append the cells that worked to the notebook: the same run
        as %%ask. Failed attempts are rolled back. Returns the status (done, not sure, failed, not
        answered), each attempt, the code applied, its outputs and the answer in words."""
        return await tools.ask(request, notebook, ctx, retries, candidates, steps)

    async def run(code: Annotated[str, Field(description="Python code to execute")], notebook: Notebook,
                  ctx: Context) -> Annotated[CallToolResult, r.RunCodeResult]:
        """Execute code in the notebook's kernel transactionally, with no model: 'committed' with
        its outputs (and the code appended as a cell), or 'rolled back' with the traceback and what
        was undone. Risky code (shell, deletes, network...) is asked about or refused by the
        person's policy."""
        return await tools.run(code, notebook, ctx)

    async def context(notebook: Notebook, ctx: Context,
                      request: Annotated[str, Field(description="A request, to see what it would send")] = "",
                      ) -> Annotated[CallToolResult, r.ContextResult]:
        """What jupyter-ai-ci's model would be told about the notebook and its kernel (variables,
        data files, recent cells, the last error), secrets masked. Reads only."""
        return await tools.context(notebook, ctx, request)

    async def undo(notebook: Notebook, ctx: Context,
                   n: Annotated[int, Field(ge=1, le=50, description="How many requests to take back")] = 1,
                   ) -> Annotated[CallToolResult, r.UndoResult]:
        """Take back the last n requests (ask or run) in the notebook: the kernel's names, process
        state and files as they were before, their cells removed. Refused, with the reason, when a
        later cell changed what they made."""
        return await tools.undo(notebook, ctx, n)

    server.add_tool(ask, annotations=ToolAnnotations(title="Ask", read_only_hint=False, destructive_hint=False))
    server.add_tool(run, annotations=ToolAnnotations(title="Run code transactionally", read_only_hint=False,
                                                     destructive_hint=False))
    server.add_tool(context, annotations=ToolAnnotations(title="Context", read_only_hint=True))
    server.add_tool(undo, annotations=ToolAnnotations(title="Undo", read_only_hint=False, destructive_hint=True))
    return server
