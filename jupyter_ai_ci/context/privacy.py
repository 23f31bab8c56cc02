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
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from jupyter_ai_ci.context.codesecrets import mask_assignments, mask_matches
from jupyter_ai_ci.context.heldsecrets import held_in_dicts
from jupyter_ai_ci.context.secretnames import (
    MASK,
    MIN_SECRET_LEN,
    held_value_is_secret,
    holds_secret,
    is_credential_like,
    is_placeholder,
    is_secret_name,
)
from jupyter_ai_ci.events import Message, ModelReply, Usage
from jupyter_ai_ci.text import cut_size, head_tail

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
# A password in a URL's user info (``postgres://user:pass@host``): the scheme,
# user and host stay.  Anchored on ``://`` (a literal prefix re scans for fast).
_URL_PASSWORD = re.compile(r"://(?P<user>[^\s:/@?#'\"]*):(?P<value>[^\s/?#'\"]+)@(?=[^\s/@])")
# ``Authorization: Bearer <token>`` in headers, printed requests, logs.
_AUTH_HEADER = re.compile(r"\b(?:Bearer|Basic)[ \t]+(?P<value>[A-Za-z0-9._~+/-]{12,}=*)", re.IGNORECASE)


# Cheap substring tests before the regexes: Python's re has no fast scan for
# an alternation, and masking runs on every piece of the context (the full
# regexes cost ~25 ms per 100 KB; the tests ~0.5 ms).
_VALUE_PREFIXES = ("sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "AIza", "hf_",
                   "xox", "eyJ", "-----BEGIN")
# Lowercase parts of every name holds_secret accepts (``api_key``, ``apiKey``
# and ``secretAccessKey`` all contain "key"; ``db_pwd`` contains "pwd").
_NAME_WORDS = ("key", "token", "secret", "passw", "passphrase", "credential", "pwd")


def _mask_group(text: str, pattern: re.Pattern[str], check: Callable[[str], bool]) -> str:
    """``text`` with each match's ``value`` group masked where ``check(value)`` holds."""
    return mask_matches(text, pattern, lambda m: check(m.group("value")))


def _url_password(value: str) -> bool:
    return not is_placeholder(value)


# Texts in which the patterns below found nothing (the system prompt, earlier turns, cells
# unchanged since the last request): masking them again is a dictionary look-up.  Only the
# patterns' verdict is kept; the known values are looked for every time.
_CLEAN: dict[str, None] = {}
_CLEAN_MAX = 512
_CLEAN_CHARS = 20_000  # longer texts are not kept


def mask_secrets(text: str, known: Iterable[str] = ()) -> str:
    """Mask ``known`` values, key-shaped strings, URL passwords, bearer tokens and
    credential-like literals after secret names in code."""
    replaced = False
    for value in known:
        # A "key" shorter than this is a placeholder (a local model's "EMPTY"), not a secret.
        if len(value) >= MIN_SECRET_LEN and value in text:
            text = text.replace(value, MASK)
            replaced = True
    if not replaced and text in _CLEAN:
        return text
    masked = _mask_patterns(text)
    if masked == text and len(text) <= _CLEAN_CHARS:
        if len(_CLEAN) >= _CLEAN_MAX:
            _CLEAN.clear()
        _CLEAN[text] = None
    return masked


def _mask_patterns(text: str) -> str:
    """``mask_secrets`` past the known values."""
    if _contains_any(text, _VALUE_PREFIXES):
        text = SECRET_VALUE.sub(MASK, text)
    if "://" in text and "@" in text:
        text = _mask_group(text, _URL_PASSWORD, _url_password)
    lower = text.lower()
    if "bearer" in lower or "basic" in lower:
        text = _mask_group(text, _AUTH_HEADER, is_credential_like)
    if _contains_any(lower, _NAME_WORDS):
        text = mask_assignments(text)
    return text


def _contains_any(text: str, parts: tuple[str, ...]) -> bool:
    # A plain loop: any() over a generator costs more than the tests themselves on the
    # short texts that most of the context is (every piece is masked, every request).
    for part in parts:
        if part in text:
            return True
    return False


# IPython's history: _, __, ___, _i, _ii, _iii, _i12, _12, _ih, _oh, _dh.
_HISTORY_NAME = re.compile(r"_{1,3}|_i{1,3}|_i?[0-9]+|_[iod]h")


