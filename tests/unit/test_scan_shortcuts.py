"""The scan's shortcuts change no verdict: generated code is parsed once per attempt,
code without IPython syntax skips IPython's transformer and parses to the same tree, and
one regex finds the same risky-call pattern as trying each in turn."""

from __future__ import annotations

import ast
from fnmatch import fnmatchcase

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from jupyter_ai_ci.core.loop import agent_loop
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.events import ErrorInfo, ExecutionResult, TransactionReport
from jupyter_ai_ci.model.client import ScriptedClient
from jupyter_ai_ci.run.drive import drive
from jupyter_ai_ci.safety import astutil
from jupyter_ai_ci.safety.risktable import RISKY_CALLS, risky_call
from jupyter_ai_ci.safety.transaction import Transaction

PLAIN = [
    "x = 42",
    "import pandas as pd\ndf = pd.read_csv('sales.csv')\ndf.head()",
    "def f(a, b=2):\n    return a // b\n\nprint(f(7))",
    "totals = {k: v for k, v in rows}\nif totals and x == 1:\n    pass",
    "s = 'no magic here'\nt = \"In the string\"",
    "",
]
IPYTHON = [
    "%timeit x = 1",
    "!ls -la",
    "files = !ls",
    "x = %pwd",
    "df?",
    "%%bash\necho hi",
    "  x = 1\n  y = 2",  # indented as pasted
    "\n\nx = 1",  # leading blank lines
    ">>> x = 1\n>>> y = x",  # a pasted session
    "In [1]: x = 1",
    "/print 1",  # autocall
    "if a != b:\n    pass",  # "!" in an operator: the transformer decides
    "df = (df\n      .dropna())",
]


@pytest.mark.parametrize("code", PLAIN + IPYTHON)
def test_parsed_as_ipython_transforms_it(code: str) -> None:
    expected = compile(TransformerManager().transform_cell(code), "<cell>", "exec",  # type: ignore[no-untyped-call]
                       flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    assert ast.dump(astutil.parse_cell.__wrapped__(code)) == ast.dump(expected)


@pytest.mark.parametrize("code", PLAIN)
def test_plain_python_skips_the_transformer(code: str) -> None:
    assert astutil.transform(code) is code


class TransactionExecutor:
    """Runs code in a dict, with the checkpoint the shell executor makes."""

    def __init__(self) -> None:
        self.ns: dict[str, object] = {}
        self.transaction = Transaction(self.ns)

    def execute(self, code: str) -> ExecutionResult:
        try:
            exec(code, self.ns)  # noqa: S102 - scripted test code
        except Exception as exc:  # noqa: BLE001
            return ExecutionResult(error=ErrorInfo(type(exc).__name__, str(exc), f"{type(exc).__name__}: {exc}"))
        return ExecutionResult()

    def checkpoint(self, code: tuple[str, ...]) -> TransactionReport:
        return self.transaction.begin(code)

    def rollback(self) -> TransactionReport:
        return self.transaction.rollback()

    def commit(self) -> None:
        self.transaction.commit()


def test_each_block_is_parsed_once_per_attempt() -> None:
    # Syntax check, risk scan and the checkpoint's may-change scan all read the same trees.
    replies = ["```python\ny = undefined_name\n```\n```python\nz = 2\n```", "```python\ny = 1\n```"]
    astutil.parse_cell.cache_clear()
    outcome = drive(agent_loop("do it", "", LoopSettings()), ScriptedClient(replies), TransactionExecutor())
    assert outcome.status == "success" and len(outcome.attempts) == 2
    info = astutil.parse_cell.cache_info()
    assert info.misses == 3  # three blocks in two attempts
    assert info.hits >= 3  # read again by the checkpoint


CALLED = ["os.system", "os.execvp", "os.forkpty", "subprocess.run", "shutil.rmtree", "p.unlink", "<expr>.rmdir",
          "a.b.rmtree", "socket.socket", "urllib.request.urlopen", "eval", "evaluate", "exit", "sys.exit",
          "sys.modules.pop", "get_ipython().system", "get_ipython().getoutput", "m.exec_module", "pd.read_csv",
          "os.path.join", "os_system", "requests", "requests.get", "ctypes.CDLL", ""]


@pytest.mark.parametrize("name", CALLED)
def test_one_regex_finds_the_first_matching_pattern(name: str) -> None:
    first = next((entry for entry in RISKY_CALLS if fnmatchcase(name, entry[0])), None)
    assert risky_call(name) == first
