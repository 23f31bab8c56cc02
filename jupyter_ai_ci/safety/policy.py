"""Checks before generated code runs: pure functions the loop calls.

A guard against accidents, not a sandbox: the scan reads the code's AST and
flags calls that are easy to regret (running processes, deleting files,
network, ``eval``, ``ctypes``, changing ``sys.modules``, leaving the kernel,
shell escapes).  Code that hides what it calls (``getattr(os, 'sys' +
'tem')``) is not caught; isolation means running in a separate kernel.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from jupyter_ai_ci.events import ErrorInfo
from jupyter_ai_ci.safety.astutil import dotted, imported_aliases, literal_str, parse_cell, root_name

Mode = Literal["auto", "ask-risky", "ask"]
MODES: tuple[Mode, ...] = ("auto", "ask-risky", "ask")

# (pattern on the resolved dotted name of the called function, kind, why)
RISKY_CALLS: tuple[tuple[str, str, str], ...] = (
    ("os.system", "process", "runs a shell command"),
    ("os.popen", "process", "runs a shell command"),
    ("os.exec*", "process", "replaces the kernel process"),
    ("os.spawn*", "process", "starts a process"),
    ("os.fork*", "process", "forks the kernel"),
    ("os.kill*", "process", "sends a signal to a process"),
    ("subprocess.*", "process", "starts a process"),
    ("pty.*", "process", "starts a process on a terminal"),
    ("asyncio.create_subprocess_*", "process", "starts a process"),
    ("os.remove", "delete", "deletes a file"),
    ("os.unlink", "delete", "deletes a file"),
    ("os.rmdir", "delete", "deletes a directory"),
    ("os.removedirs", "delete", "deletes directories"),
    ("os.rename", "delete", "renames (may overwrite) a file"),
    ("os.replace", "delete", "overwrites a file"),
    ("os.truncate", "delete", "truncates a file"),
    ("shutil.rmtree", "delete", "deletes a directory tree"),
    ("shutil.move", "delete", "moves (may overwrite) files"),
    ("*.unlink", "delete", "deletes a file"),
    ("*.rmdir", "delete", "deletes a directory"),
    ("*.rmtree", "delete", "deletes a directory tree"),
    ("socket.*", "network", "opens a network connection"),
    ("urllib.request.*", "network", "accesses the network"),
    ("http.client.*", "network", "accesses the network"),
    ("requests.*", "network", "accesses the network"),
    ("httpx.*", "network", "accesses the network"),
    ("urllib3.*", "network", "accesses the network"),
    ("aiohttp.*", "network", "accesses the network"),
    ("ftplib.*", "network", "accesses the network"),
    ("smtplib.*", "network", "sends mail"),
    ("paramiko.*", "network", "opens an SSH connection"),
    ("eval", "eval", "evaluates a string as code"),
    ("exec", "eval", "executes a string as code"),
    ("compile", "eval", "compiles a string as code"),
    ("__import__", "eval", "imports by computed name"),
    ("ctypes.*", "ctypes", "calls native code directly"),
    ("cffi.*", "ctypes", "calls native code directly"),
    ("exit", "exit", "ends the kernel"),
    ("quit", "exit", "ends the kernel"),
    ("sys.exit", "exit", "ends the program"),
    ("os._exit", "exit", "kills the kernel process"),
    ("os.abort", "exit", "kills the kernel process"),
    ("sys.modules.*", "modules", "changes sys.modules"),
    ("get_ipython().system", "shell", "runs a shell command (!)"),
    ("get_ipython().getoutput", "shell", "runs a shell command (!!)"),
    ("get_ipython().system_piped", "shell", "runs a shell command"),
)
# Line and cell magics that reach the shell, the kernel or the environment.
RISKY_MAGICS = {
    "system": "runs a shell command", "sx": "runs a shell command", "sh": "runs a shell command",
    "bash": "runs a shell script", "script": "runs a script", "reset": "clears the namespace",
    "rm": "deletes files", "rmdir": "deletes a directory", "mv": "moves files",
    "pip": "installs packages", "conda": "installs packages", "mamba": "installs packages",
    "writefile": "writes a file", "killbgscripts": "kills processes", "perl": "runs a script",
    "ruby": "runs a script", "python": "runs a separate Python process", "powershell": "runs a script",
}
_WRITE_MODE = re.compile(r"[wax+]")


@dataclass(frozen=True)
class Risk:
    kind: str  # process, delete, write, network, eval, ctypes, exit, modules, builtins, shell
    name: str  # what was called, e.g. "subprocess.run", "%system", "open(w)"
    why: str
    line: int = 0

    def describe(self) -> str:
        return f"{self.name}: {self.why}" + (f" (line {self.line})" if self.line else "")


@dataclass(frozen=True)
class Scan:
    risks: tuple[Risk, ...] = ()
    calls: frozenset[str] = frozenset()  # every resolved call name and imported module


@dataclass(frozen=True)
class PolicySettings:
    mode: Mode = "ask-risky"
    allow: tuple[str, ...] = ()  # patterns: a risk kind ("network"), a call ("requests.*"), "pip:<pkg>"
    deny: tuple[str, ...] = ()  # patterns: a call or module ("requests.*", "requests"), or a kind


@dataclass(frozen=True)
class Decision:
    verdict: Literal["run", "ask", "refuse"]
    reasons: tuple[str, ...] = ()


def syntax_error(blocks: Sequence[str]) -> tuple[int, ErrorInfo] | None:
    """The first block that does not parse, as the error the model is shown."""
    for index, code in enumerate(blocks):
        try:
            parse_cell(code)
        except SyntaxError as exc:
            where = f'  File "<cell>", line {exc.lineno}\n    {(exc.text or "").rstrip()}\n'
            return index, ErrorInfo("SyntaxError", str(exc.msg), f"{where}SyntaxError: {exc.msg}", exc.lineno)
    return None


def scan(blocks: Sequence[str]) -> Scan:
    risks: list[Risk] = []
    calls: set[str] = set()
    for code in blocks:
        try:
            tree = parse_cell(code)
        except SyntaxError:
            continue
        aliases = imported_aliases(tree)
        calls.update(aliases.values())
        for node in ast.walk(tree):
            risks.extend(_node_risks(node, aliases, calls))
    unique = {(r.kind, r.name, r.line): r for r in risks}
    return Scan(tuple(unique.values()), frozenset(calls))


def _node_risks(node: ast.AST, aliases: dict[str, str], calls: set[str]) -> list[Risk]:
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Call):
        name = dotted(node.func, aliases)
        if name is None and isinstance(node.func, ast.Attribute):
            name = f"<expr>.{node.func.attr}"  # Path('x').unlink(): the method still tells
        if name is None:
            return []
        calls.add(name)
        if name == "setattr" and node.args and dotted(node.args[0], aliases) in (
                "builtins", "__builtins__", "sys", "sys.modules"):
            return [Risk("builtins", "setattr", "changes Python's builtins or sys", line)]
        if name.startswith("get_ipython().run_") and node.args:
            magic = (literal_str(node.args[0]) or "").lower()
            if magic in RISKY_MAGICS:
                return [Risk("shell", f"%{magic}", RISKY_MAGICS[magic], line)]
            return []
        if name in ("open", "io.open") or name.endswith((".write_text", ".write_bytes")):
            return _write_risk(node, name, line)
        for pattern, kind, why in RISKY_CALLS:
            if fnmatchcase(name, pattern):
                return [Risk(kind, name, why, line)]
        if isinstance(node.func, ast.Attribute) and dotted(node.func.value, aliases) == "sys.modules":
            return [Risk("modules", name, "changes sys.modules", line)]
        return []
    targets: list[ast.AST] = []
    if isinstance(node, (ast.Assign, ast.Delete)):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    for target in targets:
        base = target.value if isinstance(target, (ast.Subscript, ast.Attribute)) else None
        name = dotted(base, aliases) if base is not None else None
        if name == "sys.modules" or (name or "").startswith("sys.modules."):
            return [Risk("modules", "sys.modules", "changes sys.modules", line)]
        if name in ("builtins", "__builtins__") or root_name(target) == "__builtins__":
            return [Risk("builtins", f"{name}", "changes Python's builtins", line)]
    return []


def _write_risk(node: ast.Call, name: str, line: int) -> list[Risk]:
    if name.endswith((".write_text", ".write_bytes")):
        return [Risk("write", name, "writes a file (maybe overwriting it)", line)]
    mode = literal_str(node.args[1]) if len(node.args) > 1 else None
    for k in node.keywords:
        if k.arg == "mode":
            mode = literal_str(k.value) or "w?"
    if not mode or not _WRITE_MODE.search(mode):
        return []
    path = literal_str(node.args[0]) if node.args else None
    if path is not None and not path.startswith(("/", "~", "\\")) and ".." not in path and ":" not in path:
        return []  # a relative path under the working directory: the user's own folder
    where = repr(path) if path is not None else "a computed path"
    return [Risk("write", f"open({mode})", f"writes {where}, maybe outside the working directory", line)]


def _matches(patterns: Sequence[str], *names: str) -> str | None:
    for pattern in patterns:
        for name in names:
            if fnmatchcase(name, pattern) or fnmatchcase(name, pattern + ".*"):
                return pattern
    return None


def decide(policy: PolicySettings, found: Scan) -> Decision:
    """Run, ask, or refuse: deny wins over everything, allow removes a flag."""
    denied = [f"{n} is on the deny list ({p})" for n in sorted(found.calls)
              if (p := _matches(policy.deny, n))]
    denied += [f"{r.describe()} — denied ({p})" for r in found.risks
               if (p := _matches(policy.deny, r.kind, r.name))]
    if denied:
        return Decision("refuse", tuple(denied))
    flagged = tuple(r.describe() for r in found.risks if not _matches(policy.allow, r.kind, r.name))
    if policy.mode == "auto":
        return Decision("run", flagged)
    if policy.mode == "ask":
        return Decision("ask", flagged or ("policy 'ask': every attempt needs approval",))
    return Decision("ask" if flagged else "run", flagged)


def install_allowed(policy: PolicySettings, package: str) -> bool:
    """Installing is asked for in every mode unless the allow list names it."""
    return _matches(policy.allow, f"pip:{package}") is not None


# The import name is not always the package name.
PACKAGES = {
    "sklearn": "scikit-learn", "cv2": "opencv-python", "PIL": "pillow", "bs4": "beautifulsoup4",
    "yaml": "pyyaml", "skimage": "scikit-image", "dateutil": "python-dateutil",
    "dotenv": "python-dotenv", "Crypto": "pycryptodome", "OpenSSL": "pyopenssl",
    "serial": "pyserial", "usb": "pyusb", "magic": "python-magic", "docx": "python-docx",
    "pptx": "python-pptx", "jwt": "pyjwt", "git": "gitpython", "attr": "attrs",
    "google.protobuf": "protobuf", "fitz": "pymupdf", "Levenshtein": "python-levenshtein",
    "mpl_toolkits": "matplotlib", "tables": "tables", "sqlalchemy": "SQLAlchemy",
}
_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'")
_PACKAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class MissingModule:
    module: str
    package: str


def missing_module(error: ErrorInfo | None) -> MissingModule | None:
    """The package to install for a ModuleNotFoundError, or None."""
    if error is None or error.ename != "ModuleNotFoundError":
        return None
    m = _MODULE.search(error.evalue)
    if not m:
        return None
    module = m.group(1)
    top = module.split(".")[0]
    package = PACKAGES.get(module) or PACKAGES.get(top) or top
    if not _PACKAGE_NAME.match(package) or top.startswith("_"):
        return None
    return MissingModule(top, package)
