"""The complete transaction on a plain namespace: the process and the files, not only names.

Each test performs what an attempt's code does (``exec`` in the namespace, as the shell runs a
cell) between ``begin`` and ``rollback``, then looks at the process and the disk itself.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.safety.filejournal import Journal
from jupyter_ai_ci.safety.transaction import Transaction


@pytest.fixture()
def folder(tmp_path: Path) -> Iterator[Path]:
    """The kernel's working directory, as Jupyter starts it in the notebook's folder."""
    home = tmp_path / "nb"
    home.mkdir()
    old = os.getcwd()
    os.chdir(home)
    try:
        yield home
    finally:
        os.chdir(old)


def attempt(code: str, ns: dict[str, Any] | None = None, fails: bool = True) -> tuple[Transaction, Any]:
    ns = ns if ns is not None else {}
    tx = Transaction(ns)
    tx.begin([code])
    with contextlib.suppress(Exception):
        exec(code + ("\nraise KeyError('regoin')" if fails else ""), ns)  # noqa: S102 -- an attempt
    return tx, tx.rollback()


def test_the_issues_failed_attempt_leaves_nothing(folder: Path) -> None:
    """Issue #36's first case: environment, sys.path, a file's new content, a column, the directory."""
    pd = pytest.importorskip("pandas")
    (folder / "notes.txt").write_text("mine\n")
    (folder / "sub").mkdir()
    df = pd.DataFrame({"a": [1], "b": [2]})
    path_before = list(sys.path)
    assert "UNDO_T" not in os.environ
    code = ("import os, sys\nos.environ['UNDO_T'] = '1'\nsys.path.insert(0, '/nowhere')\n"
            "open('notes.txt', 'w').write('theirs')\ndf.drop(columns=['b'], inplace=True)\nos.chdir('sub')")
    _, report = attempt(code, {"df": df})
    assert "UNDO_T" not in os.environ
    # A child process sees it gone too (unsetenv, not only the mapping).
    child = subprocess.run([sys.executable, "-c", "import os; print('UNDO_T' in os.environ)"],
                           capture_output=True, text=True, check=True)
    assert child.stdout.strip() == "False"
    assert sys.path == path_before
    assert (folder / "notes.txt").read_text() == "mine\n"
    assert list(df.columns) == ["a", "b"]
    assert Path.cwd() == folder
    assert {"os.environ['UNDO_T']", "sys.path", "notes.txt", "the working directory"} <= set(report.restored)
    assert report.not_saved == ()


