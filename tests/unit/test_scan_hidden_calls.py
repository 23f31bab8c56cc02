"""Issue #38, items 3 and 4: process calls the scan did not know, and more ways past it -- lookups in
a module's namespace, strings and data run as code, risky functions handed on as values, writes
above the working folder and through links.  Each row is judged by the scan and by the default
policy's decision, both ways: what must be asked about, and the ordinary code that must not be.
"""

from __future__ import annotations

import ast
import os
import pickle
import subprocess
from pathlib import Path

import pytest

from jupyter_ai_ci.safety import policy
from jupyter_ai_ci.safety.kernelnames import risky_bindings
from jupyter_ai_ci.safety.policy import PolicySettings, decide, scan, scan_trees

UNREAD = "runs a string as code that the scan cannot read"
VALUE = "(passed on as a value, to be called elsewhere)"
IN_STRING = "(in a string run as code)"
PAYLOAD = pickle.dumps(b"data")
SH = "os.system: runs a shell command"

FLAGGED: list[tuple[str, str]] = [
    # Item 3: processes started by calls the table did not have.
    ("import os\nos.posix_spawn('/bin/sh', ['sh', '-c', 'id'], os.environ)", "os.posix_spawn: starts a process"),
    ("import os\nos.posix_spawnp('sh', ['sh', '-c', 'id'], os.environ)", "os.posix_spawnp: starts a process"),
    ("from os import posix_spawnp\nposix_spawnp('id', ['id'], {})", "os.posix_spawnp: starts a process"),
    ("import posix\nposix.system('id')", "os.system: runs a shell command"),  # what os imports it from
    ("get_ipython().system_raw('id')", "get_ipython().system_raw: runs a shell command"),
    ("ip = get_ipython()\nip.system_raw('id')", "get_ipython().system_raw: runs a shell command"),
    ("from IPython import get_ipython\nget_ipython().system('id')", "get_ipython().system: runs a shell command"),
    ("import IPython\nIPython.get_ipython().getoutput('id')", "get_ipython().getoutput: runs a shell command"),
    ("get_ipython().system_piped('id')", "get_ipython().system_piped: runs a shell command"),
    ("from IPython.utils.process import getoutput\ngetoutput('id')", "runs a shell command"),
    # ... and those it had, checked while there.
    ("import os\nos.fork()", "os.fork: forks the kernel"),
    ("import os\nos.forkpty()", "os.forkpty: forks the kernel"),
    ("import os\nos.execvp('sh', ['sh'])", "os.execvp: replaces the kernel process"),
    ("import pty\npty.spawn('sh')", "pty.spawn: starts a process on a terminal"),
    ("import os\nos.popen('id').read()", "os.popen: runs a shell command"),
    ("get_ipython().getoutput('id')", "get_ipython().getoutput: runs a shell command"),
    # IPython's shell aliases and the magics that run files or make aliases.
    ("get_ipython().run_line_magic('cp', '/etc/passwd .')", "%cp: runs a shell command (an alias)"),
    ("get_ipython().run_line_magic('ls', '$(id)')", "%ls: runs a shell command (an alias)"),
    ("get_ipython().run_line_magic('alias', 'x id')", "%alias: makes a magic that runs a shell command"),
    ("get_ipython().run_line_magic('run', 'helper.py')", "%run: runs a file as code"),
    ("get_ipython().run_cell_magic('python3', '', 'import os')", "%python3: runs a separate Python process"),
    # Item 4: lookups in a module's namespace.
    ("import os\nvars(os)['system']('id')", "os.system: runs a shell command"),
    ("import os\nos.__dict__['system']('id')", "os.system: runs a shell command"),
    ("import os\nvars(os).get('system')('id')", "os.system: runs a shell command"),
    ("import os\nsh = vars(os)['system']\nsh('id')", "os.system: runs a shell command"),
    ("import builtins\nbuiltins.__dict__['exec']('x = 1')", "exec: executes a string as code"),
    ("import builtins\nbuiltins.__dict__.get('exec')('x = 1')", "exec: executes a string as code"),
    ("import builtins\nfor k, f in builtins.__dict__.items():\n    pass", "vars(builtins): reads the names of"),
    ("import os\nvars(os)[name]('id')", "vars(os)[…]: looks up a name in os computed at run time"),
    ("import os\nos.__dict__.get(name)('id')", "looks up a name in os computed at run time"),
    ("import subprocess\nfor k, f in vars(subprocess).items():\n    pass",
     "vars(subprocess): reads the names of subprocess"),
    ("import operator, os\noperator.methodcaller('system', 'id')(os)",
     "os.system: runs a shell command (called by operator.methodcaller)"),
    ("from operator import methodcaller\nimport os\ncall = methodcaller('system', 'id')\ncall(os)",
     "os.system: runs a shell command (called by operator.methodcaller)"),
    ("from operator import methodcaller\nlist(map(methodcaller('system', 'id'), modules))",
     "operator.methodcaller('system'): runs a shell command"),
    ("from operator import methodcaller\nlist(map(methodcaller('unlink'), paths))",
     "operator.methodcaller('unlink'): deletes a file"),
    ("import operator, os\noperator.attrgetter('system')(os)('id')", "os.system: runs a shell command"),
    ("import pydoc\npydoc.locate('os.system')('id')", "os.system: runs a shell command"),
    ("import pkgutil\nrun = pkgutil.resolve_name('subprocess:run')", "imports 'subprocess.run' by a string"),
    # Strings run as code: read when the code shows them, asked about when it does not.
    ("import code\ncode.InteractiveInterpreter().runsource(src)", "code.InteractiveInterpreter: runs strings as code"),
    ("import code\ncode.InteractiveConsole().push('x = 1')", "code.InteractiveConsole: runs strings as code"),
    ("import code\ncode.interact()", "code.interact: runs what is typed as code"),
    ("get_ipython().run_cell(src)", f"get_ipython().run_cell: {UNREAD}: 'src'"),
    ("get_ipython().run_cell(\"import os; os.system('id')\")", f"{SH} {IN_STRING}"),
    ("cell = 'import os\\nos.system(1)'\nget_ipython().run_cell(cell)", f"{SH} {IN_STRING}"),
    ("get_ipython().run_cell(\"get_ipython().run_cell('import os; os.system(1)')\")", f"{SH} {IN_STRING}"),
    ("get_ipython().run_cell(\"!id\")", f"get_ipython().system: runs a shell command (!) {IN_STRING}"),
    ("get_ipython().ex(f'import {m}')", f"get_ipython().ex: {UNREAD}"),
    ("get_ipython().ev(expr)", f"get_ipython().ev: {UNREAD}: 'expr'"),
    ("get_ipython().ev(\"__import__('os').system('id')\")", f"{SH} {IN_STRING}"),
    ("get_ipython().run_cell(*cells)", UNREAD),
    ("get_ipython().run_cell_magic(name, '', 'id')", "runs a magic whose name is computed at run time"),
    ("get_ipython().run_line_magic(name, 'id')", "runs a magic whose name is computed at run time"),
    ("get_ipython().run_line_magic('timeit', line)", "runs a line or cell as code that the scan cannot read (%timeit)"),
    ("get_ipython().run_line_magic('timeit', \"-n1 -r 1 __import__('os').system('id')\")",
     f"{SH} {IN_STRING}"),
    ("get_ipython().run_cell_magic('timeit', '-n1 import os', \"os.system('id')\")",
     f"{SH} {IN_STRING}"),
    ("get_ipython().run_cell_magic('capture', 'out', \"import os; os.system('id')\")", f"{SH} {IN_STRING}"),
    ("get_ipython().magic(\"time __import__('os').system('id')\")", f"{SH} {IN_STRING}"),
    ("get_ipython().run_line_magic('time', 'import os; os.system(1')", "runs a string that does not parse as Python"),
    ("import timeit\ntimeit.timeit(\"__import__('os').system('id')\", number=1)", f"{SH} {IN_STRING}"),
    ("import timeit\ntimeit.timeit('x = 1', setup=\"import os; os.system('id')\")", f"{SH} {IN_STRING}"),
    ("from timeit import Timer\nTimer(stmt).timeit(1)", f"timeit.Timer: {UNREAD}: 'stmt'"),
    ("import timeit\ntimeit.repeat(setup=s)", f"timeit.repeat: {UNREAD}: 's'"),
    ("import timeit\ntimeit.main(['-s', 'import os', 'os.system(1)'])", "timeit.main: runs strings as code"),
    # Data run as code when it is deserialised.
    (f"import pickle\npickle.loads({PAYLOAD!r})", "pickle.loads: unpickles data, which can run any code"),
    ("import pickle\nwith open('model.pkl', 'rb') as f:\n    m = pickle.load(f)", "pickle.load: unpickles data"),
    ("import pickle\npickle.Unpickler(f).load()", "pickle.Unpickler: unpickles data"),
    ("import marshal\nmarshal.loads(data)", "marshal.loads: loads code objects from data"),
    ("import dill\ndill.loads(data)", "dill.loads: unpickles data"),
    ("import cloudpickle\ncloudpickle.loads(data)", "cloudpickle.loads: unpickles data"),
    ("import pandas as pd\ndf = pd.read_pickle('frame.pkl')", "pandas.read_pickle: unpickles data"),
    ("import joblib\nmodel = joblib.load('model.joblib')", "joblib.load: unpickles data"),
    ("import numpy as np\nnp.load('a.npy', allow_pickle=True)", "numpy.load: unpickles data"),
    ("import numpy as np\nnp.load('a.npy', None, True)", "numpy.load: unpickles data"),
    ("import torch\ntorch.load('m.pt', weights_only=False)", "torch.load: unpickles data"),
    ("import yaml\nyaml.load(text, Loader=yaml.Loader)", "yaml.load: builds the objects the data names"),
    ("import shelve\nshelve.open('cache')", "shelve.open: opens a shelf, whose values are unpickled"),
    # Risky functions handed on, to be called elsewhere.
    ("import os\nlist(map(os.system, commands))", f"{SH} {VALUE}"),
    ("import os\nexecutor.submit(os.system, 'id')", f"{SH} {VALUE}"),
    ("import os, threading\nthreading.Thread(target=os.system, args=('id',)).start()", f"{SH} {VALUE}"),
    ("import functools, os\nfunctools.partial(os.system, 'id')()", f"{SH} {VALUE}"),
    ("import os\nsteps = [print, os.system]\nsteps[1]('id')", f"{SH} {VALUE}"),
    ("import os\nsh = os.system\nlist(map(sh, commands))", f"{SH} {VALUE}"),
    ("import subprocess\nrun, n = subprocess.run, 0", f"subprocess.run: starts a process {VALUE}"),
    ("import subprocess\nglobals()['run'] = subprocess.run", f"subprocess.run: starts a process {VALUE}"),
    ("import subprocess\nfor run in [subprocess.run]:\n    pass", f"subprocess.run: starts a process {VALUE}"),
    ("import shutil\nimport atexit\natexit.register(shutil.rmtree, 'build')",
     f"shutil.rmtree: deletes a directory tree {VALUE}"),
    ("from pathlib import Path\nlist(map(Path.unlink, old_files))", f"pathlib.Path.unlink: deletes a file {VALUE}"),
    ("df['cmd'].apply(eval)", f"eval: evaluates a string as code {VALUE}"),
    ("def later(run=__import__('subprocess').run):\n    return run", VALUE),
    # Writes above the working folder and links that lead out of it.
    ("from pathlib import Path\n(Path.cwd().parent / 'x.txt').write_text('x')",
     "writes outside the working directory: '../x.txt'"),
    ("from pathlib import Path\n(Path.cwd().parents[1] / 'x.txt').write_text('x')",
     "writes outside the working directory: '../../x.txt'"),
    ("from pathlib import Path\nup = Path('.').resolve().parent\ndf.to_csv(up / 'x.csv')",
     "writes outside the working directory: '../x.csv'"),
    ("import os\nopen(os.path.join(os.path.dirname(os.getcwd()), 'x'), 'w')",
     "writes outside the working directory: '../x'"),
    ("from pathlib import Path\n(Path('..') / 'x.txt').write_text('x')", "writes outside the working directory"),
    ("from pathlib import Path\n(Path.home() / 'x.txt').write_text('x')", "writes outside the working directory"),
    ("import os\nos.symlink(os.path.expanduser('~'), 'home')",
     "os.symlink: creates a link pointing outside the working directory: '~'"),
    ("from pathlib import Path\nPath('home').symlink_to(Path.home())",
     "creates a link pointing outside the working directory: '~'"),
    ("import os\nos.symlink('../..', 'sub/up')", "creates a link pointing outside the working directory: 'sub/../..'"),
    ("import os\nos.link('/etc/passwd', 'pw')", "creates a link pointing outside the working directory: '/etc/passwd'"),
    ("from pathlib import Path\nPath('l').hardlink_to(target)", "creates a link pointing to a computed path: target"),
]

