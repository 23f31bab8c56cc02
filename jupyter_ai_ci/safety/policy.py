"""Checks before generated code runs: pure functions the loop calls.

A guard against accidents, not a sandbox: the scan reads the code's AST and
flags calls that are easy to regret (running processes, deleting files, writes
outside the working directory, destructive SQL, network, ``eval``, imports and
lookups by name, ``ctypes``, changing ``sys.modules``, leaving the kernel,
shell escapes).  Code built to hide what it calls can still get past a static
scan; isolation means running in a separate kernel.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Literal

from jupyter_ai_ci.events import ErrorInfo
from jupyter_ai_ci.safety import ownsettings, sql, writes
from jupyter_ai_ci.safety.astutil import (
    NAMESPACE_LOOKUPS,
    Scope,
    dotted,
    in_kernel,
    literal_str,
    parse_cell,
    root_name,
    scope_of,
)
from jupyter_ai_ci.safety.risktable import HIDDEN, RISKY_MAGICS, WRITE_MAGICS, risky_call

Mode = Literal["auto", "ask-risky", "ask"]
MODES: tuple[Mode, ...] = ("auto", "ask-risky", "ask")

@dataclass(frozen=True)
class Risk:
    kind: str  # process, delete, write, network, eval, ctypes, exit, modules, builtins, shell, settings
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
    # Where the kernel's working directory is, from its notebook's folder, when the run started
    # ("" there or unknown, "?" unreachable by a relative path): relative writes are judged from it.
    moved: str = ""
    # What names already in the kernel stand for (``run`` -> ``subprocess.run``), when the run started.
    bindings: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Decision:
    verdict: Literal["run", "ask", "refuse"]
    reasons: tuple[str, ...] = ()


def parse_blocks(blocks: Sequence[str]) -> tuple[list[ast.Module], tuple[int, ErrorInfo] | None]:
    """Each block's tree, for ``scan_trees``, up to the first block that does not parse,
    which is returned with the error the model is shown (else None)."""
    trees: list[ast.Module] = []
    for index, code in enumerate(blocks):
        try:
            trees.append(parse_cell(code))
        except SyntaxError as exc:
            where = f'  File "<cell>", line {exc.lineno}\n    {(exc.text or "").rstrip()}\n'
            return trees, (index, ErrorInfo("SyntaxError", str(exc.msg), f"{where}SyntaxError: {exc.msg}",
                                            exc.lineno))
    return trees, None


def syntax_error(blocks: Sequence[str]) -> tuple[int, ErrorInfo] | None:
    """The first block that does not parse, as the error the model is shown."""
    return parse_blocks(blocks)[1]


def scan(blocks: Sequence[str]) -> Scan:
    """``scan_trees`` for code given as text; blocks that do not parse are skipped."""
    trees: list[ast.Module] = []
    for code in blocks:
        try:
            trees.append(parse_cell(code))
        except SyntaxError:
            continue
    return scan_trees(trees)


def scan_trees(trees: Sequence[ast.Module], moved: str = "", bindings: Sequence[tuple[str, str]] = ()) -> Scan:
    """The risks in an attempt's blocks, and every name they call or import.  ``moved`` and
    ``bindings``: ``PolicySettings``'."""
    # The blocks run one after another, so a name bound in one holds in the next.
    scope = scope_of(trees, moved, bindings)
    risks, calls = _scope_risks(scope)
    # A kernel name the code binds again later, or only in a branch (``run(...)`` then ``import
    # json as run``): read once more with the kernel's meaning, and both readings' risks count.
    if scope.overridden:
        more, more_calls = _scope_risks(replace(scope, aliases={**scope.aliases, **scope.overridden}))
        risks, calls = risks + more, calls | more_calls
    unique = {(r.kind, r.name, r.line): r for r in risks}
    return Scan(tuple(unique.values()), frozenset(calls))


