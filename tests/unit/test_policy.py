"""The policy's pure checks: syntax, the risk scan, decisions, missing modules."""

from __future__ import annotations

import pytest

from jupyter_ai_ci.events import ErrorInfo
from jupyter_ai_ci.safety.astutil import parse_cell
from jupyter_ai_ci.safety.missing import missing_module
from jupyter_ai_ci.safety.policy import (
    PolicySettings,
    decide,
    install_allowed,
    scan,
    scan_trees,
    syntax_error,
)


def kinds(code: str) -> set[tuple[str, str]]:
    return {(r.kind, r.name) for r in scan([code]).risks}


@pytest.mark.parametrize("code, expected", [
    ("import os\nos.system('ls')", ("process", "os.system")),
    ("import subprocess as sp\nsp.run(['ls'])", ("process", "subprocess.run")),
    ("from subprocess import check_output\ncheck_output('ls')", ("process", "subprocess.check_output")),
    ("import pty\npty.spawn('sh')", ("process", "pty.spawn")),
    ("import os\nos.remove('a.txt')", ("delete", "os.remove")),
    ("import shutil\nshutil.rmtree('data')", ("delete", "shutil.rmtree")),
    ("from pathlib import Path\nPath('a').unlink()", ("delete", "<expr>.unlink")),
    ("open('/etc/hosts', 'w')", ("write", "open(w)")),
    ("open('../up.txt', mode='a')", ("write", "open(a)")),
    ("open(path, 'wb')", ("write", "open(wb)")),
    ("import requests\nrequests.get('http://x')", ("network", "requests.get")),
    ("import urllib.request\nurllib.request.urlopen('http://x')", ("network", "urllib.request.urlopen")),
    ("import socket\nsocket.create_connection(('h', 1))", ("network", "socket.create_connection")),
    ("eval('1+1')", ("eval", "eval")),
    ("exec('x = 1')", ("eval", "exec")),
    ("import ctypes\nctypes.CDLL('libc.so.6')", ("ctypes", "ctypes.CDLL")),
    ("import sys\nsys.modules['json'] = None", ("modules", "sys.modules")),
    ("import sys\ndel sys.modules['json']", ("modules", "sys.modules")),
    ("import sys\nsys.modules.pop('json')", ("modules", "sys.modules.pop")),
    ("import builtins\nbuiltins.print = None", ("builtins", "builtins")),
    ("exit()", ("exit", "exit")),
    ("import sys\nsys.exit(1)", ("exit", "sys.exit")),
    ("import os\nos._exit(0)", ("exit", "os._exit")),
    ("!rm -rf data", ("shell", "get_ipython().system")),
    ("files = !ls", ("shell", "get_ipython().getoutput")),
    ("%system ls", ("shell", "%system")),
    ("%%bash\nrm -rf data", ("shell", "%bash")),
    ("%reset -f", ("shell", "%reset")),
])
def test_scan_flags_risky_code(code: str, expected: tuple[str, str]) -> None:
    assert expected in kinds(code)


@pytest.mark.parametrize("code", [
    "import pandas as pd\ndf = pd.read_csv('sales.csv')\ndf.groupby('region').sum()",
    "open('data.csv').read()",
    "with open('out/result.txt', 'w') as f:\n    f.write('x')",  # relative: the user's folder
    "import numpy as np\nnp.random.default_rng(0).normal(size=10)",
    "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])",
    "setattr(obj, 'x', 1)",
    "d = {}\nd.pop('a', None)",
])
def test_scan_leaves_ordinary_code_alone(code: str) -> None:
    assert scan([code]).risks == ()


def test_decide_by_mode() -> None:
    risky = scan(["import os\nos.system('ls')"])
    plain = scan(["x = 1"])
    assert decide(PolicySettings("auto"), risky).verdict == "run"
    assert decide(PolicySettings("ask-risky"), risky).verdict == "ask"
    assert decide(PolicySettings("ask-risky"), plain).verdict == "run"
    ask_all = decide(PolicySettings("ask"), plain)
    assert ask_all.verdict == "ask" and "every attempt" in ask_all.reasons[0]
    assert "os.system" in decide(PolicySettings(), risky).reasons[0]


def test_allow_list_removes_a_flag_by_kind_or_name() -> None:
    risky = scan(["import requests\nrequests.get('http://x')"])
    assert decide(PolicySettings(allow=("network",)), risky).verdict == "run"
    assert decide(PolicySettings(allow=("requests.*",)), risky).verdict == "run"
    assert decide(PolicySettings(allow=("subprocess.*",)), risky).verdict == "ask"


