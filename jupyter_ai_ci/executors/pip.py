"""Installing a missing package into the kernel's own environment, for every executor.

The loop decides *whether* to install (``Install``, after approval); this
module does it the same way wherever the kernel is.  The magic runs ``%pip``
in its own shell (``ShellExecutor.install``, judged by ``judged``); the
command line and the sidebar are outside the kernel, so they evaluate
``expression(package)`` as a silent user expression and the kernel runs pip
with its own interpreter (what ``%pip`` does), answering as JSON.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from jupyter_ai_ci import inkernel
from jupyter_ai_ci.events import ErrorInfo, ExecutionResult

INSTALL_TIMEOUT = 900.0  # seconds: downloads can be slow, but never forever
# A package name as pip takes it (no options, URLs or paths): the loop only asks for names
# from a ModuleNotFoundError, and the kernel checks again before running anything.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def judged(result: ExecutionResult) -> ExecutionResult:
    """``%pip`` reports a failed install in its output, not as an exception: make it one."""
    if result.ok and "ERROR:" in result.output:
        return _failed(result.output)
    return result


def _failed(output: str) -> ExecutionResult:
    """A failed install, named by pip's ``ERROR:`` line (else its last line)."""
    lines = output.strip().splitlines() or ["pip failed"]
    line = next((x for x in lines if "ERROR:" in x), lines[-1])
    return ExecutionResult(output=output, error=ErrorInfo("InstallError", line.strip()[:300], output))


def expression(package: str) -> str:
    return inkernel.call("jupyter_ai_ci.executors.pip", package)  # never a look-alike from the working directory


def kernel_side(package: str) -> str:
    """Runs inside the kernel: ``python -m pip install PACKAGE`` with the kernel's interpreter."""
    import importlib
    import subprocess
    import sys

    if not _NAME.match(package):
        return json.dumps({"ok": False, "output": f"ERROR: {package!r} is not a package name"})
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", package],
                              capture_output=True, text=True, timeout=INSTALL_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return json.dumps({"ok": False, "output": f"ERROR: pip did not finish within {INSTALL_TIMEOUT:g} s"})
    importlib.invalidate_caches()  # so the re-run's import sees the new package
    return json.dumps({"ok": done.returncode == 0, "output": (done.stdout + done.stderr)[-4000:]})


def result_from_reply(user_expression: Mapping[str, Any]) -> ExecutionResult:
    """The install's ``ExecutionResult`` from the kernel's ``user_expressions`` entry."""
    if user_expression.get("status") != "ok":
        why = f"{user_expression.get('ename', 'Error')}: {user_expression.get('evalue', '')}"
        return ExecutionResult(error=ErrorInfo("InstallError", f"the kernel could not install ({why})", why))
    try:
        data = json.loads(ast.literal_eval(user_expression["data"]["text/plain"]))
        output, ok = str(data.get("output", "")), data.get("ok") is True
    except (ValueError, SyntaxError, KeyError, TypeError, AttributeError):
        return ExecutionResult(error=ErrorInfo("InstallError", "the kernel's answer was unreadable", ""))
    return ExecutionResult(output=output) if ok else _failed(output)
