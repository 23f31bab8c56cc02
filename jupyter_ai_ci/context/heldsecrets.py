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
from itertools import islice
from typing import Any

from jupyter_ai_ci.context.secretnames import held_value_is_secret, holds_secret

__all__ = ["ALL_ENTRIES", "DICT_ENTRIES", "held_in_dicts"]

DICT_ENTRIES, ALL_ENTRIES = 200, 1000  # per top-level dict, and in all: under half a millisecond a call
_DEPTH = 3


@lru_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    return holds_secret(key)


def held_in_dicts(dicts: Iterable[dict[Any, Any]]) -> set[str]:
    """The strings held under a secret-looking key in ``dicts``, the smallest dicts first (a huge
    one does not use up what the small ``config`` needs).  Only dicts (subclasses read as plain
    dicts), lists and tuples are walked: nothing else is asked for its items."""
    found: set[str] = set()
    left = ALL_ENTRIES
    for value in sorted(dicts, key=dict.__len__):
        if left <= 0:
            break
        budget = [min(DICT_ENTRIES, left)]
        start = budget[0]
        _walk(value, found, budget, 0, False)
        left -= start - max(budget[0], 0)
    return found


def _entries(value: Any, budget: int) -> list[tuple[Any, Any]]:
    # Copied in one C call (islice over the items, into a list): another thread of the user's
    # cannot change the dict in the middle of it, as it could under a Python loop.
    items = dict.items(value) if isinstance(value, dict) else enumerate(value)
    return list(islice(items, max(budget, 0)))


def _text(item: Any) -> str | None:
    if type(item) is str:
        return item
    if type(item) is bytes:
        return item.decode("utf-8", "replace")
    return None


def _walk(value: Any, found: set[str], budget: list[int], depth: int, secret: bool) -> None:
    """``secret``: everything in ``value`` is under a secret key (``{'tokens': {'github': …}}``).
    A level's strings are read before the containers in it, so a big nested value does not
    use up the budget before the ``password`` beside it."""
    entries = _entries(value, budget[0])
    budget[0] -= len(entries)
    nested = []
    for key, item in entries:
        under = secret or (type(key) is str and _secret_key(key))
        text = _text(item)
        if text is not None:
            if under and held_value_is_secret(text):
                found.add(text)
        elif depth < _DEPTH and isinstance(item, (dict, list, tuple)):
            nested.append((item, under))
    for item, under in nested:
        if budget[0] <= 0:
            return
        _walk(item, found, budget, depth + 1, under)