def test_deny_list_refuses_in_every_mode_even_unflagged_calls() -> None:
    found = scan(["import pandas as pd\npd.read_sql('select 1', con)"])
    policy = PolicySettings("auto", deny=("pandas.read_sql",))
    decision = decide(policy, found)
    assert decision.verdict == "refuse" and "pandas.read_sql" in decision.reasons[0]
    assert decide(PolicySettings("auto", deny=("requests",)),
                  scan(["import requests"])).verdict == "refuse"
    assert decide(PolicySettings("auto", allow=("network",), deny=("network",)),
                  scan(["import socket\nsocket.socket()"])).verdict == "refuse"


def test_a_denied_call_is_named_once() -> None:
    # Found by a newcomer: "os.system is on the deny list (os.system); os.system: runs a shell
    # command (line 2) — denied (os.system)".
    found = scan(["import os\nos.system('ls')"])
    assert decide(PolicySettings("auto", deny=("os.system",)), found).reasons == ("os.system is on the deny list",)
    assert decide(PolicySettings("auto", deny=("os.*",)), found).reasons == ("os.system is on the deny list (os.*)",)
    assert decide(PolicySettings("auto", deny=("process",)), found).reasons == (
        "os.system: runs a shell command (line 2) — denied",)


def test_deny_list_sees_through_indirect_imports_and_aliases() -> None:
    policy = PolicySettings("auto", deny=("os.system",))
    for code in ("import importlib\nimportlib.import_module('os').system('ls')",
                 "import os\nrun = getattr(os, 'system')\nrun('ls')",
                 "import os\nsh = os.system\nsh('ls')"):
        assert decide(policy, scan([code])).verdict == "refuse", code


def test_names_bound_in_one_block_are_known_in_the_next() -> None:
    blocks = ["from pathlib import Path\nout = Path.home() / 'notes.txt'", "out.write_text('x')"]
    assert [r.describe() for r in scan(blocks).risks] == [
        "out.write_text: writes outside the working directory: '~/notes.txt' (line 1)"]
    assert scan(["out = 'results/a.csv'", "df.to_csv(out)"]).risks == ()


def test_a_name_bound_twice_counts_as_computed() -> None:
    # The second binding could be anything by the time the write runs.
    found = scan(["out = 'a.csv'\nout = input()\ndf.to_csv(out)"])
    assert [r.why for r in found.risks] == ["writes to a computed path: out"]


def test_syntax_error_names_the_block_and_line() -> None:
    assert syntax_error(["x = 1", "y = (2"]) is not None
    index, error = syntax_error(["x = 1", "def f(:\n    pass"]) or (None, None)
    assert index == 1 and error is not None and error.ename == "SyntaxError" and error.lineno == 1
    assert syntax_error(["!ls\n%time x = 1\nawait something()"]) is None


@pytest.mark.parametrize("module, package", [
    ("sklearn", "scikit-learn"), ("sklearn.linear_model", "scikit-learn"), ("cv2", "opencv-python"),
    ("PIL", "pillow"), ("bs4", "beautifulsoup4"), ("yaml", "pyyaml"), ("polars", "polars"),
])
def test_missing_module_maps_import_names_to_packages(module: str, package: str) -> None:
    error = ErrorInfo("ModuleNotFoundError", f"No module named '{module}'", "")
    found = missing_module(error)
    assert found is not None and found.package == package and found.module == module.split(".")[0]


def test_missing_module_ignores_other_errors_and_odd_names() -> None:
    assert missing_module(ErrorInfo("ImportError", "cannot import name 'x'", "")) is None
    assert missing_module(ErrorInfo("ModuleNotFoundError", "No module named '_private'", "")) is None
    assert missing_module(None) is None


def test_install_needs_an_allow_entry() -> None:
    assert not install_allowed(PolicySettings("auto"), "pillow")
    assert install_allowed(PolicySettings(allow=("pip:pillow",)), "pillow")
    assert install_allowed(PolicySettings(allow=("pip:*",)), "scikit-learn")


def test_relative_writes_are_judged_from_where_the_kernel_is() -> None:
    """Issue #30, item 7: the snapshot says where the kernel's working directory is, from the
    notebook's folder; a relative write from a kernel moved out of it leaves the folder."""
    trees = [parse_cell("df.to_csv('summary.csv')\nopen('../notes.txt', 'a')")]
    assert scan_trees(trees, "").risks[0].name == "open(a)"  # at home: only the '..' write
    moved_out = [r.describe() for r in scan_trees(trees, "..").risks]
    assert any("'summary.csv' (the kernel's working directory is at '..' from" in r for r in moved_out)
    assert [r.name for r in scan_trees(trees, "data").risks] == []  # data/../notes.txt stays inside
    assert len(scan_trees(trees, "?").risks) == 2  # outside, unreachably: every relative write
