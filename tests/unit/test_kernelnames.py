"""What names already in the kernel stand for, for the risk scan (safety/kernelnames.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

import pytest

from jupyter_ai_ci.safety import policy
from jupyter_ai_ci.safety.kernelnames import MAX_BINDINGS, risky_bindings


class Trap:
    """An object whose every attribute lookup fails loudly: the scan must not touch it."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"looked up {name}")


def test_only_modules_and_callables_of_risky_modules_are_named() -> None:
    ns = {"t": Trap(), "run": subprocess.run, "os": os, "o": os, "_hidden": os.system, "wipe": shutil.rmtree,
          "n": 3, "join": os.path.join, "e": eval, "len": len}
    assert risky_bindings(ns) == (("run", "subprocess.run"), ("o", "os"), ("wipe", "shutil.rmtree"), ("e", "eval"))


def test_a_name_is_spelled_as_imported_not_by_its_module() -> None:
    import asyncio

    ns = {"spawn": asyncio.create_subprocess_shell, "o": open}  # asyncio.subprocess's; io's open
    assert risky_bindings(ns) == (("spawn", "asyncio.create_subprocess_shell"), ("o", "open"))
    trees, _ = policy.parse_blocks(["spawn('rm -rf data')\no('/home/u/.bashrc', 'a').write('x')"])
    found = {r.name for r in policy.scan_trees(trees, bindings=risky_bindings(ns)).risks}
    assert "asyncio.create_subprocess_shell" in found and "open(a)" in found  # a write outside it


def test_an_object_that_fails_to_be_looked_at_is_passed_over() -> None:
    class Proxy:  # as a web framework's proxy outside its context: even its class fails
        @property  # type: ignore[misc]
        def __class__(self) -> Any:
            raise RuntimeError("working outside of application context")

    assert risky_bindings({"request": Proxy(), "run": subprocess.run}) == (("run", "subprocess.run"),)


def test_a_huge_namespace_is_read_up_to_the_cap() -> None:
    ns = {f"run{i}": subprocess.run for i in range(MAX_BINDINGS + 50)}
    assert len(risky_bindings(ns)) == MAX_BINDINGS


def test_the_scan_reads_a_bare_call_through_them() -> None:
    trees, _ = policy.parse_blocks(["run(['ls'])"])
    assert not policy.scan_trees(trees).risks
    found = policy.scan_trees(trees, bindings=risky_bindings({"run": subprocess.run}))
    assert [r.name for r in found.risks] == ["subprocess.run"]


KERNEL = (("run", "subprocess.run"), ("pd", "os"))


@pytest.mark.parametrize("code", [
    "run: int\nrun('rm -rf data', shell=True)",  # an annotation binds nothing
    "def run(x=run('rm -rf data', shell=True)):\n    pass",  # the default runs the kernel's run
    "class run(run('x').__class__):\n    pass",  # so do the bases
    "run('x')\nif False:\n    import json as run",  # an import later, in a branch
    "run('x')\ndef f():\n    from shlex import quote as run",  # an import in a function
    "run('x')\nfrom asyncio import *",  # a star import after the call
    "import os\nrun('x')\nrun = os.path.join",  # a binding after the call
    "pd.system('x')",  # the kernel's pd is os, whatever the convention
    "globals()['run']('x')",  # the kernel's names reached through its namespace
    "vars()['run']('x')",
    "from __main__ import run as r\nr('x')",
    "import __main__\n__main__.run('x')",
    "import sys\nsys.modules['__main__'].run('x')",
])
def test_a_later_or_partial_binding_does_not_hide_the_kernels_name(code: str) -> None:
    trees, _ = policy.parse_blocks([code])
    assert {r.name for r in policy.scan_trees(trees, bindings=KERNEL).risks} & {"subprocess.run", "os.system"}


@pytest.mark.parametrize("code", [
    "def run(items):\n    return sum(items)\n\ntotal = run([1, 2, 3])",
    "run = print\nrun('hi')",
    "import pandas as pd\ndf = pd.DataFrame({'a': [1]})\ndf.to_csv('out.csv')",
    "from json import dumps as run\nrun({})",
    "x = globals()['df']\nglobals().update(total=1)",
])
def test_a_name_the_code_binds_first_at_top_level_is_its_own(code: str) -> None:
    trees, _ = policy.parse_blocks([code])
    assert not policy.scan_trees(trees, bindings=KERNEL).risks


def test_what_code_that_ran_left_bound_is_added_for_the_next_scan() -> None:
    from jupyter_ai_ci.safety.kernelnames import bound_by

    trees, _ = policy.parse_blocks(["from subprocess import run\nimport os\nsh = os.system\nimport pandas as pd\n"
                                    "from shutil import *\ntotal = 3"])
    found = dict(bound_by(trees, (("e", "eval"),)))
    assert found["run"] == "subprocess.run" and found["sh"] == "os.system" and found["e"] == "eval"
    assert found["rmtree"] == "shutil.rmtree"  # the star import's names
    assert "os" not in found and "pd" not in found and "total" not in found  # nothing the name does not say
    nxt, _ = policy.parse_blocks(["run(['ls'])\nsh('ls')\nrmtree('x')"])
    risks = {r.name for r in policy.scan_trees(nxt, bindings=tuple(found.items())).risks}
    assert {"subprocess.run", "os.system", "shutil.rmtree"} <= risks


RUN = (("run", "subprocess.run"),)


@pytest.mark.parametrize(("code", "flagged"), [
    ("globals()['os'].system('touch x')", "os.system"),  # the kernel's os, reached by its namespace
    ("globals().get('subprocess').run(['touch', 'x'])", "subprocess.run"),
    ("globals().__getitem__('run')(['touch', 'x'])", "subprocess.run"),
    ("__main__.__dict__['run'](['touch', 'x'])", "subprocess.run"),
    ("get_ipython().user_ns['run'](['touch', 'x'])", "subprocess.run"),
    ("f = globals()['run']\nf(['touch', 'x'])", "subprocess.run"),
    ("f = globals()['r' + 'un']\nf(['touch', 'x'])", "globals()[…]"),  # computed, bound, then called
    ("f = globals().get(name)\nf(['touch', 'x'])", "globals()[…]"),
    ("globals().pop(name)(['touch', 'x'])", "globals()[…]"),
    ("import __main__\ngetattr(__main__, 'r' + 'un')(['touch', 'x'])", "globals()[…]"),
    ("(s := os.system)\ns('touch x')", "os.system"),  # a walrus binds an alias as = does
    ("s = os.system\ns('touch x')", "os.system"),  # the kernel's os, used without an import
])
def test_the_kernels_names_reached_another_way_are_read_as_what_they_are(code: str, flagged: str) -> None:
    trees, _ = policy.parse_blocks([code])
    assert flagged in {r.name for r in policy.scan_trees(trees, bindings=RUN).risks}


@pytest.mark.parametrize("code", [
    "globals()[f'df_{i}'].head()", "x = globals()[f'df_{i}']\nx.describe()",
    "globals().get(f'df_{i}', None)", "globals()[f'df_{i}'] = df.copy()",
    "for i in range(3):\n    d = globals()[f'df_{i}']\n    print(d.shape)",
    "j = os.path.join\nprint(j('a', 'b'))",
])
def test_ordinary_lookups_in_the_namespace_are_not_flagged(code: str) -> None:
    trees, _ = policy.parse_blocks([code])
    assert not policy.scan_trees(trees, bindings=RUN).risks
