"""Calling our own code inside a kernel, never a look-alike from the notebook's folder.

The sidebar and the command line run parts of ``jupyter_ai_ci`` in the user's kernel as
silent user expressions (the context snapshot, transactions, pip).  A plain
``__import__('jupyter_ai_ci…')`` there finds packages on ``sys.path`` first in the
kernel's working directory ('' and its absolute path lead it): a folder named
``jupyter_ai_ci/`` beside a notebook -- planted in a shared folder or a cloned
repository -- would run as soon as the user pressed Send, code they never chose to run.

Sending our code itself is not an option (it is the whole package), and the server does
not know where the kernel's environment keeps it.  So the expression imports with the
working directory taken off ``sys.path`` for the duration of the call -- ``''``, ``'.'``
and the folder itself where it comes before the standard library (where ``python -m``
and ipykernel put it); the same folder *after* the standard library was put there by the
installation (a ``.pth`` file: an editable install of a checkout) and stays -- and it
refuses a ``jupyter_ai_ci`` already imported from the working directory: one line that
says what to do, the kernel untouched.

The expression looks up no name in the user's namespace, where a user expression is
evaluated: notebook or model code can rebind ``exec``, ``__import__`` or ``__builtins__``
there (issue #30, item 9: ``__import__ = lambda *a, **k: evil`` made our call run ``evil``).
It reaches ``sys`` from a literal, through the import system's own ``BuiltinImporter`` (made
when Python starts, before any user code: the first class of that name), runs ``_BOOT``
with the real ``builtins`` module as its builtins, and imports with ``importlib``.  Code that
patches the ``builtins`` module itself, or our modules in ``sys.modules``, owns the
interpreter already; that is not promised (docs/safety.md).
"""

from __future__ import annotations

PACKAGE = "jupyter_ai_ci"

# Runs in the kernel with its own globals: ``m`` the module, ``a`` the argument; sets ``out``.
_BOOT = """\
import importlib, os, sys
def _here(p, cwd):
    try:
        return isinstance(p, str) and (p in ('', '.') or os.path.realpath(p) == cwd)
    except (OSError, ValueError):
        return False
cwd = os.path.realpath(os.getcwd())
saved = list(sys.path)
std = os.path.realpath(os.path.dirname(os.__file__))
cut = next((i for i, p in enumerate(saved) if isinstance(p, str) and p and os.path.realpath(p) == std), len(saved))
sys.path[:] = [p for i, p in enumerate(saved) if not (p in ('', '.') or (i < cut and _here(p, cwd)))]
kept = {os.path.realpath(p) for p in sys.path if isinstance(p, str) and p}
try:
    top = sys.modules.get('jupyter_ai_ci')
    if top is not None and cwd not in kept:
        where = [getattr(top, '__file__', None) or '', *getattr(top, '__path__', [])]
        if any(os.path.realpath(os.path.dirname(os.path.dirname(w) if w.endswith('.py') else w)) == cwd
               for w in where if w):
            raise ImportError('jupyter_ai_ci in this kernel was imported from its working directory ' + cwd
                              + ' (a folder of that name there shadows the installed package): '
                              + 'rename or remove that folder and restart the kernel')
    out = importlib.import_module(m).kernel_side(a)
finally:
    sys.path[:] = saved + [p for p in sys.path if p not in saved]
"""


# ``sys`` without a name: only attributes of a literal, and comprehension-local names.
_SYS = ("[c for c in ().__class__.__base__.__subclasses__() if c.__module__ == '_frozen_importlib' "
        "and c.__name__ == 'BuiltinImporter'][0].find_spec.__globals__['sys']")


def call(module: str, argument: str) -> str:
    """The user expression that returns ``module.kernel_side(argument)`` in the kernel,
    with ``module`` imported from the kernel's environment, never its working directory,
    and no name looked up in the user's namespace."""
    if not module.startswith(PACKAGE + "."):
        raise ValueError(f"not one of ours: {module}")
    return (f"(lambda b: (lambda g: b.exec({_BOOT!r}, g) or g['out'])"
            f"({{'__builtins__': b, 'm': {module!r}, 'a': {argument!r}}}))({_SYS}.modules['builtins'])")