ALLOWED: list[str] = [
    "df.to_csv('out.csv')",
    "attrs = vars(obj)\nprint(attrs['x'], sorted(vars(obj)))",
    "names = list(map(str, values))",
    "import pickle\nblob = pickle.dumps(obj)",
    "import json\nd = json.loads(text)",
    "import json\nrows = list(map(json.loads, lines))",
    "import os\nnames = list(map(os.path.basename, files))",
    "lengths = sorted(words, key=len)",
    "import operator\ntotal = sum(map(operator.itemgetter(1), pairs))\nbest = max(rows, key=operator.attrgetter('x'))",
    "from operator import methodcaller\nlower = list(map(methodcaller('lower'), names))",
    "from operator import methodcaller\nclean = list(map(methodcaller('replace', ',', ''), cells))",
    "import subprocess\ntry:\n    pass\nexcept subprocess.CalledProcessError as e:\n    print(e)",
    "import socket\ntry:\n    pass\nexcept (socket.timeout, socket.gaierror):\n    pass",
    "from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor() as ex:\n"
    "    sizes = list(ex.map(len, chunks))",
    "import functools\nadd = functools.partial(sum, start=1)",
    "get_ipython().run_cell('x = 1 + 1')",
    "get_ipython().run_line_magic('timeit', '-n 10 sum(range(100))')",
    "get_ipython().run_cell_magic('timeit', '-r 3', 'df.sum()')",
    "get_ipython().run_line_magic('matplotlib', 'inline')",
    "get_ipython().run_line_magic('load_ext', 'autoreload')",
    "get_ipython().run_cell_magic('capture', 'out', 'print(df.head())')",
    "import timeit\ntimeit.timeit('sum(range(100))', number=100)",
    "import timeit\ntimeit.timeit(lambda: sorted(data), number=10)",
    "import timeit\ndef work():\n    return sorted(data)\nt = timeit.Timer(work).timeit(10)",
    "import numpy as np\narr = np.load('a.npy')\nsame = np.load('a.npy', None, False)",
    "import torch\nweights = torch.load('m.pt')",
    "import yaml\nconf = yaml.safe_load(text)\nmore = yaml.load(text, Loader=yaml.SafeLoader)",
    "from pathlib import Path\n(Path.cwd() / 'out.txt').write_text('ok')",
    "from pathlib import Path\nout = Path('results/a.csv')\nout.parent.mkdir(exist_ok=True)\ndf.to_csv(out)",
    "from pathlib import Path\n(Path('results').resolve().parent / 'x.txt').write_text('ok')",
    "import os\nopen(os.path.join(os.path.dirname('data/x.csv'), 'y.csv'), 'w')",
    "import os\nos.symlink('data/sales.csv', 'latest.csv')",
    "import os\nos.symlink('../data', 'sub/data')",
]


