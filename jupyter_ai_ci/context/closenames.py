"""The closest real names to a wrong one -- ``did you mean 'dept'?`` -- for the fix hints.

Kinds of match, best first: another case, difflib's close matches, a name containing it (or
contained), an abbreviation.  A NameError's pool is every builtin and variable, so what a pool
gives regardless of the word is kept between failures, and difflib is only asked about names
that can reach its cutoff.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence


def _abbreviates(short: str, long: str) -> bool:
    """'dept' for 'department': same first letter, the short one's letters in order in the long one."""
    if len(short) < 3 or len(short) >= len(long) or len(short) < 0.4 * len(long) or short[0] != long[0]:
        return False
    rest = iter(long)
    return all(ch in rest for ch in short)


_ALL_BYTES = bytes(range(256))


def _joined(names: Sequence[str]) -> bytes | None:
    """The names joined by newlines, as bytes, when each byte is one character and the
    newlines part them (``_close_matches``'s shortcut); else None."""
    text = "\n".join(names)
    if not names or not text.isascii() or text.count("\n") != len(names) - 1:
        return None
    return text.encode("ascii")


def _close_matches(word: str, pool: Sequence[str], cutoff: float = 0.6, joined: bytes | None = None) -> list[str]:
    """``difflib.get_close_matches(word, pool, 3, cutoff)``, the same answer in a fraction of
    the time (a NameError's pool is every builtin: difflib took ~1.5 ms a failed attempt).

    The characters two strings match are at most those of the name that occur in ``word``
    at all, so ``2 * that / (len(name) + len(word))`` bounds difflib's ``quick_ratio``, and so
    its ratio, from above: a name under the cutoff on it is one difflib would reject.  They
    are counted for all names at once: the names joined (``joined``: ``_joined(pool)``, if
    the caller has it), every other byte deleted in C."""
    joined = _joined(pool) if joined is None else joined
    if joined is None:
        return difflib.get_close_matches(word, pool, n=3, cutoff=cutoff)  # no shortcut: ask them all
    keep = "".join(set(word)).encode("ascii", "ignore") + b"\n"  # a non-ASCII letter matches none
    ours = joined.translate(None, _ALL_BYTES.translate(None, keep)).split(b"\n")
    n = len(word)
    likely = [c for c, kept in zip(pool, ours, strict=True) if 2.0 * len(kept) / ((len(c) + n) or 1) >= cutoff]
    return difflib.get_close_matches(word, likely, n=3, cutoff=cutoff)


class _Pool:
    """What ``_close`` derives from its names alone, whatever the word: kept for the next
    failure (a NameError's pool is the same builtins and variables each time)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self.pairs = [(c, c.lower()) for c in self.names]
        self.lower = {lc: c for c, lc in self.pairs}
        self.lower_names = list(self.lower)
        self.joined, self.lower_joined = _joined(self.names), _joined(self.lower_names)
        self.by_first: dict[str, list[tuple[str, str]]] = {}
        for pair in self.pairs:
            self.by_first.setdefault(pair[1][:1], []).append(pair)


_POOLS: dict[tuple[str, ...], _Pool] = {}


def _pool(candidates: Iterable[str], word: str) -> _Pool:
    names = tuple(dict.fromkeys(candidates))
    if word in names:  # not the usual case (the word is what is missing): made for this call
        return _Pool([c for c in names if c != word])
    kept = _POOLS.get(names)
    if kept is None:
        if len(_POOLS) >= 8:
            _POOLS.clear()
        kept = _POOLS[names] = _Pool(names)
    return kept


def close(word: str, candidates: Iterable[str]) -> list[str]:
    """The closest real names, best kind of match only: another case, then difflib's close
    matches, then names containing it (or contained), then abbreviations ('dept').  Each kind
    is looked for only when the ones before found nothing."""
    pool = _pool(candidates, word)
    w = word.lower()
    pairs = pool.pairs
    tiers: list[Callable[[], list[str]]] = [
        lambda: [c for c, lc in pairs if lc == w],
        lambda: _close_matches(word, pool.names, joined=pool.joined) + [
            pool.lower[m] for m in _close_matches(w, pool.lower_names, joined=pool.lower_joined)],
        lambda: [c for c, lc in pairs if len(c) >= 3 and (w in lc or lc in w)] if len(w) >= 3 else [],
        # An abbreviation starts with the same letter: only the names that do are asked.
        lambda: [c for c, lc in pool.by_first.get(w[:1], ()) if _abbreviates(lc, w) or _abbreviates(w, lc)],
    ]
    for tier in tiers:
        found = tier()
        if found:
            return list(dict.fromkeys(found))[:3]
    return []


def mean(options: Sequence[str]) -> str:
    return " or ".join(repr(o) for o in options)
