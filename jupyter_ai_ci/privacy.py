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

MASK = "***"
SECRET_NAME = re.compile(r"key|token|secret|passw|pwd|credential|auth(?!or)", re.IGNORECASE)
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
# ``connect(password="x")``.  The literal goes, the code's shape stays.
_SECRET_ASSIGNMENT = re.compile(
    r"""(?P<lhs>\b(?P<name>\w+)['"]?\]?\s*(?:=|:)\s*[rbuf]*)"""
    r"""(?P<q>['"])(?P<value>[^'"\n]+)(?P=q)""",
)
# Values shorter than this are not masked by value (``pwd = "a"`` would mask every "a").
MIN_SECRET_LEN = 8


def is_secret_name(name: str) -> bool:
    """Broad, as users expect (``*key*``, ``*token*``…): such a variable's value is never described."""
    return SECRET_NAME.search(name) is not None


def holds_secret(name: str) -> bool:
    """Narrower: the value of such a name is masked wherever it appears."""
    return _VALUE_NAME.search(name) is not None


def _mask_literal(m: re.Match[str]) -> str:
    return f"{m['lhs']}{m['q']}{MASK}{m['q']}" if holds_secret(m["name"]) else m.group(0)


def mask_secrets(text: str, known: Iterable[str] = ()) -> str:
    """Mask key-shaped strings, secret assignments in code, and ``known`` values."""
    for value in known:
        if value in text:
            text = text.replace(value, MASK)
    text = SECRET_VALUE.sub(MASK, text)
    return _SECRET_ASSIGNMENT.sub(_mask_literal, text)


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