def _scope_risks(scope: Scope) -> tuple[list[Risk], set[str]]:
    risks: list[Risk] = []
    calls: set[str] = set(scope.aliases.values()) | set(scope.stars)  # the deny list knows ``from M import *``
    for module in scope.unread_stars:  # its names cannot be read here: what they call is hidden
        if module.split(".")[0] in HIDDEN:
            risks.append(Risk("eval", f"from {module} import *", "imports every name of a module with risky "
                              "calls, hiding which it calls"))
    for node in scope.nodes:
        if isinstance(node, _JUDGED):  # most nodes are names, constants, operators: not a call for each
            risks.extend(_node_risks(node, scope, calls))
    # The magic's settings, its object and our package: the person's, never the model's (#38).
    risks.extend(Risk(ownsettings.KIND, what, why, line) for what, why, line in ownsettings.reach_findings(scope))
    return risks, calls


# The only nodes _node_risks finds anything in.
_JUDGED = (ast.Call, ast.Assign, ast.Delete, ast.AugAssign, ast.AnnAssign)


def _node_risks(node: ast.AST, scope: Scope, calls: set[str]) -> list[Risk]:
    line = getattr(node, "lineno", 0)
    aliases = scope.aliases
    if isinstance(node, ast.Call):
        name = dotted(node.func, aliases)
        if name is None and isinstance(node.func, ast.Attribute):
            name = f"<expr>.{node.func.attr}"  # Path('x').unlink(): the method still tells
        bound = scope.values.get(node.func.id) if isinstance(node.func, ast.Name) else None
        if (name is None and computed_lookup(node.func, aliases)) or (
                bound is not None and computed_lookup(bound, aliases)):  # or f = globals()[k]; f(...)
            return [Risk("eval", "globals()[…]", "calls a name looked up in the kernel's namespace at run time",
                         line)]
        if name is None:
            return []
        name = in_kernel(name, lambda head: scope.kernel.get(head) or aliases.get(head))
        calls.add(name)
        if name == "setattr" and node.args and dotted(node.args[0], aliases) in (
                "builtins", "__builtins__", "sys", "sys.modules"):
            return [Risk("builtins", "setattr", "changes Python's builtins or sys", line)]
        if (name.startswith("get_ipython().run_") or name == "get_ipython().magic") and node.args:
            magic = (literal_str(node.args[0]) or "").lower()
            if name == "get_ipython().magic":  # the old API: magic('cd ..')
                magic = magic.lstrip("%").split(" ", 1)[0]
            if magic in RISKY_MAGICS:
                return [Risk("write" if magic in WRITE_MAGICS else "shell", f"%{magic}", RISKY_MAGICS[magic], line)]
            if settings := ownsettings.magic_findings(magic, _magic_line(node, name)):
                return [Risk(ownsettings.KIND, what, why, line) for what, why in settings]
            dropped = sql.magic_findings(node, scope) if magic == "sql" else []
            return [Risk("delete", "%sql", why, line) for why in dropped]
        if name in ("getattr", "importlib.import_module", "__import__", "importlib.__import__"):
            return _lookup_risks(node, name, scope, line)
        if settings := ownsettings.call_findings(node, name, scope):
            return [Risk(ownsettings.KIND, what, why, line) for what, why in settings]
        found = writes.write_findings(node, name, scope)
        if found is not None:
            return [Risk(f.kind, f.name or name, f.why, line) for f in found]
        if dropped := sql.sql_findings(node, name, scope):
            return [Risk("delete", name, why, line) for why in dropped]
        if (risky := risky_call(name)) is not None:
            pattern, kind, why = risky
            if kind == "delete":  # say what goes: the path(s) given, or the path a method is called on
                two = name.endswith(("rename", "replace", "move"))
                paths = [node.func.value] if pattern.startswith("*") and isinstance(node.func, ast.Attribute) \
                    else node.args[:2 if two else 1]
                why += (": " + " -> ".join(writes.shown(p, scope) for p in paths)) if paths else ""
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
        if settings := ownsettings.target_findings(target, scope):
            return [Risk(ownsettings.KIND, what, why, line) for what, why in settings]
        base = target.value if isinstance(target, (ast.Subscript, ast.Attribute)) else None
        name = dotted(base, aliases) if base is not None else None
        if name == "sys.modules" or (name or "").startswith("sys.modules."):
            return [Risk("modules", "sys.modules", "changes sys.modules", line)]
        if name in ("builtins", "__builtins__") or root_name(target) == "__builtins__":
            return [Risk("builtins", f"{name}", "changes Python's builtins", line)]
    return []