def test_the_tables_are_big_and_balanced() -> None:
    assert min(len(FLAGGED), len(ALLOWED)) >= 30


@pytest.mark.parametrize("code, reason", FLAGGED + [(code, None) for code in ALLOWED])
def test_scan_verdict(code: str, reason: str | None) -> None:
    ast.parse(code)  # every row is plain Python, as IPython's transformer leaves it
    found = scan([code])
    described = [risk.describe() for risk in found.risks]
    decision = decide(PolicySettings(), found)
    if reason is None:
        assert described == [] and decision.verdict == "run", f"ordinary code flagged: {described}"
    else:
        assert any(reason in d for d in described), f"expected {reason!r} in {described}"
        assert decision.verdict == "ask" and any(reason in r for r in decision.reasons)


def test_a_risk_in_a_string_is_placed_at_the_line_that_runs_it() -> None:
    code = "x = 1\n\nget_ipython().run_cell('y = 2\\n\\nimport os\\nos.system(\"id\")')"
    assert [(r.name, r.line) for r in scan([code]).risks] == [("os.system", 3)]


def test_a_lookup_by_a_literal_in_a_namespace_is_the_function_alone() -> None:
    assert [r.name for r in scan(["import os\nos.__dict__.get('system')('id')"]).risks] == ["os.system"]
    assert [r.name for r in scan(["import os\nf = vars(os)['system']\nf('id')"]).risks] == ["os.system"]


