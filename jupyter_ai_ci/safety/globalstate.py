"""State the libraries keep for the whole process, that no variable and no module attribute shows.

``random.seed(0)``, ``np.random.seed(0)``, ``np.seterr(all='raise')``, ``pd.set_option(...)``,
``plt.rcParams[...] = ...``, ``warnings.simplefilter('ignore')``: a failed attempt or a candidate
that does one of these changes what every later cell computes or prints -- a seeded generator
makes the next candidate draw other numbers, a display option makes it print another result --
while its names and module attributes are untouched.  Each holder here is read through its own
API when the library is loaded (never imported by us), compared after the attempt, and put back.
What no library exposes (a C extension's private globals, a GPU) is not seen: docs/safety.md.
"""

from __future__ import annotations

import copy
import re
import sys
from builtins import list  # noqa: UP029 -- bound once: the kernel may patch them
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Holder:
    label: str  # as the person reads it on the attempt's line
    module: str  # read only when this module is loaded
    get: Callable[[Any], Any]
    put: Callable[[Any, Any], None]
    same: Callable[[Any, Any], bool]
    # Read only when the attempt's code mentions it (reading a generator's or the rcParams' state
    # costs 40-80 µs; most attempts touch neither); None: always (it costs under a microsecond).
    trigger: re.Pattern[str] | None = None


_RNG = re.compile(r"random|seed|rand|sample|shuffle|permut|choice|split|fit|bootstrap|normal|uniform")


def _np_same(a: Any, b: Any) -> bool:
    return bool(a[0] == b[0] and (a[1] == b[1]).all() and a[2:] == b[2:])


def _pandas_get(pd: Any) -> Any:
    return copy.deepcopy(pd._config.config._global_config)


def _pandas_put(pd: Any, value: Any) -> None:
    live = pd._config.config._global_config
    live.clear()
    live.update(copy.deepcopy(value))


def _rc_put(mpl: Any, value: Any) -> None:
    import warnings

    with warnings.catch_warnings():  # deprecated keys warn on every update; they were there before
        warnings.simplefilter("ignore")
        mpl.rcParams.update(value)


def _filters_put(warnings: Any, value: Any) -> None:
    warnings.filters[:] = value
    warnings._filters_mutated()


HOLDERS: tuple[Holder, ...] = (
    Holder("random's state (random.seed)", "random", lambda m: m.getstate(), lambda m, v: m.setstate(v),
           lambda a, b: a == b, _RNG),
    Holder("numpy.random's state (np.random.seed)", "numpy", lambda np: np.random.get_state(),
           lambda np, v: np.random.set_state(v), _np_same, _RNG),
    Holder("numpy's error handling (np.seterr)", "numpy", lambda np: np.geterr(), lambda np, v: np.seterr(**v),
           lambda a, b: a == b),
    Holder("pandas options (pd.set_option)", "pandas", _pandas_get, _pandas_put, lambda a, b: a == b,
           re.compile(r"option|pd\.options|pandas\.options")),
    Holder("matplotlib.rcParams", "matplotlib", lambda mpl: dict(mpl.rcParams), _rc_put, lambda a, b: a == b,
           re.compile(r"rcParams|\brc\(|rcdefaults|rc_context|style\.use|set_theme|set_style|set_context|"
                      r"set_palette|sns\.set\(")),
    Holder("warnings filters", "warnings", lambda w: list(w.filters), _filters_put, lambda a, b: a == b),
)


def take(code: str) -> dict[str, Any]:
    """Each loaded library's state now, by its label, where ``code`` may change it (a library that
    cannot say is left out)."""
    found: dict[str, Any] = {}
    for h in HOLDERS:
        module = sys.modules.get(h.module)
        if module is not None and (h.trigger is None or h.trigger.search(code)):
            try:
                found[h.label] = h.get(module)
            except Exception:  # noqa: BLE001 -- a version without that API: not seen, as before
                continue
    return found


def changed(before: dict[str, Any]) -> list[tuple[Holder, Any, Any]]:
    """(holder, before, now) for each state that differs from ``before``."""
    out = []
    for h in HOLDERS:
        if h.label not in before or (module := sys.modules.get(h.module)) is None:
            continue
        try:
            now = h.get(module)
            if not h.same(before[h.label], now):
                out.append((h, before[h.label], now))
        except Exception:  # noqa: BLE001
            continue
    return out


def put(holder: Holder, value: Any) -> None:
    module = sys.modules.get(holder.module)
    if module is None:
        raise LookupError(f"{holder.module} is no longer loaded")
    holder.put(module, value)
