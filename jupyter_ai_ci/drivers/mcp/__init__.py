"""The MCP server: the run as tools any agent can call (``jupyter ai-ci mcp``, docs/mcp.md).

A fourth driver of the one run: ``ask`` is ``%%ask``'s run, ``run`` the model's transaction
for an agent's own code, ``context`` what the model would be told, ``fix`` the panel's Fix,
``undo`` ``%ask undo``.  Served over stdio (``app.py``) and by Jupyter AI's jupyter-server-mcp
(``jupyter_ai.py``).
Built on the official ``mcp`` SDK; this package does only I/O and presentation.
"""