def test_an_environment_variable_changed_or_removed_comes_back(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNDO_KEEP", "before")
    monkeypatch.setenv("UNDO_GONE", "here")
    attempt("import os\nos.environ['UNDO_KEEP'] = 'after'\ndel os.environ['UNDO_GONE']\nos.putenv('X', '1')")
    assert os.environ["UNDO_KEEP"] == "before"
    assert os.environ["UNDO_GONE"] == "here"


def test_monkeypatches_on_builtins_and_named_modules_are_undone(folder: Path) -> None:
    import json as json_module

    real_sum, real_dumps = builtins.sum, json_module.dumps
    code = ("import builtins, json\nbuiltins.sum = lambda *a, **k: 999\njson.dumps = lambda *a, **k: 'x'\n"
            "json.extra_attribute = 1\n__builtins__['len'] = lambda x: 0")
    ns: dict[str, Any] = {"__builtins__": builtins.__dict__}
    _, report = attempt(code, ns)
    assert builtins.sum is real_sum and json_module.dumps is real_dumps
    assert builtins.len(  # noqa: C417 -- the real len, looked up where the attack patched it
        [1, 2]) == 2
    assert not hasattr(json_module, "extra_attribute")
    assert {"builtins.sum", "json.dumps", "json.extra_attribute"} <= set(report.restored)


def test_an_alias_of_a_module_is_read_as_the_module(folder: Path) -> None:
    code = "pj.loads = None"
    _, report = attempt(code, {"pj": json})
    assert json.loads is not None and callable(json.loads)
    assert "json.loads" in report.restored


@pytest.mark.parametrize("code", [
    "open('new.txt', 'w').write('x')",
    "from pathlib import Path\nPath('new.txt').write_text('x')",
    "import os\nos.makedirs('made/deeper')\nopen('made/deeper/new.txt', 'w').write('x')",
    "import os\nfd = os.open('new.txt', os.O_WRONLY | os.O_CREAT)\nos.write(fd, b'x')\nos.close(fd)",
    "import shutil\nshutil.copy('keep.txt', 'new.txt')",
])
def test_files_and_folders_the_attempt_made_are_removed(folder: Path, code: str) -> None:
    (folder / "keep.txt").write_text("k")
    _, report = attempt(code)
    assert sorted(p.name for p in folder.iterdir()) == ["keep.txt"]
    assert report.not_saved == ()


@pytest.mark.parametrize("code", [
    "open('data.csv', 'a').write('more\\n')",
    "open('data.csv', 'w').write('')",
    "import os\nos.remove('data.csv')",
    "from pathlib import Path\nPath('data.csv').unlink()",
    "import os\nos.rename('data.csv', 'moved.csv')",
    "import os\nos.replace('other.csv', 'data.csv')",
    "import shutil\nshutil.move('data.csv', 'sub/data.csv')",
    "import os\nos.truncate('data.csv', 1)",
    "import shutil\nshutil.rmtree('sub')",
    "import os\nos.chmod('data.csv', 0o444)",
])
def test_files_the_attempt_changed_come_back(folder: Path, code: str) -> None:
    (folder / "data.csv").write_text("a,b\n1,2\n")
    (folder / "other.csv").write_text("other\n")
    (folder / "sub").mkdir()
    (folder / "sub" / "inner.txt").write_text("inner")
    mode = (folder / "data.csv").stat().st_mode
    _, report = attempt(code)
    assert (folder / "data.csv").read_text() == "a,b\n1,2\n"
    assert (folder / "data.csv").stat().st_mode == mode
    assert (folder / "other.csv").read_text() == "other\n"
    assert (folder / "sub" / "inner.txt").read_text() == "inner"
    assert sorted(p.name for p in folder.iterdir()) == ["data.csv", "other.csv", "sub"]
    assert sorted(p.name for p in (folder / "sub").iterdir()) == ["inner.txt"]
    assert report.not_saved == ()


def test_pandas_to_csv_is_undone(folder: Path) -> None:
    pd = pytest.importorskip("pandas")
    (folder / "out.csv").write_text("old\n")
    attempt("df.to_csv('out.csv')\ndf.to_csv('fresh.csv')", {"df": pd.DataFrame({"a": [1]})})
    assert (folder / "out.csv").read_text() == "old\n"
    assert not (folder / "fresh.csv").exists()


def test_a_file_over_the_cap_is_said_and_not_copied(folder: Path) -> None:
    (folder / "big.bin").write_bytes(b"x" * 5000)
    tx = Transaction({}, file_cap=1000)
    tx.begin(["open('big.bin', 'wb').write(b'y')"])
    exec("open('big.bin', 'wb').write(b'y')", {})  # noqa: S102
    report = tx.rollback()
    assert (folder / "big.bin").read_bytes() == b"y"  # not undone, and said so
    assert any("big.bin" in n and "over the" in n and "cap" in n for n in report.not_saved)
    assert "big.bin" not in report.restored


def test_a_write_through_a_link_to_outside_is_said_never_restored_outside(folder: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "target.txt").write_text("outside")
    (folder / "link.txt").symlink_to(outside / "target.txt")
    _, report = attempt("open('link.txt', 'w').write('changed')")
    assert (outside / "target.txt").read_text() == "changed"  # the policy's business, not undone by writing out
    assert (folder / "link.txt").is_symlink()
    assert any("link.txt" in n and "link to outside" in n for n in report.not_saved)


def test_a_write_outside_the_folder_is_said(tmp_path: Path) -> None:
    inside, outside = tmp_path / "nb", tmp_path / "other"
    inside.mkdir()
    outside.mkdir()
    journal = Journal((str(inside.resolve()),), ignore=())
    journal.start()
    try:
        (outside / "x.txt").write_text("x")
        (inside / "y.txt").write_text("y")
    finally:
        journal.stop()
    restored, kept = journal.restore()
    assert (outside / "x.txt").exists() and not (inside / "y.txt").exists()
    assert restored == ["y.txt"]
    assert kept == [f"wrote {outside / 'x.txt'} (outside the folder)"]


def test_a_held_attempt_rejected_later_keeps_what_the_person_did_since(folder: Path) -> None:
    (folder / "a.txt").write_text("a0")
    (folder / "b.txt").write_text("b0")
    ns: dict[str, Any] = {}
    tx = Transaction(ns)
    code = "import os\nopen('a.txt', 'w').write('a1')\nopen('b.txt', 'w').write('b1')\nos.environ['UNDO_H'] = 'fix'"
    tx.begin([code])
    exec(code, ns)  # noqa: S102
    assert tx.seal().not_saved == ()
    # The person's own cells while the fix waits: not recorded, and not clobbered by the reject.
    (folder / "b.txt").write_text("person's, longer")
    (folder / "c.txt").write_text("person's new file")
    report = tx.rollback(only_changed=True)
    assert (folder / "a.txt").read_text() == "a0"
    assert (folder / "b.txt").read_text() == "person's, longer"
    assert (folder / "c.txt").read_text() == "person's new file"
    assert "UNDO_H" not in os.environ
    assert any("b.txt" in n and "changed since" in n for n in report.not_saved)


def test_a_committed_attempt_keeps_its_files_and_its_copies_are_gone(folder: Path) -> None:
    (folder / "a.txt").write_text("a0")
    tx = Transaction({})
    tx.begin(["open('a.txt', 'w').write('a1')"])
    exec("open('a.txt', 'w').write('a1')", {})  # noqa: S102
    assert tx.journal is not None
    backups = tx.journal._folder
    assert backups and os.listdir(backups)
    tx.commit()
    assert (folder / "a.txt").read_text() == "a1"
    assert not os.path.exists(backups)
    # Nothing is recorded once the attempt is over.
    (folder / "later.txt").write_text("x")
    assert tx.rollback().supported is False
    assert (folder / "later.txt").exists()


def test_a_folder_the_attempt_filled_with_unrecorded_files_is_said(folder: Path) -> None:
    tx = Transaction({})
    tx.begin(["import os\nos.mkdir('made')"])
    os.mkdir("made")
    tx.journal.stop() if tx.journal else None  # noqa: B018 -- a file made where the journal did not see it
    (folder / "made" / "unseen.txt").write_text("x")
    report = tx.rollback()
    assert (folder / "made" / "unseen.txt").exists()
    assert any(n.startswith("not undone: made") for n in report.not_saved)


def test_the_hook_costs_nothing_outside_an_attempt(folder: Path) -> None:
    """No journal recording: a write is a write (and no copy is made anywhere)."""
    tx = Transaction({})
    tx.begin(["pass"])
    tx.commit()
    (folder / "free.txt").write_text("x")
    shutil.copy(folder / "free.txt", folder / "free2.txt")
    assert sorted(p.name for p in folder.iterdir()) == ["free.txt", "free2.txt"]


def test_a_read_only_file_and_a_removed_link_come_back(folder: Path, tmp_path: Path) -> None:
    (folder / "ro.txt").write_text("read only")
    (folder / "ro.txt").chmod(0o444)
    (folder / "link").symlink_to(tmp_path / "somewhere")
    attempt("import os\nos.chmod('ro.txt', 0o644)\nopen('ro.txt', 'w').write('changed')\nos.remove('link')")
    assert (folder / "ro.txt").read_text() == "read only"
    assert (folder / "ro.txt").stat().st_mode & 0o777 == 0o444
    assert (folder / "link").is_symlink() and os.readlink(folder / "link") == str(tmp_path / "somewhere")


def test_a_link_put_in_a_files_place_is_replaced_not_followed(folder: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside")
    (folder / "data.txt").write_text("data")
    attempt(f"import os\nos.remove('data.txt')\nos.symlink({str(outside)!r}, 'data.txt')")
    assert not (folder / "data.txt").is_symlink() and (folder / "data.txt").read_text() == "data"
    assert outside.read_text() == "outside"


@pytest.mark.parametrize("code, check", [
    ("import random\nrandom.seed(7)", "random.random()"),
    ("import numpy as np\nnp.random.seed(7)", "np.random.rand()"),
    ("import numpy as np\nnp.seterr(all='raise')", "np.geterr()['divide']"),
    ("import pandas as pd\npd.set_option('display.max_rows', 3)", "pd.get_option('display.max_rows')"),
    ("import matplotlib\nmatplotlib.rcParams['lines.linewidth'] = 9", "matplotlib.rcParams['lines.linewidth']"),
    ("import warnings\nwarnings.simplefilter('error')", "len(warnings.filters)"),
])
def test_state_libraries_keep_for_the_process_comes_back(folder: Path, code: str, check: str) -> None:
    """A seeded generator, a display option, rcParams: no variable shows them, every later cell sees them."""
    import random
    import warnings

    import matplotlib
    import numpy as np
    import pandas as pd

    names = {"random": random, "np": np, "pd": pd, "matplotlib": matplotlib, "warnings": warnings}
    random.seed(1)
    np.random.seed(1)
    expected = eval(check, names)  # noqa: S307 -- the state as the request found it
    random.seed(1)
    np.random.seed(1)
    _, report = attempt(code, dict(names))
    assert eval(check, names) == expected  # noqa: S307
    assert any(label.endswith(")") or label.startswith(("matplotlib", "warnings")) for label in report.restored)


_FIRST_PLOT = """
import json, os, sys
from jupyter_ai_ci.safety.filejournal import Journal
journal = Journal((os.path.realpath(os.getcwd()),))
journal.start()
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
plt.savefig("chart.png")
if sys.argv[1] == "rc":
    with open(os.path.join(matplotlib.get_configdir(), "matplotlibrc"), "w") as f:
        f.write("lines.linewidth: 9")
journal.stop()
made = os.path.isdir(matplotlib.get_configdir())
print(json.dumps([made, *journal.restore()]))
"""


@pytest.mark.parametrize("then", ["plot", "rc"])
def test_matplotlibs_first_import_is_not_a_write_to_undo_but_its_rc_file_is(folder: Path, tmp_path: Path,
                                                                            then: str) -> None:
    # A new user's first chart: matplotlib makes ~/.config/matplotlib as it is imported. In a process
    # of its own, with a home of its own, so that the import really is the first.
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                                                             "MPLBACKEND")}
    (home / "tmp").mkdir()  # the temporary folder is nobody's business: not the one this home is in
    env.update(HOME=str(home), TMPDIR=str(home / "tmp"), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-c", _FIRST_PLOT, then], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    made, restored, kept = json.loads(done.stdout.splitlines()[-1])
    assert made and (home / ".config" / "matplotlib").is_dir()
    assert restored == ["chart.png"] and not (folder / "chart.png").exists()
    rc = str(home / ".config" / "matplotlib" / "matplotlibrc")
    assert kept == ([] if then == "plot" else [f"wrote {rc} (outside the folder)"])


def test_a_library_folder_renamed_or_removed_is_still_said(folder: Path, tmp_path: Path) -> None:
    # Only making matplotlib's folder is nobody's business: moving it away is the person's loss.
    config = tmp_path / "config"
    (config / "matplotlib").mkdir(parents=True)
    journal = Journal((str(folder.resolve()),), ignore=(), made=frozenset({str(config / "matplotlib")}))
    journal.start()
    try:
        os.rename(config / "matplotlib", config / "gone")
    finally:
        journal.stop()
    assert journal.restore()[1] == [f"wrote {config / 'matplotlib'} (outside the folder)",
                                    f"wrote {config / 'gone'} (outside the folder)"]


def test_each_ignored_place_is_listed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_ai_ci.safety import filejournal

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)  # then it is ~/.cache, listed already
    filejournal._ignored.cache_clear()  # not what an earlier test's environment made
    try:
        places = filejournal._ignored()
    finally:
        filejournal._ignored.cache_clear()
    assert len(places) == len(set(places)) and os.path.realpath(os.path.expanduser("~/.cache")) in places
