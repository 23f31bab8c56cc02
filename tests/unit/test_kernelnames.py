"""What names already in the kernel stand for, for the risk scan (safety/kernelnames.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

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


def test_a_huge_namespace_is_read_up_to_the_cap() -> None:
    ns = {f"run{i}": subprocess.run for i in range(MAX_BINDINGS + 50)}
    assert len(risky_bindings(ns)) == MAX_BINDINGS


def test_the_scan_reads_a_bare_call_through_them() -> None:
    trees, _ = policy.parse_blocks(["run(['ls'])"])
    assert not policy.scan_trees(trees).risks
    found = policy.scan_trees(trees, bindings=risky_bindings({"run": subprocess.run}))
    assert [r.name for r in found.risks] == ["subprocess.run"]
