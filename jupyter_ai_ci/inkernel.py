"""Calling our own code inside a kernel, never a look-alike from the notebook's folder.

The sidebar and the command line run parts of ``jupyter_ai_ci`` in the user's kernel as
silent user expressions (the context snapshot, transactions, pip).  A plain
``__import__('jupyter_ai_ci…')`` there finds packages on ``sys.path`` first in the
kernel's working directory ('' and its absolute path lead it): a folder named
``jupyter_ai_ci/`` beside a notebook -- planted in a shared folder or a cloned
repository -- would run as soon as the user pressed Send, code they never chose to run.

Sending our code itself is not an option (it is the whole package), and the server does
not know where the kernel's environment keeps it.  So the expression imports with the
working directory taken off ``sys.path`` for the duration of the call, and refuses a
``jupyter_ai_ci`` that was already imported from there: one line that says what to do,
the kernel untouched.  A kernel started inside a source checkout of jupyter_ai_ci
itself (an editable install whose folder is the working directory) gets that refusal
too: we cannot tell it from a planted copy.
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
sys.path[:] = [p for p in saved if not _here(p, cwd)]
try:
    top = sys.modules.get('jupyter_ai_ci')
    if top is not None:
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


def call(module: str, argument: str) -> str:
    """The user expression that returns ``module.kernel_side(argument)`` in the kernel,
    with ``module`` imported from the kernel's environment, never its working directory."""
    if not module.startswith(PACKAGE + "."):
        raise ValueError(f"not one of ours: {module}")
    return f"(lambda g: exec({_BOOT!r}, g) or g['out'])({{'m': {module!r}, 'a': {argument!r}}})"
