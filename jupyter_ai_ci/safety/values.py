"""Risky functions the code hands on instead of calling: the risk scan's rules for values.

Found in a security review (issue #38, item 4): in ``map(os.system, cmds)``,
``executor.submit(os.system, 'id')``, ``threading.Thread(target=os.system, ...)``,
``functools.partial(os.system, 'id')`` or ``[os.system][0]('id')`` nothing in the code calls
``os.system``: something else does.  So a risky function referenced without being called is
judged as a call of it.  So is ``operator.methodcaller('system', 'id')(os)``, which calls
``os.system('id')``, and a lookup in a risky module's namespace by a key the code computes
(``vars(os)[name]``, ``os.__dict__.get(name)``), as ``getattr(os, name)`` is.

What a value is not: a function called where it stands (judged as the call), the base of an
attribute (``subprocess.run`` in ``subprocess.run(...)``), an annotation, an exception class
or a constant (``subprocess.CalledProcessError``, ``subprocess.PIPE``), and a name bound once
to it (``sh = os.system``: the scan reads ``sh`` as ``os.system`` wherever it is used).
"""

from __future__ import annotations

import ast

from jupyter_ai_ci.safety.astutil import Scope, dotted, literal_str, resolved
from jupyter_ai_ci.safety.lookups import in_module_computed, namespace_risk
from jupyter_ai_ci.safety.risktable import HIDDEN, risky_call

__all__ = ["value_risks"]

Found = tuple[ast.AST, str, str, str]  # (where, kind, name, why)
# Kinds a method named in ``operator.methodcaller`` is judged by when what it is applied to is out
# of sight: os's functions of these kinds have names no data object's method has.
_OS_ONLY = ("process", "exit")
_NOT_CALLABLES = ("error", "exception", "warning", "expired", "timeout")  # exception classes, by the name's end


def value_risks(scope: Scope) -> list[Found]:
    """The risky functions the code refers to without calling them, and the method calls that
    ``operator.methodcaller`` makes."""
    methodcallers = any(v.split(".")[0] == "operator" for v in scope.aliases.values())
    skip: set[int] = set()  # parents come before their children in scope.nodes (a walk, breadth first)
    found: list[Found] = []
    for node in scope.nodes:
        if type(node) not in _READ:  # most nodes: constants, operators, contexts
            continue
        if isinstance(node, ast.Call):
            skip.add(id(node.func))
            if methodcallers:
                found.extend(_methodcaller(node, scope))
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            skip.add(id(node.value))
        elif isinstance(node, _HOLDERS):
            skip.update(_not_values(node, scope))
        if not isinstance(node, _CANDIDATES) or isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
            continue
        if (module := in_module_computed(node, scope)) is not None:  # called where it stands or not
            found.append((node, "eval", f"vars({module})[…]", f"looks up a name in {module} computed at run time"))
            continue
        if id(node) in skip:
            continue
        name = resolved(node, scope)
        if name is not None and "__dict__" in name:  # a module's namespace, not one of its functions
            if (whole := namespace_risk(name)) is not None:
                found.append((node, *whole))
            continue
        risky = risky_call(name) if name is not None and _callable(name) else None
        if name is not None and risky is not None:
            found.append((node, risky[1], name, f"{risky[2]} (passed on as a value, to be called elsewhere)"))
    return found


_CANDIDATES = (ast.Name, ast.Attribute, ast.Subscript, ast.Call)
# Nodes holding parts that are no value handed on: annotations, exception classes, aliases' values.
_HOLDERS = (ast.ExceptHandler, ast.arg, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign,
            ast.NamedExpr)
_READ = frozenset(_CANDIDATES + _HOLDERS)


def _callable(name: str) -> bool:
    last = name.rpartition(".")[2]
    return not (last.startswith("__") or last.isupper() or last.lower().endswith(_NOT_CALLABLES)
                or ".exceptions." in name)


def _not_values(node: ast.AST, scope: Scope) -> list[int]:
    """The parts of ``node`` that are not a function handed on, whatever they name."""
    parts: list[ast.AST | None] = []
    if isinstance(node, ast.ExceptHandler):
        parts = [node.type]
    elif isinstance(node, (ast.arg, ast.AnnAssign)):
        parts = [node.annotation]
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        parts = [node.returns]
    elif isinstance(node, (ast.Assign, ast.NamedExpr)):
        # sh = os.system: an alias, read as os.system wherever sh is used (astutil.scope_of)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if all(isinstance(t, ast.Name) and t.id in scope.aliases for t in targets):
            return [id(node.value)]
    return [id(n) for part in parts if part is not None for n in ast.walk(part)]


def _methodcaller(node: ast.Call, scope: Scope) -> list[Found]:
    """``operator.methodcaller('system', 'id')`` calls ``x.system('id')`` on whatever it is applied
    to: judged as that call where it is applied to something the code names (at once, or through a
    name bound once to it), and where it is made, by the method's name alone."""
    if _makes_methodcaller(node, scope):
        method = literal_str(node.args[0])
        risky = _by_method_name(method) if method is not None else None
        return [] if risky is None else [(node, risky[1], f"operator.methodcaller({method!r})", risky[2])]
    maker = scope.values.get(node.func.id) if isinstance(node.func, ast.Name) else node.func
    base = dotted(node.args[0], scope.aliases) if node.args else None
    if maker is None or base is None or not _makes_methodcaller(maker, scope):
        return []
    assert isinstance(maker, ast.Call)
    method = literal_str(maker.args[0])
    if method is None:
        return [(node, "eval", "operator.methodcaller", f"calls a method of {base} named at run time")] \
            if base.split(".")[0] in HIDDEN else []
    risky = risky_call(f"{base}.{method}")
    why = f"{risky[2]} (called by operator.methodcaller)" if risky is not None else ""
    return [] if risky is None else [(node, risky[1], f"{base}.{method}", why)]


def _makes_methodcaller(node: ast.AST, scope: Scope) -> bool:
    return isinstance(node, ast.Call) and bool(node.args) and resolved(node.func, scope) == "operator.methodcaller"


def _by_method_name(method: str) -> tuple[str, str, str] | None:
    """What calling a method of this name on something out of sight may do: ``unlink``, ``rmtree``
    whatever has them; ``system``, ``popen``, ``fork`` as only os has them."""
    risky = risky_call(f"<expr>.{method}")
    if risky is None and (in_os := risky_call(f"os.{method}")) is not None and in_os[1] in _OS_ONLY:
        return in_os
    return risky