def test_strings_nested_deeper_than_the_scan_reads_are_asked_about() -> None:
    code = "import os; os.system('id')"
    for _ in range(6):
        code = f"get_ipython().run_cell({code!r})"
    assert [r.describe() for r in scan([code]).risks] == ["strings run as code: nest more than 4 deep"]


def test_magics_that_run_code_are_read_as_ipython_writes_them() -> None:
    found = {r.describe() for r in scan(["%timeit -n1 __import__('os').system('id')",
                                         "%%capture out\n!touch x"]).risks}
    assert any(d.startswith("os.system: runs a shell command (in a string") for d in found)
    assert any(d.startswith("get_ipython().system: runs a shell command (!) (in a string") for d in found)
    assert scan(["%timeit sum(range(10))\n%time df = load()"]).risks == ()


def test_the_deny_list_sees_a_risky_function_handed_on() -> None:
    found = scan(["import os\nlist(map(os.system, commands))"])
    assert decide(PolicySettings("auto", deny=("os.system",)), found).verdict == "refuse"


def test_kernel_names_of_the_shells_code_runners_are_read() -> None:
    """A user's ``rc = get_ipython().run_cell`` (or ``from timeit import timeit``): the model's bare
    call is judged as what it is."""
    from IPython.testing.globalipapp import start_ipython

    start_ipython()
    from IPython import get_ipython

    shell = get_ipython()
    import timeit

    bindings = risky_bindings({"rc": shell.run_cell, "tt": timeit.timeit}, shell)
    assert ("rc", "get_ipython().run_cell") in bindings and ("tt", "timeit.timeit") in bindings
    trees, _ = policy.parse_blocks(["rc(\"import os; os.system('id')\")\ntt(stmt)"])
    described = [r.describe() for r in scan_trees(trees, bindings=bindings).risks]
    assert any(d.startswith("os.system: runs a shell command (in a string") for d in described)
    assert any(d.startswith(f"timeit.timeit: {UNREAD}") for d in described)


