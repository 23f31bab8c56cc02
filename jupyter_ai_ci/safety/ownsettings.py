"""Code that changes the person's settings, for the risk scan (security review #38, finding 1).

The magic's settings live in the kernel the model's code runs in, so that code could switch the
policy off for the rest of the session: ``%config AskMagics.policy = 'auto'``,
``get_ipython().run_line_magic('config', "AskMagics.allow = ['*']")``, the attribute set on the
magic (``ip.magics_manager.registry['AskMagics'].policy = 'auto'``).  It could as well point the
next request elsewhere through the environment the run reads (``OPENAI_BASE_URL``, the key, the
model, the proxies: ``config.SETTINGS_ENVIRONMENT``).  Each is flagged, kind ``settings``: asked
about, refused where nobody can be asked.  The magic puts back whatever changes them anyway
(``drivers/own_settings.py``); this only says so before it runs.

Read as the rest of the scan, a superset: a name that reaches the magic's object, its class, the
shell's configuration or our package is flagged wherever it appears, and so is an environment
variable or a configuration named at run time.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from fnmatch import fnmatchcase

from jupyter_ai_ci.config import SETTINGS_ENV_PREFIXES, SETTINGS_ENVIRONMENT, SETTINGS_SECTIONS
from jupyter_ai_ci.safety.astutil import Scope, dotted, literal_str

__all__ = ["KIND", "call_findings", "magic_findings", "reach_findings", "target_findings"]

KIND = "settings"
Finding = tuple[str, str]  # what, why

WHY = "changes jupyter-ai-ci's settings, which are yours to change"
_WHY_ENV = "sets an environment variable the next request reads (its endpoint, key, model or proxy)"
# Configuration sections that reach AskMagics (its class and every base a Configurable reads).
_SECTIONS = {*SETTINGS_SECTIONS, "LoggingConfigurable", "SingletonConfigurable"}
# Names that reach the magic's object or class: through the shell's magics, its configurables,
# the class's own name, or our package.
_REACHING = {"magics_manager", "configurables", "find_magic", "find_line_magic", "find_cell_magic",
             "extension_manager", "register_magics", "AskMagics", "AICISettings", "OwnSettings"}
# The shell's configuration (a new AskMagics reads it) and its application's.
_SHELL = {"get_ipython().config", "get_ipython().parent"}
_APPLICATION = ("*Application.instance", "*App.instance", "*get_config")
_ENVIRON = ("os.environ", "os.environb")
_ENV_METHODS = {"update", "pop", "setdefault", "clear", "popitem", "__setitem__", "__delitem__"}


def guarded(variable: str | None) -> bool:
    """Whether a request reads ``variable`` (None: named at run time, so it may)."""
    if variable is None:
        return True
    return variable in SETTINGS_ENVIRONMENT or variable.upper() in SETTINGS_ENVIRONMENT or \
        variable.startswith(SETTINGS_ENV_PREFIXES)


def _env(variable: str | None, what: str) -> list[Finding]:
    return [(what if variable is None else f"{what}[{variable!r}]", _WHY_ENV)] if guarded(variable) else []


def magic_findings(magic: str, line: str | None) -> list[Finding]:
    """``%config``, ``%env`` / ``%set_env`` and ``%load_ext`` / ``%reload_ext`` / ``%unload_ext``."""
    if magic == "config":
        return _config(line)
    if magic in ("env", "set_env"):
        if line is None or ("=" not in line and magic == "env" and len(line.split()) < 2):
            return [] if line is not None else _env(None, f"%{magic}")  # %env NAME reads it
        name = line.split("=", 1)[0].split()[0] if line.split() else ""
        return _env(None if "$" in name or "{" in name else name, f"%{magic}")
    if magic in ("load_ext", "reload_ext", "unload_ext") and (line is None or "jupyter_ai_ci" in line):
        # Ours loaded anew: a new AskMagics reads the shell's configuration.  Another extension
        # (%load_ext autoreload) is an import like any other.
        return [(f"%{magic}", "loads this extension anew: a new AskMagics reads the shell's configuration")]
    return []


def _config(line: str | None) -> list[Finding]:
    """IPython runs ``cfg.<line>`` as Python and gives the result to every configurable."""
    if line is None:
        return [("%config", f"{WHY} (a configuration named at run time)")]
    if "=" not in line:
        return []  # %config AskMagics: lists them
    try:
        tree = ast.parse("cfg." + line.strip())
    except SyntaxError:
        return []  # IPython cannot run it either
    sections = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name) and node.value.id == "cfg"}
    if sections & _SECTIONS:
        return [(f"%config {sorted(sections & _SECTIONS)[0]}", WHY)]
    if any(isinstance(node, ast.Call) for node in ast.walk(tree)):
        return [("%config", "evaluates its value as code")]
    return []


def call_findings(node: ast.Call, name: str, scope: Scope) -> list[Finding]:
    """``os.putenv``, ``os.environ.update(…)`` and the like, and the application's configuration."""
    first = literal_str(node.args[0]) if node.args else None
    if name in ("os.putenv", "os.unsetenv"):
        return _env(first, name)
    owner, _, method = name.rpartition(".")
    if owner in _ENVIRON and method in _ENV_METHODS:
        if method in ("clear", "popitem"):
            return [(name, _WHY_ENV)]
        if method == "update":
            return [f for key in _keys(node) for f in _env(key, owner)]
        return _env(first, owner)
    if any(fnmatchcase(name, pattern) for pattern in _APPLICATION):
        return [(name, f"{WHY} (the application's configuration)")]
    return []


def _keys(node: ast.Call) -> Iterator[str | None]:
    """The variables ``os.environ.update(…)`` sets; None for one it names at run time."""
    for arg in node.args:
        if isinstance(arg, ast.Dict):
            yield from (literal_str(k) if k is not None else None for k in arg.keys)
        else:
            yield None
    for keyword in node.keywords:
        yield keyword.arg


def target_findings(target: ast.AST, scope: Scope) -> list[Finding]:
    """``os.environ['OPENAI_BASE_URL'] = …`` (or ``del``, ``|=``), and ``os.environ`` itself rebound."""
    if isinstance(target, ast.Subscript) and dotted(target.value, scope.aliases) in _ENVIRON:
        return _env(literal_str(target.slice), "os.environ")
    if dotted(target, scope.aliases) in _ENVIRON:
        return [("os.environ", _WHY_ENV)]
    return []


def reach_findings(scope: Scope) -> list[tuple[str, str, int]]:
    """Every place the code reaches the magic's object, its class, the shell's configuration or
    our package: ``(what, why, line)``."""
    found: list[tuple[str, str, int]] = []
    for node in scope.nodes:
        what: str | None = None
        if isinstance(node, ast.Attribute):
            if node.attr in _REACHING:
                what = node.attr
            elif node.attr in ("config", "parent") and dotted(node, scope.aliases) in _SHELL:
                what = f"get_ipython().{node.attr}"
        elif isinstance(node, ast.Name) and node.id in _REACHING:
            what = node.id
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                node.value in _REACHING or node.value.split(".")[0] == "jupyter_ai_ci"):
            what = repr(node.value)  # registry['AskMagics'], getattr(ip, 'magics_manager')
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            what = next((m for m in modules if m.split(".")[0] == "jupyter_ai_ci"), None)
        if what is not None:
            found.append((what, "reaches the %ask magic, its settings or jupyter_ai_ci, which are yours to change",
                          getattr(node, "lineno", 0)))
    return found
