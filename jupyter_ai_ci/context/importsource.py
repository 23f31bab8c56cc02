"""Where an automatic import would come from: an installed package, or a file beside the notebook.

On ``NameError: name 'sns' is not defined`` the loop adds ``import seaborn as sns`` with no
model call and no question (core/imports.py).  Python looks for ``seaborn`` in the kernel's
working directory first ('' or the folder itself leads ``sys.path``), so a ``seaborn.py``
planted there -- a shared folder, an unpacked archive, a cloned repository -- would run,
code nobody chose.  So before the line is added the kernel is asked (``ImportSource``): the
module is looked up twice, *found*, never imported (nothing of it runs), once as the import
statement would and once with the working directory left out of the search; when the two
differ, a file in this folder would be imported instead of the installed package, and the
import is left to the model, with one line.  The magic asks its own process; the panel and
the command line evaluate ``expression()`` in the kernel, as for the kernel's names
(context/stepnames.py).  The working directory is the notebook's folder in every Jupyter
frontend; a folder on ``sys.path`` *after* the standard library was put there by an
installation (an editable install's ``.pth``) and counts as installed, as in inkernel.py.
"""

from __future__ import annotations

import ast
import importlib.machinery
import json
import os
import sys
from collections.abc import Mapping, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

from jupyter_ai_ci import inkernel


def shadowing(module: str, path: Sequence[Any] | None = None) -> str:
    """"" when ``import module`` here loads an installed module (or finds none: the import
    fails as before); otherwise why not, in words: "seaborn.py in this folder would shadow the
    installed package".  ``path``: the search path the user's code has (``sys.path``)."""
    top = module.partition(".")[0]  # `import matplotlib.pyplot` runs matplotlib's __init__ first
    cwd = os.path.realpath(os.getcwd())
    path = list(sys.path if path is None else path)
    installed_path = _without_working_dir(path, cwd)
    loaded = sys.modules.get(top)
    if loaded is not None:  # imported already: the import statement only binds it
        spec = _spec_of(loaded)
        shown = _in_folder(spec, cwd)
        installed = _find(top, installed_path) if shown else None
        if not shown or spec is not None and installed is not None and _same(spec, installed):
            return ""
        return f"{top} in this kernel was imported from {shown} in this folder"
    found = _find(top, path)
    if found is None:
        return ""  # ModuleNotFoundError, as without the check (then the install path, if allowed)
    installed = _find(top, installed_path)
    if installed is not None and _same(found, installed):
        return ""
    shown = _in_folder(found, cwd) or (found.origin or top)
    if installed is None:
        return f"{shown} in this folder would be imported, and no installed package has that name"
    return f"{shown} in this folder would shadow the installed package"


def _without_working_dir(path: Sequence[Any], cwd: str) -> list[str]:
    """``sys.path`` without '' and '.', and without the working directory where it comes before
    the standard library (where ``python -m`` and ipykernel put it)."""
    std = os.path.realpath(os.path.dirname(os.__file__))
    real = [os.path.realpath(p) if isinstance(p, str) and p else "" for p in path]
    cut = next((i for i, r in enumerate(real) if r == std), len(real))
    return [p for i, p in enumerate(path) if isinstance(p, str) and p not in ("", ".")
            and not (i < cut and real[i] == cwd)]


def _find(top: str, path: list[str]) -> ModuleSpec | None:
    """The spec the import system would find for ``top`` with ``path`` as ``sys.path``: every
    finder of ``sys.meta_path`` in turn, as ``importlib`` does, with ``sys.path`` left untouched."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = importlib.machinery.PathFinder.find_spec(top, path) if finder is importlib.machinery.PathFinder \
                else find(top, None)
        except (ImportError, ValueError, OSError):
            continue
        if spec is not None:
            return spec  # type: ignore[no-any-return]
    return None


def _spec_of(module: ModuleType) -> ModuleSpec | None:
    spec = getattr(module, "__spec__", None)
    return spec if isinstance(spec, ModuleSpec) else None


def _same(a: ModuleSpec, b: ModuleSpec) -> bool:
    return a.origin == b.origin and list(a.submodule_search_locations or []) == list(b.submodule_search_locations or [])


def _in_folder(spec: ModuleSpec | None, cwd: str) -> str:
    """``seaborn.py`` or ``seaborn/`` when ``spec`` is a module or package directly in ``cwd``; ""."""
    if spec is None:
        return ""
    if spec.submodule_search_locations is not None:  # a package: where its folder is
        for location in spec.submodule_search_locations:
            real = os.path.realpath(location)
            if os.path.dirname(real) == cwd:
                return os.path.basename(real) + "/"
        return ""
    if spec.origin and spec.has_location and os.path.dirname(os.path.realpath(spec.origin)) == cwd:
        return os.path.basename(spec.origin)
    return ""


def expression(module: str) -> str:
    """The user expression that answers ``shadowing(module)`` in the kernel."""
    return inkernel.call("jupyter_ai_ci.context.importsource", module)


def kernel_side(payload: str) -> str:
    """Runs inside the kernel: ``shadowing`` of the module named, as JSON.  ``inkernel.call``
    takes the working directory off ``sys.path`` while it runs us; user code has it first (as
    '' or itself: ipykernel, ``python -m``), so it is put back in front for the search.  Where
    it was not on the path at all, a file there is reported all the same: one model call more."""
    return json.dumps(shadowing(payload, [os.getcwd(), *sys.path]))


def from_reply(user_expression: Mapping[str, Any], module: str) -> str:
    """The kernel's answer; when it could not give one, a reason not to import (the model is
    asked instead: an import nobody checked could load a file of this folder)."""
    try:
        if user_expression.get("status") == "ok":
            said = json.loads(ast.literal_eval(user_expression["data"]["text/plain"]))
            if isinstance(said, str):
                return said
    except (ValueError, SyntaxError, KeyError, TypeError, AttributeError):
        pass
    return cannot_say(module)


def cannot_say(module: str) -> str:
    return f"the kernel could not say where {module.partition('.')[0]} would be imported from"
