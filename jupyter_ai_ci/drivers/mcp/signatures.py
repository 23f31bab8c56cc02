"""The tools' arguments and descriptions, written once for every MCP server that serves them.

Our own server (``server.py``) and Jupyter AI's (``jupyter_ai.py``, through jupyter-server-mcp)
build the same JSON schemas from these annotations, so an agent sees one ``run`` wherever it
meets it.  No ``mcp`` import here: Jupyter AI 3.2's server runs on the 1.x SDK.
"""

from typing import Annotated, Literal

from pydantic import Field

Notebook = Annotated[str, Field(description="The notebook's path under the server's root, e.g. analysis.ipynb")]
Request = Annotated[str, Field(description="What to do or find out, in words")]
Retries = Annotated[int | None, Field(ge=0, le=10, description="Fix attempts after a failure")]
Candidates = Annotated[int | None, Field(ge=1, le=5, description=(
    "Candidates that must agree; default: the server's AICISettings.candidates ('auto' unless set: 2 for a "
    "question about data on the managed local model, else 1; see docs/guide.md)"))]
Steps = Annotated[int | None, Field(ge=1, le=10, description="Steps the request may take")]
Code = Annotated[str, Field(description="Python code to execute")]
Preview = Annotated[str, Field(description="A request, to see what it would send")]
Cell = Annotated[str, Field(description="The failed cell's id; default: the last cell with an error output")]
Verdict = Annotated[Literal["accept", "reject"] | None, Field(
    description="Your decision on the fix offered: accept keeps it, reject rolls it back")]
HowMany = Annotated[int, Field(ge=1, le=50, description="How many requests to take back")]

ASK = """Have jupyter-ai-ci's model write code for the request, run it in the notebook's kernel,
fix it from the traceback, and append the cells that worked to the notebook: the same run
as %%ask. Failed attempts are rolled back. Returns the status (done, not sure, failed, not
answered), each attempt, the code applied, its outputs and the answer in words."""

RUN = """Execute code in the notebook's kernel transactionally, with no model: 'committed' with
its outputs (and the code appended as a cell), or 'rolled back' with the traceback and what
was undone. Risky code (shell, deletes, network...) is asked about or refused by the
person's policy."""

CONTEXT = """What jupyter-ai-ci's model would be told about the notebook and its kernel (variables,
data files, recent cells, the last error), secrets masked. Reads only."""

FIX = """Fix a cell of the notebook that failed: jupyter-ai-ci's model rewrites the cell from its error
output and the kernel's state, and the rewrite runs in the kernel as a transaction (retried from
its traceback), so what is offered has run without error. Returns the diff and the fix's outputs,
held until you call fix again with decision='accept' (the kernel keeps what it did and the cell
holds the fix) or decision='reject' (rolled back). Other calls on the notebook wait for that."""

UNDO = """Take back the last n requests (ask or run) in the notebook: the kernel's names, process
state and files as they were before, their cells removed. Refused, with the reason, when a
later cell changed what they made."""
