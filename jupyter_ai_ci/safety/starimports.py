"""What ``from M import *`` binds, for the risk scan: the names of M that the code then calls.

Found in a security review (issue #30, item 8): ``from subprocess import *`` then ``run(...)``,
and ``from shutil import *`` then ``rmtree(...)`` or ``copy(...)``, read as calls of unknown
functions, so the scan flagged nothing.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Sequence

# The standard library's modules the risk scan has rules for: ``from M import *`` of one binds
# names the scan reads from M itself (importing these has no side effect).  Any other module is
# read only if this process has imported it already (never imported to scan code).
_STAR_READABLE = frozenset({
    "os", "os.path", "posix", "nt", "subprocess", "shutil", "pty", "socket", "ftplib", "smtplib", "runpy",
    "ctypes", "sys", "builtins", "asyncio", "urllib.request", "http.client", "io", "codecs", "gzip", "bz2",
    "lzma", "tarfile", "zipfile", "pathlib", "importlib", "signal", "multiprocessing", "pickle", "marshal",
    "code", "tempfile", "glob",
})


def star_names(module: str) -> frozenset[str] | None:
    """The names ``from module import *`` binds, or None when reading the code cannot tell."""
    loaded = sys.modules.get(module)
    if loaded is None and module in _STAR_READABLE:
        try:
            loaded = importlib.import_module(module)
        except ImportError:  # nt here, for a kernel on Windows: unread, so the import itself is asked about
            return None
    if loaded is None:
        return None
    names = getattr(loaded, "__all__", None)
    if names is None:
        names = [n for n in dir(loaded) if not n.startswith("_")]
    return frozenset(str(n) for n in names)


def star_imports(nodes: Sequence[ast.AST], aliases: dict[str, str], used: set[str]) -> tuple[list[str], list[str]]:
    """Resolve the names ``from M import *`` binds, as an import of each would: ``run(...)`` after
    ``from subprocess import *`` reads ``subprocess.run`` (found in a security review: star imports
    hid run, copy and rmtree from the scan).  A name is mapped only when M has it -- never a
    builtin such as ``eval`` that M does not replace.  Returns the modules, and those unread."""
    stars, unread = [], []
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level \
                and any(a.name == "*" for a in node.names):
            stars.append(node.module)
            names = star_names(node.module)
            if names is None:
                unread.append(node.module)
                continue
            for name in used & names:
                aliases[name] = f"{node.module}.{name}"
    return stars, unread
