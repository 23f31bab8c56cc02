"""Executors run code and report what happened as data (``ExecutionResult``).

``shell.ShellExecutor`` runs in the live IPython shell (the magic);
kernel and frontend executors serve the command line and the sidebar.
"""

from typing import Protocol

from jupyter_ai_ci.events import ExecutionResult


class Executor(Protocol):
    def execute(self, code: str) -> ExecutionResult: ...


class AsyncExecutor(Protocol):
    async def aexecute(self, code: str) -> ExecutionResult: ...
