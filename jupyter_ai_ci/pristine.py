"""Our modules' own builtins: generated code that rebinds ``builtins.sum`` does not reach us.

The magic runs inside the kernel, next to the code it runs.  A name like ``sum`` or ``len`` in
our code is looked up, at each call, in the ``builtins`` module, which that code can change:
a candidate that set ``builtins.sum = lambda *a, **k: 999`` made the vote say "999 of 999
candidates agree" (security review #38), and ``builtins.input`` is what asked the person.
So every module of the package runs with a copy of the builtins' namespace taken when the
package is first imported (``%load_ext``, or the first silent request of the sidebar or the
command line), before any generated code ran: its functions look names up there, not in the
module the kernel's code can patch.  One place, for every module, present and future
(``tests/unit/test_pristine.py`` checks them all), instead of ``_sum = sum`` in each.

How: a finder first on ``sys.meta_path`` gives our submodules a loader that puts the copy in
the module's namespace as ``__builtins__`` before its code runs (a function keeps the builtins
of the namespace it was made in).  Code that patches our modules or this copy owns the kernel;
a kernel is the isolation boundary (docs/safety.md).
"""

from __future__ import annotations

import builtins
import sys
from importlib.machinery import ModuleSpec, PathFinder, SourceFileLoader
from types import ModuleType
from typing import Any

OWN: dict[str, Any] = dict(vars(builtins))
globals()["__builtins__"] = OWN  # this module's own functions too

PACKAGE = __name__.rpartition(".")[0]


class _Loader(SourceFileLoader):
    def exec_module(self, module: ModuleType) -> None:
        module.__dict__["__builtins__"] = OWN
        super().exec_module(module)


class _Finder:
    """Our submodules, found as Python finds them, loaded by ``_Loader``."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if not name.startswith(PACKAGE + "."):
            return None
        spec = PathFinder.find_spec(name, path, target)
        if spec is not None and type(spec.loader) is SourceFileLoader and spec.origin is not None:
            spec.loader = _Loader(name, spec.origin)
        return spec


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