def test_methodcaller_from_a_users_cell_is_read() -> None:
    import operator

    bindings = risky_bindings({"mc": operator.methodcaller, "o": os, "run": subprocess.run})
    assert ("mc", "operator.methodcaller") in bindings
    trees, _ = policy.parse_blocks(["mc('system', 'id')(o)"])
    assert "os.system" in {r.name for r in scan_trees(trees, bindings=bindings).risks}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A working folder with a link to the user's home (here a stand-in) and one to a folder inside."""
    work, home = tmp_path / "work", tmp_path / "home"
    (work / "data").mkdir(parents=True)
    home.mkdir()
    (work / "home").symlink_to(home)
    (work / "profile").symlink_to(home / ".profile")  # a link to a file that is not there yet
    (work / "inside").symlink_to(work / "data")
    return work


def writes(code: str, folders: tuple[str, str] | None, moved: str = "") -> list[str]:
    trees, _ = policy.parse_blocks([code])
    return [r.describe() for r in scan_trees(trees, moved, folders=folders).risks]


def test_a_write_through_a_link_that_leads_out_is_judged_by_where_it_lands(folder: Path) -> None:
    at = (str(folder), str(folder))
    home = folder.parent / "home"
    said = writes("open('home/.bashrc', 'a').write('x')", at)
    assert said == [f"open(a): writes outside the working directory: 'home/.bashrc' (a link leads it to "
                    f"{str(home / '.bashrc')!r}) (line 1)"]
    assert writes("df.to_csv('profile')", at)  # the link itself is the file written
    assert writes("from pathlib import Path\n(Path('home') / 'x').mkdir()", at)
    assert writes("df.to_csv('inside/x.csv')\nopen('data/y.csv', 'w')\nopen('new.txt', 'w')", at) == []
    assert writes("open('home/.bashrc', 'a').write('x')", None) == []  # the folder not known: as it reads
    assert writes("open('home/.bashrc', 'a').write('x')", (str(folder / "gone"), str(folder))) == []


def test_links_are_judged_from_the_kernels_directory_against_the_notebooks_folder(folder: Path) -> None:
    # The kernel is in work/data, the notebook in work: '../home/x' leads out through the link,
    # '../inside/x' stays in.
    at = (str(folder / "data"), str(folder))
    assert "(a link leads it to" in writes("open('../home/x', 'w')", at, "data")[0]
    assert writes("open('../inside/x', 'w')", at, "data") == []


def test_the_snapshot_tells_the_scan_where_the_folders_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from jupyter_ai_ci.context import snapshot

    notebook = tmp_path / "analysis.ipynb"
    notebook.write_text("{}")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert snapshot.folders(notebook) == (str(tmp_path / "sub"), str(tmp_path))
    assert snapshot.folders(None) == (str(tmp_path / "sub"),) * 2
    shown = snapshot.Snapshot(snapshot.Context("", (), 0, 0, "chars"), folders=("/k/sub", "/k"))
    text = json.dumps({"text": "", "tokens": 0, "budget": 0, "counter": "chars", "folders": list(shown.folders or ())})
    assert snapshot.from_reply({"status": "ok", "data": {"text/plain": repr(text)}}).folders == ("/k/sub", "/k")
    text = json.dumps({"text": "", "tokens": 0, "budget": 0, "counter": "chars"})  # an older kernel's
    assert snapshot.from_reply({"status": "ok", "data": {"text/plain": repr(text)}}).folders is None
