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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Literal

from jupyter_ai_ci.events import ErrorInfo
from jupyter_ai_ci.safety import codestrings, lookups, ownsettings, sql, values, writes
from jupyter_ai_ci.safety.astutil import (
    IMPORTERS,
    Scope,
    dotted,
    literal_str,
    parse_cell,
    resolved,
    root_name,
    scope_of,
    walk,
)
from jupyter_ai_ci.safety.risktable import HIDDEN, risky_call

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
    # The kernel's current directory and its working folder (its notebook's, else the same), absolute:
    # a relative write through a link that leads out of the folder is judged by where it lands (safety/links.py).
    folders: tuple[str, str] | None = None


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


def scan_trees(trees: Sequence[ast.Module], moved: str = "", bindings: Sequence[tuple[str, str]] = (),
               folders: tuple[str, str] | None = None) -> Scan:
    """The risks in an attempt's blocks, and every name they call or import.  ``moved``,
    ``bindings`` and ``folders``: ``PolicySettings``'."""
    # The blocks run one after another, so a name bound in one holds in the next.
    scope, strings, too_deep = _with_strings(trees, lambda more: replace(scope_of([*trees, *more], moved, bindings),
                                                                         folders=folders))
    risks, calls = _scope_risks(scope, strings)
    if too_deep:
        risks.append(Risk("eval", "strings run as code", f"nest more than {_NESTED} deep"))
    # A kernel name the code binds again later, or only in a branch (``run(...)`` then ``import
    # json as run``): read once more with the kernel's meaning, and both readings' risks count.
    if scope.overridden:
        more, more_calls = _scope_risks(replace(scope, aliases={**scope.aliases, **scope.overridden}), strings)
        risks, calls = risks + more, calls | more_calls
    unique = {(r.kind, r.name, r.line): r for r in risks}
    return Scan(tuple(unique.values()), frozenset(calls))


_NESTED = 4  # strings run as code inside strings run as code ... read this deep


def _with_strings(trees: Sequence[ast.Module], scope_with: Callable[[list[ast.Module]], Scope]
                  ) -> tuple[Scope, dict[int, int], bool]:
    """The scope of the code and of the code in the strings it runs (``run_cell("...")``, safety/
    codestrings.py), for each node of the latter the line of the call that runs it, and whether
    they nest deeper than the scan reads."""
    scope = scope_with([])
    inner: list[tuple[ast.Module, int]] = []
    too_deep = False
    for _ in range(_NESTED):
        more = codestrings.inner_trees(scope)
        if len(more) == len(inner):
            break
        inner = more
        scope = scope_with([tree for tree, _ in inner])
    else:
        too_deep = True
    return scope, {id(node): line for tree, line in inner for node in walk(tree)}, too_deep


def _scope_risks(scope: Scope, strings: dict[int, int]) -> tuple[list[Risk], set[str]]:
    risks: list[Risk] = []
    calls: set[str] = set(scope.aliases.values()) | set(scope.stars)  # the deny list knows ``from M import *``
    for module in scope.unread_stars:  # its names cannot be read here: what they call is hidden
        if module.split(".")[0] in HIDDEN:
            risks.append(Risk("eval", f"from {module} import *", "imports every name of a module with risky "
                              "calls, hiding which it calls"))
    # Risky functions handed on, not called; first, so that a call's own reason wins on its line.
    for node, kind, name, why in values.value_risks(scope):
        calls.add(name)
        risks.extend(_placed(node, [Risk(kind, name, why, getattr(node, "lineno", 0))], strings))
    for node in scope.nodes:
        if isinstance(node, _JUDGED):  # most nodes are names, constants, operators: not a call for each
            risks.extend(_placed(node, _node_risks(node, scope, calls), strings))
    # The magic's settings, its object and our package: the person's, never the model's (#38).
    risks.extend(Risk(ownsettings.KIND, what, why, line) for what, why, line in ownsettings.reach_findings(scope))
    return risks, calls


def _placed(node: ast.AST, risks: list[Risk], strings: dict[int, int]) -> list[Risk]:
    """A node's risks at the line of the call that runs it from a string, when it is in one."""
    if id(node) not in strings:
        return risks
    return [replace(r, why=f"{r.why} (in a string run as code)", line=strings[id(node)]) for r in risks]


# The only nodes _node_risks finds anything in.
_JUDGED = (ast.Call, ast.Assign, ast.Delete, ast.AugAssign, ast.AnnAssign)


def _node_risks(node: ast.AST, scope: Scope, calls: set[str]) -> list[Risk]:
    line = getattr(node, "lineno", 0)
    aliases = scope.aliases
    if isinstance(node, ast.Call):
        name = resolved(node.func, scope)
        if name is None and isinstance(node.func, ast.Attribute):
            name = f"<expr>.{node.func.attr}"  # Path('x').unlink(): the method still tells
        bound = scope.values.get(node.func.id) if isinstance(node.func, ast.Name) else None
        if (name is None and lookups.in_kernel_computed(node.func, aliases)) or (
                bound is not None and lookups.in_kernel_computed(bound, aliases)):  # or f = globals()[k]; f(...)
            return [Risk("eval", "globals()[…]", "calls a name looked up in the kernel's namespace at run time",
                         line)]
        if name is None:
            return []
        calls.add(name)
        if "__dict__" in name and dotted(node, aliases) is None:  # vars(subprocess).items(), not .get('run')
            return [Risk(*whole, line)] if (whole := lookups.namespace_risk(name)) is not None else []
        if name == "setattr" and node.args and dotted(node.args[0], aliases) in (
                "builtins", "__builtins__", "sys", "sys.modules"):
            return [Risk("builtins", "setattr", "changes Python's builtins or sys", line)]
        if (name.startswith("get_ipython().run_") or name == "get_ipython().magic") and node.args:
            magic = (literal_str(node.args[0]) or "").lower()
            if name == "get_ipython().magic":  # the old API: magic('cd ..')
                magic = magic.lstrip("%").split(" ", 1)[0]
            if settings := ownsettings.magic_findings(magic, _magic_line(node, name)):
                return [Risk(ownsettings.KIND, what, why, line) for what, why in settings]
        if (run := codestrings.code_risks(node, name, scope)) is not None:  # strings run as code, magics
            return [Risk(*found) for found in run]
        if name == "getattr" or name in IMPORTERS:
            return [Risk(*found, line) for found in lookups.lookup_risks(node, name, scope)]
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
