"""Secrets written into code: a string literal after a secret name (``literal_is_secret``).

``API_KEY = "abc…"``, ``connect(password="…")``, ``{"token": "…"}``,
``os.getenv("HF_TOKEN", "…")``: the literal is masked, the code's shape stays,
so the model still sees what the cell does.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from jupyter_ai_ci.context.secretnames import MASK, holds_secret, is_credential_like, literal_is_secret

# In source code: a string literal assigned to (or passed as) a secret-named
# target, e.g. ``API_KEY = "abc"``, ``os.environ["HF_TOKEN"] = 'x'``,
# ``connect(password="x")``, ``{"api_key": "x"}``.  The literal goes, the
# code's shape stays.  Anchored on the ``=``/``:`` and its quote (rare), with
# the name read backwards by hand: a regex starting at every word is ~30x slower.
_LITERAL_AFTER = re.compile(r"""[=:][ \t]*[rbuf]{0,2}(?P<q>['"])(?P<value>[^'"\n]+)(?P=q)""", re.IGNORECASE)


def _name_start(text: str, end: int) -> tuple[int, int]:
    """Where the identifier just before ``end`` is, skipping spaces, a closing quote and ``]``.

    Before an ``=``, the rest of ``==``, ``!=``, ``:=`` is skipped: ``if password == "…"``.
    """
    j = end
    if end < len(text) and text[end] == "=" and j > 0 and text[j - 1] in "=!:":
        j -= 1
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    if j > 0 and text[j - 1] == "]":
        j -= 1
    if j > 0 and text[j - 1] in "'\"":
        j -= 1
    start = j
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_") and j - start < 80:
        start -= 1
    return start, j


def _name_before(text: str, end: int) -> str:
    """The identifier just before ``end``, skipping spaces, a closing quote and ``]``."""
    start, j = _name_start(text, end)
    return text[start:j]


def _secret_target(text: str, anchor: int) -> bool:
    """Is the target before the ``=``/``:`` at ``anchor`` a secret name?

    Before ``=``, an annotation is looked through: ``api_key: str = "…"``,
    ``token: Optional[str] = "…"``, ``password: str | None = "…"``.
    """
    start, j = _name_start(text, anchor)
    if holds_secret(text[start:j]):
        return True
    if text[anchor] != "=":
        return False
    # The annotation: the same line, between a ``:`` and the ``=``, names, brackets, ``|`` only.
    colon = text.rfind(":", max(text.rfind("\n", 0, anchor) + 1, anchor - 120), anchor)
    return colon > 0 and _ANNOTATION.fullmatch(text, colon + 1, anchor) is not None \
        and holds_secret(_name_before(text, colon))


_ANNOTATION = re.compile(r"[\w \t\[\],.|]+")
# Passed by position after a secret name in quotes: ``os.environ.setdefault("API_KEY", "…")``,
# ``os.getenv("HF_TOKEN", "…")``, ``settings.get('password', '…')``.
_LITERAL_PAIR = re.compile(r"""(?P<q1>['"])(?P<name>[A-Za-z_][\w.-]{0,79})(?P=q1)[ \t]*,[ \t]*"""
                           r"""[rbuf]{0,2}(?P<q>['"])(?P<value>[^'"\n]+)(?P=q)""", re.IGNORECASE)


def mask_matches(text: str, pattern: re.Pattern[str], check: Callable[[re.Match[str]], bool]) -> str:
    """``text`` with each match's ``value`` group masked where ``check(match)`` holds."""
    parts: list[str] = []
    last = 0
    for m in pattern.finditer(text):
        if check(m):
            parts += [text[last:m.start("value")], MASK]
            last = m.end("value")
    return "".join(parts) + text[last:] if parts else text


def mask_assignments(text: str) -> str:
    """``text`` with each credential-like literal after a secret name masked."""
    # The value test first: it is cheaper and rejects most literals.  Whatever the value looks
    # like (a passphrase of plain words too): the name says it is a secret (review #30).
    source = text
    masked = mask_matches(source, _LITERAL_AFTER,
                          lambda m: literal_is_secret(m.group("value"), spaces=m.group(0)[0] == "=")
                          and _secret_target(source, m.start()))
    if "," not in masked:
        return masked
    # By position the value must look like a credential: ``df[["api_key", "created_at"]]`` is a
    # list of columns far more often than ``getenv("API_KEY", "a default key")``.
    return mask_matches(masked, _LITERAL_PAIR,
                        lambda m: is_credential_like(m.group("value")) and holds_secret(m.group("name")))
