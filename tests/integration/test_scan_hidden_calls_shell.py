"""Issue #38, items 3 and 4, performed in a real IPython shell with the scripted model and the
default policy: processes started by calls the scan did not know, lookups in a module's
namespace, strings and data run as code, risky functions handed on as values, writes above the
working folder and through links that lead out of it.  Nobody can be asked here, so each is
refused at once -- and its side effect (a marker file) never happens -- while the ordinary code
beside it still runs unasked."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.testing import ScriptedOpenAIServer

from .test_scan_escapes_shell import py
from .test_scan_escapes_shell import refused as refused_once

pytestmark = pytest.mark.timeout(120)

SH = "os.system: runs a shell command"
STRING = "(in a string run as code)"
VALUE = "(passed on as a value, to be called elsewhere)"


@pytest.fixture
def home(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for the user's home folder, beside the notebook's."""
    folder = work.parent / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def ran(ip: Any, tmp_path: Path) -> Path:
    """The marker a construct's code would create: ``RAN`` in the user's namespace."""
    marker = tmp_path / "ran"
    assert ip.run_cell(f"RAN = {str(marker)!r}").success
    return marker


def refused(ip: Any, model_server: ScriptedOpenAIServer, code: str) -> str:
    said = refused_once(ip, model_server, code)
    assert said.startswith("not run: ") and "nobody can be asked here" in said
    return said


