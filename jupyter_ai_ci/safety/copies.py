"""Copies taken before an attempt of the objects it may change, and their restore in place.

As cheap as the type allows: pandas objects under copy-on-write are shallow copies that pandas
itself protects; numpy arrays are copied; flat lists, dicts and sets shallowly; anything else is
deep-copied, up to a size cap (``estimate_size``).  ``restore_copy`` puts a copy's contents back
into the original object, so other references to it see the restored value too.
"""

from __future__ import annotations

import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

def pandas_cow() -> bool:
    pd = sys.modules.get("pandas")
    if pd is None:
        return False
    if int(pd.__version__.split(".")[0]) >= 3:
        return True  # copy-on-write is always on from pandas 3
    return bool(pd.options.mode.copy_on_write is True)


def is_pandas(obj: Any) -> bool:
    module = type(obj).__module__  # "pandas" for public classes from pandas 3 on
    return (module == "pandas" or module.startswith("pandas.")) and hasattr(obj, "_update_inplace")


_ATOMS = frozenset({int, float, complex, str, bytes, bool, type(None)})


def flat(obj: Any) -> bool:
    """A list/dict/set of plain values: a shallow copy is a full snapshot."""
    items = obj.values() if isinstance(obj, dict) else obj
    # The items' types walked in C (stops at the first other type): half the time of a
    # generator, which was 30 of the 45 ms a 1M-item list's snapshot took.
    return _ATOMS.issuperset(map(type, items))


def is_ndarray(obj: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, np.ndarray)


def estimate_size(obj: Any, cap: int) -> int:
    """Bytes an eager copy of ``obj`` would take, roughly; stops counting past ``cap``."""
    if is_ndarray(obj):
        return int(obj.nbytes)
    if is_pandas(obj):
        return int(obj.memory_usage(deep=False).sum()) if hasattr(obj.memory_usage(), "sum") else 0
    total = 0
    seen: set[int] = set()
    stack = [obj]
    while stack and total <= cap:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        try:
            total += sys.getsizeof(item)
        except TypeError:
            total += 64
        if is_ndarray(item):
            total += int(item.nbytes)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif hasattr(item, "__dict__") and not isinstance(item, type):
            stack.append(vars(item))
    return total


@dataclass
class Saved:
    original: Any
    copy: Any
    how: str  # "pandas", "ndarray", "list", "dict", "set", "bytearray", "object", "rebind"
    size: int = 0  # bytes the copy may come to hold (kept for an undo, it counts against its memory)


def restore_saved(saved: dict[str, Saved], ns: MutableMapping[str, Any]) -> tuple[list[str], list[str]]:
    """Put each copy's contents back into its object; (the names restored in place, "name (why)"
    for those only restored as a copy)."""
    done: list[str] = []
    failed: list[str] = []
    for name, s in saved.items():
        try:
            restore_copy(s)
            done.append(name)
        except Exception as exc:  # noqa: BLE001 -- fall back to the copy itself: the name is right, aliases are not
            ns[name] = s.copy
            failed.append(f"{name} (restored as a copy: {type(exc).__name__})")
    return done, failed


def restore_copy(s: Saved) -> None:
    """Put the copy's contents back into the original object, so other
    references to it (aliases, containers) see the restored value too."""
    o, c = s.original, s.copy
    if s.how == "pandas":
        o._update_inplace(c.copy(deep=False))
    elif s.how == "ndarray":
        if o.shape != c.shape or o.dtype != c.dtype:
            raise ValueError("shape changed")
        o[...] = c
    elif s.how in ("list", "bytearray"):
        o[:] = c
    elif s.how in ("dict", "set"):
        o.clear()
        o.update(c)
    elif hasattr(o, "__dict__") and not hasattr(type(o), "__slots__"):
        vars(o).clear()
        vars(o).update(vars(c))
    else:
        raise TypeError("no in-place restore")
