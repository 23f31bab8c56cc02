"""Secrets a dict holds under a key that says so: ``config = {'db': {'password': '…'}}``.

A variable named ``db_password`` has its value masked wherever it appears (context/privacy.py);
the same passphrase one level down, in a dict of settings, was sent as it is once the dict was
printed.  So every dict the namespace holds is read, with the dicts and lists inside it, for
strings under a key that ``holds_secret`` -- within a budget, since this runs before every
model call: a secret past it, in a huge dict, is not found this way (the patterns and the
environment still are).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from jupyter_ai_ci.context.secretnames import held_value_is_secret, holds_secret

__all__ = ["ALL_ENTRIES", "DICT_ENTRIES", "held_in_dicts"]

DICT_ENTRIES, ALL_ENTRIES = 200, 1000  # per top-level dict, and in all: at most ~0.2 ms a call on this machine
_DEPTH = 3


@lru_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    return holds_secret(key)


def held_in_dicts(dicts: Iterable[dict[Any, Any]]) -> set[str]:
    """The strings held under a secret-looking key in ``dicts`` (exact dicts, lists and tuples are
    walked; nothing of another type is asked for its items)."""
    found: set[str] = set()
    left = ALL_ENTRIES
    for value in dicts:
        if left <= 0:
            break
        budget = [min(DICT_ENTRIES, left)]
        start = budget[0]
        try:
            _walk(value, found, budget, 0)
        except RuntimeError:  # a thread of the user's changed the dict while it was read: what was found stays
            pass
        left -= start - max(budget[0], 0)
    return found


def _walk(value: Any, found: set[str], budget: list[int], depth: int) -> None:
    items = value.items() if type(value) is dict else enumerate(value)
    for key, item in items:
        budget[0] -= 1
        if budget[0] < 0:
            return
        kind = type(item)
        if kind is str:
            if type(key) is str and _secret_key(key) and held_value_is_secret(item):
                found.add(item)
        elif depth < _DEPTH and kind in (dict, list, tuple):
            _walk(item, found, budget, depth + 1)
