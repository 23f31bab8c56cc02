"""A missing conventional import is added by the loop, not asked of the model.

On a third party's benchmark one attempt in four failed with ``NameError: name 'pd'
is not defined``, and a whole model call (10-30 s on a laptop's CPU) went to adding
one line; with a small model the fix often came back the same and ate the retries.
A name that has exactly one conventional meaning -- ``pd``, ``np``, ``plt`` … or a
standard-library module's own name -- is fixed here: the import is put at the top of
the attempt's first cell and the attempt runs again.  A name with several meanings
(``datetime``, ``stats``) is left to the model: guessing it could run the wrong code.

From installed packages only: before the line is added, the kernel is asked where the module
would come from (``ImportSource``; context/importsource.py).  A ``seaborn.py`` beside the
notebook would be imported instead of seaborn -- code nobody chose, run with no question --
so then the import is not added: one line says why, and the model is asked as for any error.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Generator, Sequence
from typing import Any

from jupyter_ai_ci.events import Action, ErrorInfo, ImportSource, Notice

# Each alias with the one import the Python data world means by it.
CONVENTIONAL: dict[str, str] = {
    "pd": "import pandas as pd",
    "np": "import numpy as np",
    "plt": "import matplotlib.pyplot as plt",
    "mpl": "import matplotlib as mpl",
    "sns": "import seaborn as sns",
    "sm": "import statsmodels.api as sm",
    "smf": "import statsmodels.formula.api as smf",
    "px": "import plotly.express as px",
    "go": "import plotly.graph_objects as go",
    "tf": "import tensorflow as tf",
    "sp": "import scipy as sp",
    "nx": "import networkx as nx",
    "pl": "import polars as pl",
    "scipy": "import scipy",
    "sklearn": "import sklearn",
}
# Standard-library modules whose name is mostly also a class or function of theirs: importing
# the module would turn `datetime.now()` into an AttributeError.
_AMBIGUOUS = frozenset({"datetime", "time", "array", "copy", "glob", "pprint", "random", "decimal",
                        "fractions", "statistics", "calendar"})
_NOT_DEFINED = re.compile(r"^name '([A-Za-z_][A-Za-z0-9_]*)' is not defined")


def missing_import(error: ErrorInfo | None, code: Sequence[str]) -> str:
    """The one import line that fixes ``error`` ("" when there is none or it is in the code)."""
    if error is None or error.ename != "NameError":
        return ""
    found = _NOT_DEFINED.match(error.evalue)
    if not found:
        return ""
    name = found.group(1)
    line = CONVENTIONAL.get(name, "")
    if not line and name in sys.stdlib_module_names and name not in _AMBIGUOUS and not name.startswith("_"):
        line = f"import {name}"
    if not line or any(line in block.splitlines() for block in code):
        return ""  # already imported, so the name failed for another reason: the model's to fix
    return line


def checked_import(error: ErrorInfo | None, code: Sequence[str], imports: Sequence[str],
                   attempt: int, step: int) -> Generator[Action, Any, str]:
    """``missing_import``'s line when the kernel says it loads an installed module ("" when there
    is none, it was added already, or a file where the code runs would be imported instead:
    then one line says so, and the model is asked as usual)."""
    line = missing_import(error, code)
    if not line or line in imports:
        return ""
    module = line.split()[1]  # "import matplotlib.pyplot as plt", "import json"
    why = yield ImportSource(module, attempt, step)
    if isinstance(why, str) and why:
        yield Notice("install", f"not importing {module.partition('.')[0]} automatically: {why}",
                     attempt=attempt, step=step)
        return ""
    return line


def with_imports(code: Sequence[str], lines: Sequence[str]) -> list[str]:
    """``code`` with ``lines`` at the top of its first cell (those it does not hold yet)."""
    blocks = list(code)
    if not blocks:
        return blocks
    held = {ln.strip() for block in blocks for ln in block.splitlines()}
    new = [ln for ln in lines if ln not in held]
    if new:
        blocks[0] = "\n".join(new) + "\n" + blocks[0]
    return blocks
