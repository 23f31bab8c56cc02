"""Keeping secrets out of what is sent to the model.

Three layers, because each catches what the others miss:
1. names that look like secrets (``api_key``, ``GITHUB_TOKEN``) never have
   their value described;
2. strings shaped like well-known API keys are masked wherever they appear
   (cell sources, outputs, samples of data);
3. the actual values held by secret-named variables and environment
   variables are masked wherever they appear, whatever their shape: a key
   read with ``getpass`` and printed by accident is still caught.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .events import Message, ModelReply
from .text import head_tail

MASK = "***"
SECRET_NAME = re.compile(r"key|token|secret|passw|credential|auth(?!or)", re.IGNORECASE)
SECRET_VALUE = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic (sk-ant-…)
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|AIza[0-9A-Za-z_-]{35}"  # Google
    r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|xox[abpr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"  # JWT
    r")"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"
)
# Names whose *values* are masked wherever they appear, and whose string
# literals are masked in code.  Narrower than SECRET_NAME on purpose: a
# ``join_key = "customer_id"`` must not mask every mention of the column.
_DATA_KEY = r"(?:join|sort|group|primary|foreign|partition|index|merge|dict|lookup|cache|hash|row|col|column)_?keys?"
_VALUE_NAME = re.compile(rf"^(?!{_DATA_KEY}$).*(?:{SECRET_NAME.pattern})", re.IGNORECASE)
# In source code: a string literal assigned to (or passed as) a secret-named
# target, e.g. ``API_KEY = "abc"``, ``os.environ["HF_TOKEN"] = 'x'``,
# ``connect(password="x")``, ``{"api_key": "x"}``.  The literal goes, the
# code's shape stays.  Anchored on the ``=``/``:`` and its quote (rare), with
# the name read backwards by hand: a regex starting at every word is ~30x slower.
_LITERAL_AFTER = re.compile(r"""[=:][ \t]*[rbuf]{0,2}(?P<q>['"])(?P<value>[^'"\n]+)(?P=q)""", re.IGNORECASE)
# Values shorter than this are not masked by value (``pin = "a"`` would mask every "a").
MIN_SECRET_LEN = 8


def is_secret_name(name: str) -> bool:
    """Broad, as users expect (``*key*``, ``*token*``…): such a variable's value is never described."""
    return SECRET_NAME.search(name) is not None


def holds_secret(name: str) -> bool:
    """Narrower: the value of such a name is masked wherever it appears."""
    return _VALUE_NAME.search(name) is not None


def _name_before(text: str, end: int) -> str:
    """The identifier just before ``end``, skipping spaces, a closing quote and ``]``."""
    j = end
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    if j > 0 and text[j - 1] == "]":
        j -= 1
    if j > 0 and text[j - 1] in "'\"":
        j -= 1
    start = j
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_") and j - start < 80:
        start -= 1
    return text[start:j]


# Cheap substring tests before the regexes: Python's re has no fast scan for
# an alternation, and masking runs on every piece of the context (the full
# regexes cost ~25 ms per 100 KB; the tests ~0.5 ms).
_VALUE_PREFIXES = ("sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "AIza", "hf_",
                   "xox", "eyJ", "-----BEGIN")
_NAME_WORDS = ("key", "token", "secret", "passw", "credential", "auth")


def _mask_assignments(text: str) -> str:
    parts: list[str] = []
    last = 0
    for m in _LITERAL_AFTER.finditer(text):
        if holds_secret(_name_before(text, m.start())):
            parts += [text[last:m.start("value")], MASK]
            last = m.end("value")
    return "".join(parts) + text[last:] if parts else text


def mask_secrets(text: str, known: Iterable[str] = ()) -> str:
    """Mask key-shaped strings, secret assignments in code, and ``known`` values."""
    for value in known:
        if value in text:
            text = text.replace(value, MASK)
    if any(prefix in text for prefix in _VALUE_PREFIXES):
        text = SECRET_VALUE.sub(MASK, text)
    lower = text.lower()
    if any(word in lower for word in _NAME_WORDS):
        text = _mask_assignments(text)
    return text


def secret_values(ns: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The string values of secret-named variables and environment variables.

    Longest first, so that a secret containing another is masked whole.
    """
    environ = os.environ if environ is None else environ
    found: set[str] = set()
    for source in (ns, environ):
        for name, value in list(source.items()):
            if name.startswith(("_i", "_o", "_d")) or name[1:].isdigit():
                continue  # IPython's history (_i12, _12, _oh, _dh): not a secret's home
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            if isinstance(value, str) and len(value) >= MIN_SECRET_LEN and holds_secret(name):
                found.add(value)
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


class MaskingClient:
    """A model client that masks secrets in every message it sends.

    The context is masked when built; this covers what the loop adds later:
    the output and traceback of generated code (a model that prints
    ``os.environ`` must not send the keys back in its fix request).
    ``known`` is called per request, so secrets created meanwhile count.
    """

    def __init__(self, client: Any, known: Callable[[], Sequence[str]]) -> None:
        self.client = client
        self.known = known

    def _masked(self, messages: Sequence[Message]) -> list[Message]:
        known = self.known()
        return [Message(m.role, mask_secrets(m.content, known)) for m in messages]

    def complete(self, messages: Sequence[Message], on_text: Callable[[str], None] | None = None) -> ModelReply:
        reply: ModelReply = self.client.complete(self._masked(messages), on_text)
        return reply

    async def acomplete(self, messages: Sequence[Message],
                        on_text: Callable[[str], None] | None = None) -> ModelReply:
        reply: ModelReply = await self.client.acomplete(self._masked(messages), on_text)
        return reply


def _boundary(text: str, index: int, backwards: bool) -> int:
    """A whitespace position near ``index``, so a cut never splits a key."""
    window = text[max(0, index - 200):index] if backwards else text[index:index + 200]
    for i, ch in enumerate(reversed(window) if backwards else window):
        if ch.isspace():
            return index - i if backwards else index + i
    return index


def masked_cut(text: str, limit: int, known: Sequence[str] = ()) -> str:
    """``head_tail(text, limit)`` with secrets masked *before* the cut.

    Masking after a cut could leave half a key at the cut, too short to be
    recognised; masking all of a huge output first would be slow.  So: keep
    a few times ``limit`` from each end, cut at whitespace, mask, then cut.
    """
    window = 3 * max(limit, 1)
    if len(text) > 2 * window:
        head = _boundary(text, window, backwards=True)
        tail = _boundary(text, len(text) - window, backwards=False)
        text = f"{text[:head]}\n… {tail - head} characters cut …\n{text[tail:]}"
    return head_tail(mask_secrets(text, known), limit)