def _magic_line(node: ast.Call, name: str) -> str | None:
    """The line a magic is given (None: computed at run time): ``run_line_magic(m, LINE)``, the old
    ``magic('m LINE')``."""
    if name == "get_ipython().magic":
        text = literal_str(node.args[0])
        return None if text is None else (text.lstrip("%").split(" ", 1) + [""])[1]
    return literal_str(node.args[1]) if len(node.args) > 1 else ""


def computed_lookup(node: ast.AST, aliases: dict[str, str]) -> bool:
    """``globals()[name]``, ``globals().get(name)`` (or ``pop``, ``setdefault``, ``__getitem__``),
    ``getattr(__main__, name)`` with a name the code computes: whatever the kernel holds under
    it -- its ``run`` as much as anything -- when it is called."""
    if isinstance(node, ast.Subscript):
        return dotted(node.value, aliases) == "__main__" and literal_str(node.slice) is None
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = dotted(node.func, aliases)
    if func in NAMESPACE_LOOKUPS:
        return literal_str(node.args[0]) is None
    return func == "getattr" and len(node.args) > 1 and dotted(node.args[0], aliases) == "__main__" \
        and literal_str(node.args[1]) is None


def _lookup_risks(node: ast.Call, name: str, scope: Scope, line: int) -> list[Risk]:
    """getattr and imports by a string: judged as what they reach when the string is a literal."""
    target = dotted(node, scope.aliases)  # getattr(os, 'system') -> os.system; import_module('os') -> os
    if name == "getattr":
        if target is not None:
            risky = risky_call(target)
            return [] if risky is None else [Risk(risky[1], target, f"{risky[2]} (looked up with getattr)", line)]
        owner = dotted(node.args[0], scope.aliases) if node.args else None
        if owner is not None and owner.split(".")[0] in HIDDEN and len(node.args) > 1:
            return [Risk("eval", "getattr", f"looks up a name in {owner} computed at run time", line)]
        return []  # getattr(df, column): ordinary
    if target is None:
        return [Risk("eval", name, "imports a module whose name is computed at run time", line)]
    if name.endswith("__import__") or target.split(".")[0] in HIDDEN:
        return [Risk("eval", name, f"imports {target!r} by a string, hiding what it calls", line)]
    return []  # importlib.import_module('pandas'): an import like any other


def _matches(patterns: Sequence[str], *names: str) -> str | None:
    for pattern in patterns:
        for name in names:
            if fnmatchcase(name, pattern) or fnmatchcase(name, pattern + ".*"):
                return pattern
    return None


def decide(policy: PolicySettings, found: Scan) -> Decision:
    """Run, ask, or refuse: deny wins over everything, allow removes a flag."""
    # Each denied thing once, its pattern only when it says more than the name (found by a
    # newcomer: "os.system is on the deny list (os.system); os.system: … — denied (os.system)").
    calls = {n: p for n in sorted(found.calls) if (p := _matches(policy.deny, n))}
    denied = [f"{n} is on the deny list" + ("" if p == n else f" ({p})") for n, p in calls.items()]
    denied += [f"{r.describe()} — denied" + ("" if p in (r.name, r.kind) else f" ({p})") for r in found.risks
               if r.name not in calls and (p := _matches(policy.deny, r.kind, r.name))]
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
