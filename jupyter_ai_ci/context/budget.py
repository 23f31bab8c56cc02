"""The context's token budget: pieces (sections) of items, each taken in full or as one line
while it fits; and the rendered, masked forms of items kept across requests.

``build.py`` decides what the pieces are, their shares and the order they are written in;
this module only spends the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from jupyter_ai_ci.context.privacy import mask_secrets
from jupyter_ai_ci.tokens import count_tokens


@dataclass
class Taken:
    item: Any
    text: str
    form: int  # 0: full, 1: short
    cost: int


# The masked forms of items that are plain text (recent cells, earlier turns, data files,
# the last error, the environment), kept across requests: most of them are the same from
# one request to the next, and rendering and masking them was most of the build's time.
# The key is everything a form depends on: the section, the item itself (frozen text, compared
# by value) and the secrets masked, so a changed output, a new turn or a new secret misses.
# Live variables are described anew every time: their value may change in place.
_FORMS: dict[tuple[str, Any, tuple[str, ...]], Any] = {}
_Kept = TypeVar("_Kept")
_FORMS_MAX = 4000  # entries; then it starts again (a notebook's cells and turns fit many times)


def kept(key: tuple[str, Any, tuple[str, ...]], make: Callable[[], _Kept]) -> _Kept:
    try:
        forms = _FORMS.get(key)
    except TypeError:  # an item that cannot be a key (not text after all): rendered every time
        return make()
    if forms is None:
        if len(_FORMS) >= _FORMS_MAX:
            _FORMS.clear()
        forms = _FORMS[key] = make()
    return forms


# Variables whose description depends on their name, exact type and value alone, and whose
# value cannot change in place: kept like text.  Not float or complex (0.0 == -0.0, yet they
# print differently); not a long string or a huge int (the key would keep it alive).
# Containers, arrays and DataFrames change in place and are described every time.
_PLAIN_TYPES = frozenset({int, bool, str, bytes, type(None)})


def _value_key(item: tuple[str, Any]) -> tuple[str, type, Any] | None:
    name, obj = item
    kind = type(obj)
    if kind not in _PLAIN_TYPES:
        return None
    if (kind is str or kind is bytes) and len(obj) > 1000 or kind is int and obj.bit_length() > 256:
        return None
    return (name, kind, obj)


class Section:
    """One piece of the context: items rendered lazily, taken in order.  ``text``: the
    items are immutable text, so their rendered forms may be kept (``_FORMS``)."""

    def __init__(self, key: str, title: str, items: Sequence[Any],
                 render: Callable[[Any], tuple[str, str | None]], text: bool = False) -> None:
        self.key, self.title, self.items, self.render, self.text = key, title, items, render, text
        self.taken: list[Taken] = []
        self.cost = 0
        self.next = 0


class Budget:
    def __init__(self, total: int, known: tuple[str, ...]) -> None:
        self.total, self.used, self.known = total, 0, known

    def _cost(self, text: str) -> int:
        return count_tokens(text) + 1  # the newline joining it

    def _forms(self, section: Section, item: Any) -> list[str]:
        key = item if section.text else _value_key(item)
        if key is None:
            return [mask_secrets(text, self.known) for text in section.render(item) if text is not None]
        return kept((section.key, key, self.known), lambda: [
            mask_secrets(text, self.known) for text in section.render(item) if text is not None])

    def fill(self, section: Section, limit: float, upgrade: bool = False) -> None:
        """Take items in order while they fit the budget and ``limit``: each in
        full if it fits, else its one-line form.  With ``upgrade``, first turn
        one-line forms taken earlier into full ones where the budget allows."""
        for index, taken in enumerate(section.taken if upgrade else ()):
            if taken.form:
                full = self._forms(section, taken.item)[0]
                extra = self._cost(full) - taken.cost
                if self.used + extra <= self.total:
                    section.taken[index] = Taken(taken.item, full, 0, taken.cost + extra)
                    section.cost += extra
                    self.used += extra
        while section.next < len(section.items):
            item = section.items[section.next]
            header = 0 if section.taken or not section.title else self._cost(section.title)
            for form, text in enumerate(self._forms(section, item)):
                cost = self._cost(text) + header
                if self.used + cost <= self.total and section.cost + cost <= limit:
                    section.taken.append(Taken(item, text, form, cost - header))
                    section.cost += cost
                    self.used += cost
                    section.next += 1
                    break
            else:
                return