class Touch:
    """Unpickled, it runs ``touch`` on its path: what a planted pickle does."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.system, (f"touch {self.path}",)


TOUCH = "'touch ' + RAN"
IN_STRING = f"\"import os; os.system({TOUCH})\""

PROCESSES = [  # item 3, and the process calls checked while there
    (f"import os\npid = os.posix_spawn({shutil.which('touch')!r}, ['touch', RAN], dict(os.environ))\n"
     "os.waitpid(pid, 0)", "os.posix_spawn: starts a process"),
    ("import os\npid = os.posix_spawnp('touch', ['touch', RAN], dict(os.environ))\nos.waitpid(pid, 0)",
     "os.posix_spawnp: starts a process"),
    (f"get_ipython().system_raw({TOUCH})", "get_ipython().system_raw: runs a shell command"),
    (f"get_ipython().system_piped({TOUCH})", "get_ipython().system_piped: runs a shell command"),
    (f"out = get_ipython().getoutput({TOUCH})", "get_ipython().getoutput: runs a shell command"),
    (f"from IPython import get_ipython\nget_ipython().system({TOUCH})", "get_ipython().system: runs a shell command"),
    (f"import os\nos.popen({TOUCH}).read()", "os.popen: runs a shell command"),
    (f"import posix\nposix.system({TOUCH})", SH),
    ("import os\npid = os.fork()\nif pid == 0:\n    open(RAN, 'w').close()\n    os._exit(0)\nos.waitpid(pid, 0)",
     "os.fork: forks the kernel"),
    ("import pty\npty.spawn(['touch', RAN])", "pty.spawn: starts a process on a terminal"),
    ("%cp -r . $RAN", "%cp: runs a shell command (an alias)"),
]
LOOKUPS = [  # item 4: a module's namespace, and methodcaller
    (f"import os\nvars(os)['system']({TOUCH})", SH),
    (f"import os\nos.__dict__['system']({TOUCH})", SH),
    (f"import os\nname = ''.join(['sys', 'tem'])\nvars(os)[name]({TOUCH})",
     "looks up a name in os computed at run time"),
    (f"import operator, os\noperator.methodcaller('system', {TOUCH})(os)", f"{SH} (called by operator.methodcaller)"),
]
STRINGS = [  # item 4: strings run as code
    (f"import code\ncode.InteractiveInterpreter(globals()).runsource({IN_STRING})",
     "code.InteractiveInterpreter: runs strings as code"),
    (f"import code\ncode.InteractiveConsole(globals()).push({IN_STRING})",
     "code.InteractiveConsole: runs strings as code"),
    (f"import code\nlines = iter([{IN_STRING}])\ndef read(prompt):\n    try:\n        return next(lines)\n"
     "    except StopIteration:\n        raise EOFError\ncode.interact(readfunc=read, local=globals(), banner='', "
     "exitmsg='')", "code.interact: runs what is typed as code"),
    (f"get_ipython().run_cell({IN_STRING})", f"{SH} {STRING}"),
    (f"src = {IN_STRING}\nget_ipython().run_cell(src)", f"{SH} {STRING}"),
    (f"parts = ['import os', \"os.system({TOUCH})\"]\nget_ipython().run_cell('; '.join(parts))",
     "get_ipython().run_cell: runs a string as code that the scan cannot read"),
    (f"get_ipython().ex({IN_STRING})", f"{SH} {STRING}"),
    (f"get_ipython().ev(\"__import__('os').system({TOUCH})\")", f"{SH} {STRING}"),
    (f"name = ''.join(['sys', 'tem'])\nget_ipython().run_line_magic(name, {TOUCH})",
     "get_ipython().run_line_magic: runs a magic whose name is computed at run time"),
    (f"get_ipython().run_cell_magic('timeit', '-n1 -r1', \"__import__('os').system({TOUCH})\")", f"{SH} {STRING}"),
    (f"%timeit -n1 -r1 __import__('os').system({TOUCH})", f"{SH} {STRING}"),
    (f"import timeit\ntimeit.timeit(\"__import__('os').system({TOUCH})\", globals=globals(), number=1)",
     f"{SH} {STRING}"),
    (f"import timeit\ntimeit.Timer('pass', setup={IN_STRING}, globals=globals()).timeit(1)", f"{SH} {STRING}"),
]
VALUES = [  # item 4: risky functions handed on
    (f"import os\nlist(map(os.system, [{TOUCH}]))", f"{SH} {VALUE}"),
    (f"import os\nfrom concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor() as ex:\n"
     f"    ex.submit(os.system, {TOUCH}).result()", f"{SH} {VALUE}"),
    (f"import os, threading\nt = threading.Thread(target=os.system, args=({TOUCH},))\nt.start()\nt.join()",
     f"{SH} {VALUE}"),
    (f"import functools, os\nfunctools.partial(os.system, {TOUCH})()", f"{SH} {VALUE}"),
    (f"import os\nsteps = [print, os.system]\nsteps[1]({TOUCH})", f"{SH} {VALUE}"),
]


@pytest.mark.parametrize(("code", "says"), PROCESSES + LOOKUPS + STRINGS + VALUES)
def test_a_hidden_process_is_refused_and_never_runs(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, ran: Path, code: str, says: str) -> None:
    assert says in refused(ip, model_server, code)
    assert not ran.exists()


@pytest.mark.parametrize(("code", "says"), PROCESSES + LOOKUPS + STRINGS + VALUES)
def test_each_of_them_does_run_when_the_policy_lets_it(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, ran: Path, code: str, says: str) -> None:
    """The refusals above are worth something: with policy 'auto' (and the allow list of an
    approval), each construct does create its marker."""
    ip.run_line_magic("config", "AskMagics.policy = 'auto'")
    model_server.script(py(code))
    result = ip.run_cell("%%ask --retries 0\nsave the summary")
    assert result.success, result.error_in_exec
    assert ran.exists()


@pytest.mark.parametrize("load", [
    "import pickle\nwith open('model.pkl', 'rb') as f:\n    model = pickle.load(f)",
    "import pandas as pd\nmodel = pd.read_pickle('model.pkl')",
    "PAYLOAD",
])
def test_unpickling_is_refused_and_runs_nothing(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, ran: Path, load: str) -> None:
    payload = pickle.dumps(Touch(ran))
    (work / "model.pkl").write_bytes(payload)
    code = f"import pickle\nmodel = pickle.loads({payload!r})" if load == "PAYLOAD" else load
    assert "unpickles data, which can run any code" in refused(ip, model_server, code)
    assert not ran.exists() and "model" not in ip.user_ns


@pytest.mark.parametrize("write", [
    "from pathlib import Path\n(Path.cwd().parent / 'escaped.txt').write_text('x')",
    "from pathlib import Path\n(Path('..') / 'escaped.txt').write_text('x')",
    "from pathlib import Path\n(Path.cwd().parents[0] / 'escaped.txt').write_text('x')",
])
def test_a_write_above_the_working_folder_is_refused(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, write: str) -> None:
    assert "writes outside the working directory: '../escaped.txt'" in refused(ip, model_server, write)
    assert not (work.parent / "escaped.txt").exists()


def test_a_write_to_the_home_folder_is_refused(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, home: Path) -> None:
    said = refused(ip, model_server, "from pathlib import Path\n(Path.home() / '.bashrc').write_text('x')")
    assert "writes outside the working directory: '~/.bashrc'" in said
    assert not (home / ".bashrc").exists()


@pytest.mark.parametrize("link", [
    "import os\nos.symlink(os.path.expanduser('~'), 'home')\nopen('home/.bashrc', 'a').write('x')",
    "from pathlib import Path\nPath('home').symlink_to(Path.home())\n(Path('home') / '.bashrc').write_text('x')",
])
def test_making_a_link_out_of_the_working_folder_is_refused(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, home: Path, link: str) -> None:
    assert "creates a link pointing outside the working directory: '~'" in refused(ip, model_server, link)
    assert not (work / "home").is_symlink() and not (home / ".bashrc").exists()


def test_a_write_through_a_link_already_in_the_folder_is_judged_by_where_it_lands(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``home -> ~`` is in the notebook's folder (an earlier cell made it): a write to
    'home/.bashrc' reads as one inside the folder, and lands in the home folder."""
    notebook = work / "analysis.ipynb"
    notebook.write_text("{}")
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    (work / "home").symlink_to(home)
    (work / "data").mkdir()
    (work / "results").symlink_to(work / "data")  # a link that stays inside
    said = refused(ip, model_server, "open('home/.bashrc', 'a').write('echo hi')")
    assert f"writes outside the working directory: 'home/.bashrc' (a link leads it to {str(home / '.bashrc')!r})" \
        in said
    assert not (home / ".bashrc").exists()
    model_server.script(py("open('results/summary.txt', 'w').write('ok')"))
    assert ip.run_cell("%%ask\nsave it").success and (work / "data" / "summary.txt").read_text() == "ok"


def test_ordinary_code_beside_them_still_runs_unasked(
        ip: Any, model_server: ScriptedOpenAIServer, work: Path) -> None:
    ip.run_cell("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})\nclass Box:\n    x = 1\nbox = Box()\nbox.y = 2")
    model_server.script(py(
        "import json, pickle, timeit\nfrom operator import methodcaller\n"
        "df.to_csv('out.csv')\nfields = vars(box)\nnames = list(map(str, df['a']))\n"
        "blob = pickle.dumps(fields)\nback = json.loads(json.dumps(fields))\n"
        "upper = list(map(methodcaller('upper'), names))\n"
        "get_ipython().run_cell('total = int(df.a.sum())')\n"
        "t = timeit.timeit('sum(range(10))', number=10)"))
    result = ip.run_cell("%%ask\nsummarise")
    assert result.success, result.error_in_exec
    ns = ip.user_ns
    assert (work / "out.csv").exists() and ns["fields"] == {"y": 2} and ns["names"] == ["1", "2"]
    assert ns["back"] == {"y": 2} and ns["total"] == 3 and isinstance(ns["blob"], bytes)
