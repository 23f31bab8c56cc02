"""Names reached by a string: ``getattr``, imports by name, and lookups in a namespace by a key.

A literal string is read as the name it is (``getattr(os, 'system')`` is ``os.system``, in
``astutil.dotted``); a key the code computes hides what it reaches, so a lookup by one in the
kernel's namespace or in a risky module's is asked about.
"""

from __future__ import annotations

import ast

from jupyter_ai_ci.safety.astutil import LOOKUP_METHODS, NAMESPACE_LOOKUPS, Scope, dotted, literal_str
from jupyter_ai_ci.safety.risktable import HIDDEN, risky_call

__all__ = ["in_kernel_computed", "in_module_computed", "lookup_risks", "namespace_risk"]


def in_kernel_computed(node: ast.AST, aliases: dict[str, str]) -> bool:
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


def lookup_risks(node: ast.Call, name: str, scope: Scope) -> list[tuple[str, str, str]]:
    """getattr and imports by a string: judged as what they reach when the string is a literal."""
    target = dotted(node, scope.aliases)  # getattr(os, 'system') -> os.system; import_module('os') -> os
    if name == "getattr":
        if target is not None:
            risky = risky_call(target)
            return [] if risky is None else [(risky[1], target, f"{risky[2]} (looked up with getattr)")]
        owner = dotted(node.args[0], scope.aliases) if node.args else None
        if owner is not None and owner.split(".")[0] in HIDDEN and len(node.args) > 1:
            return [("eval", "getattr", f"looks up a name in {owner} computed at run time")]
        return []  # getattr(df, column): ordinary
    if target is None:
        return [("eval", name, "imports a module whose name is computed at run time")]
    if name.endswith("__import__") or target.split(".")[0] in HIDDEN:
        return [("eval", name, f"imports {target!r} by a string, hiding what it calls")]
    return []  # importlib.import_module('pandas'): an import like any other


def in_module_computed(node: ast.AST, scope: Scope) -> str | None:
    """The risky module whose namespace ``node`` looks a computed name up in: ``vars(os)[name]``,
    ``os.__dict__.get(name)``; None for anything else."""
    if isinstance(node, ast.Subscript) and literal_str(node.slice) is None:
        owner = dotted(node.value, scope.aliases)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args \
            and node.func.attr in LOOKUP_METHODS and literal_str(node.args[0]) is None:
        owner = dotted(node.func.value, scope.aliases)
    else:
        return None
    module = owner[:-len(".__dict__")] if owner is not None and owner.endswith(".__dict__") else None
    return module if module is not None and module.split(".")[0] in HIDDEN else None


def namespace_risk(name: str) -> tuple[str, str, str] | None:
    """``vars(subprocess)`` (``subprocess.__dict__``) handed on or read whole (``.items()``, ``dict(...)``):
    which of its functions the code then reaches is out of sight, as after ``from paramiko import *``.
    None for other names, and for other objects' ``__dict__``."""
    module, found, _ = name.partition(".__dict__")
    if not found or module.split(".")[0] not in HIDDEN:
        return None
    return "eval", f"vars({module})", f"reads the names of {module}, hiding which of its functions it reaches"