def secret_values(ns: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values to mask wherever they appear.

    Environment variables: a broad name rule (KEY, TOKEN, SECRET, PASSW,
    CREDENTIAL, AUTH anywhere in the name, as ``is_secret_name``) and any
    value of MIN_SECRET_LEN characters or more without whitespace: the
    environment is where keys live, whatever they look like; under a name
    that ``holds_secret`` (``DB_PASSPHRASE``) whitespace is allowed too.
    Notebook variables: a name that says it holds a secret (``holds_secret``:
    not ``sort_key``, not ``token_count``) and a string value of
    MIN_SECRET_LEN characters or more, whatever it looks like
    (``held_value_is_secret``): a passphrase (``correct-horse-battery-staple``,
    ``correct horse battery staple``) printed by accident must not leak, and
    a value is only masked where it appears verbatim, so a false hit costs
    little.  The same for an entry of a dict, held by any variable
    (``config = {'db': {'password': '…'}}``): its key says it holds a secret.
    Longest first, so that a secret containing another is masked whole.
    """
    found = set(_environment_secrets(os.environ if environ is None else environ))
    # Asked several times per request and before every model call, over a namespace that in
    # a long session is mostly IPython's history (two names per cell): one look-up per name.
    verdicts = _NAME_VERDICTS
    for name, value in list(ns.items()):
        verdict = verdicts.get(name)
        if verdict is None:
            verdict = _judge(name)
        if not verdict:
            continue
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif not isinstance(value, str):
            continue
        if held_value_is_secret(value):  # the name holds a secret: _judge asked holds_secret
            found.add(value)
    found.update(held_in_dicts(value for name, value in list(ns.items()) if issubclass(type(value), dict)
                               and isinstance(name, str) and name != "Out"
                               and not (name[:1] == "_" and _HISTORY_NAME.fullmatch(name))))
    return longest_first(found)


def longest_first(values: Iterable[str]) -> tuple[str, ...]:
    """Secrets in the order they are masked: a secret holding another is masked whole."""
    return tuple(sorted(set(values), key=lambda v: (-len(v), v)))


# name -> whether a variable of that name may hold a secret; bounded, as history names grow.
_NAME_VERDICTS: dict[Any, bool] = {}
_NAME_VERDICTS_MAX = 50_000


def _judge(name: Any) -> bool:
    # History names are not a secret's home, and each may hold anything (a cell's source).
    verdict = isinstance(name, str) and not (name[:1] == "_" and _HISTORY_NAME.fullmatch(name)) \
        and holds_secret(name)
    if len(_NAME_VERDICTS) >= _NAME_VERDICTS_MAX:
        _NAME_VERDICTS.clear()
    _NAME_VERDICTS[name] = verdict
    return verdict


# The process environment as last scanned (its raw items) and the secrets found in it.
_scanned_environ: tuple[object, tuple[str, ...]] = (None, ())


def _environment_secrets(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The environment's part of ``secret_values``.  Asked for several times per request and
    before every model call (generated code may set a key mid-run): ``os.environ`` is scanned
    again (~90 µs) only when a copy of the raw dict behind it (~2 µs) shows it changed."""
    global _scanned_environ
    raw = getattr(environ, "_data", None) if environ is os.environ else None
    key = tuple(raw.items()) if isinstance(raw, dict) else None
    if key is not None and key == _scanned_environ[0]:
        return _scanned_environ[1]
    values = tuple(value for name, value in list(environ.items())
                   if is_secret_name(name) and len(value) >= MIN_SECRET_LEN
                   and (not any(ch.isspace() for ch in value)
                        or (holds_secret(name) and held_value_is_secret(value))))
    if key is not None:
        _scanned_environ = (key, values)
    return values


def mask_messages(messages: Sequence[Message], known: Sequence[str] = ()) -> list[Message]:
    """The messages as they may leave: every content masked (see ``mask_secrets``)."""
    return [replace(m, content=mask_secrets(m.content, known)) for m in messages]


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
        # A fix request resends every earlier message: each is masked once, not once per
        # request, while the secrets stay the same (masked text by original text).
        self._done: tuple[tuple[str, ...], dict[str, str]] = ((), {})
        self.masking = 0.0  # seconds spent masking: ours, though a caller times it as the model's
        # Calls answered and their tokens, for a run that ends in an exception (Run.abandoned).
        self.calls = 0
        self.spent = Usage()

    def _masked(self, messages: Sequence[Message]) -> list[Message]:
        started = time.perf_counter()
        known = tuple(self.known())
        if known != self._done[0]:
            self._done = (known, {})
        done = self._done[1]
        masked = []
        for m in messages:
            text = done.get(m.content)
            if text is None:
                text = done[m.content] = mask_secrets(m.content, known)
            masked.append(replace(m, content=text))  # a picture cannot be masked: see model/vision.py
        self.masking += time.perf_counter() - started
        return masked

    def complete(self, messages: Sequence[Message], on_text: Callable[[str], None] | None = None,
                 temperature: float | None = None, n: int = 1) -> ModelReply:
        reply: ModelReply = self.client.complete(self._masked(messages), on_text, temperature, n=n)
        self.calls, self.spent = self.calls + 1, self.spent + reply.usage
        return reply

    async def acomplete(self, messages: Sequence[Message], on_text: Callable[[str], None] | None = None,
                        temperature: float | None = None, n: int = 1) -> ModelReply:
        reply: ModelReply = await self.client.acomplete(self._masked(messages), on_text, temperature, n=n)
        self.calls, self.spent = self.calls + 1, self.spent + reply.usage
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
        text = f"{text[:head]}\n… {cut_size(text[head:tail])} characters cut …\n{text[tail:]}"
    return head_tail(mask_secrets(text, known), limit)
