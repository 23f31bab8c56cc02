"""Which names and values are secrets: the judgments the masking is built on.

A name can say its value is a secret two ways, broadly (never describe it) and
narrowly (mask its value everywhere); a value can look like a credential.  Kept
apart from the masking itself (``privacy``, ``codesecrets``), which both use them.
"""

from __future__ import annotations

import re
from functools import lru_cache

MASK = "***"
SECRET_NAME = re.compile(r"key|token|secret|passw|credential|auth(?!or)", re.IGNORECASE)
# Does a *name* say that its value is a secret?  Two answers on purpose.
# ``is_secret_name`` (broad, SECRET_NAME above): the value of such a variable
# is never *described* in the context; describing less costs little.
# ``holds_secret`` (narrow, below): the value of such a name is masked
# wherever it appears, whatever it looks like, and so is a string literal
# after it in code, so a wrong "yes" blanks useful text (``KeyError:
# 'Price'``, ``join_key = "customer_id"``).  The name is split into words (snake_case, kebab-case,
# camelCase) and says secret when a word is one of _SECRET_WORDS (or a glued
# word ends with one: ``dbpassword``, ``MYTOKEN``), or is ``key`` after one of
# _KEY_KINDS (``api_key``, ``secretAccessKey``; a bare ``key``, ``sort_key``,
# ``KeyError`` are not), or is ``pwd`` after another word (``db_pwd``; a bare
# ``pwd``/``PWD`` is the working directory) -- and no word after it says the
# name is *about* the secret rather than holding it (``token_count``,
# ``api_key_count``, ``password_reset_count``, ``token_url``, ``TokenError``).
_SECRET_WORDS = frozenset({"secret", "secrets", "password", "passwords", "passwd", "passphrase", "token",
                           "credential", "credentials", "apikey"})
_GLUED_ENDINGS = ("password", "passwd", "secret", "token", "apikey", "accesskey", "secretkey", "privatekey",
                  "credential", "credentials")
_KEY_KINDS = frozenset({"api", "access", "secret", "private", "signing", "encryption", "master", "ssh"})
_ABOUT_WORDS = frozenset({
    "count", "counts", "num", "number", "len", "length", "size", "limit", "limits", "max", "min", "total",
    "url", "uri", "urls", "endpoint", "host", "port", "path", "paths", "file", "filename", "files", "dir",
    "folder", "name", "names", "env", "var", "variable", "col", "cols", "column", "columns", "field", "fields",
    "header", "id", "ids", "index", "idx", "type", "types", "kind", "label", "prefix", "suffix", "pattern",
    "regex", "format", "fmt", "expiry", "expires", "expiration", "ttl", "reset", "resets", "policy",
    "required", "enabled", "hint", "prompt", "usage", "budget", "rate", "ratio", "cost", "error", "errors",
    "exception", "warning", "warnings", "manager", "provider", "loader", "store", "form", "input",
})
_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Values shorter than this are not masked by value (``pin = "a"`` would mask every "a").
MIN_SECRET_LEN = 8
# A credential-like value (what a ``Bearer`` token, or a literal passed by
# position after a secret name in quotes, must be to be masked): at least
# MIN_SECRET_LEN characters, no whitespace, not a placeholder (``{password}``,
# ``${DB_PASSWORD}``, ``%(pw)s``, ``<token>``, ``****``), and not a plain word:
# letters-only words, each lowercase, Capitalized/CamelCase or UPPERCASE,
# joined by ``_``, ``-`` or ``.``, optionally ending in a separated number
# (``customer_id``, ``order-date``, ``Unit_Price``, ``OPENAI_API_KEY``,
# ``col_2024``): ``df[["api_key", "created_at"]]`` lists columns.  Generated
# keys mix letters and digits (``hunter2-the-key``, ``password123``).  A value
# *held by* a secret-named variable, or a literal assigned to one, is judged by
# its length alone (``held_value_is_secret``, ``literal_is_secret``): a
# passphrase of plain words is a secret too (security review, #30).
# (Each hump starts at its capital, so the pattern cannot backtrack badly.)
_WORD_PART = r"(?:[A-Z]?[a-z]+(?:[A-Z][a-z]+)*|[A-Z]+)"
_PLAIN_WORD = re.compile(rf"{_WORD_PART}(?:[_.-]{_WORD_PART})*(?:[_.-][0-9]+)?")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|\$\{?\w+\}?|%\(?\w*\)?s|<[^<>]*>|\*+|[xX]+|\.+")


def is_secret_name(name: str) -> bool:
    """Broad, as users expect (``*key*``, ``*token*``…): such a variable's value is never described.
    Never narrower than ``holds_secret``: ``db_passphrase`` and ``db_pwd`` were masked by value
    yet described in the variable list (security review, #30)."""
    return SECRET_NAME.search(name) is not None or holds_secret(name)


@lru_cache(maxsize=4096)  # asked of every string-valued variable before each model call
def holds_secret(name: str) -> bool:
    """Narrower: the value of such a name is masked wherever it appears (see the rules above)."""
    words = [w.lower() for w in _NAME_WORD.findall(name)]
    for i, word in enumerate(words):
        if (word in _SECRET_WORDS
                or (word == "key" and i > 0 and words[i - 1] in _KEY_KINDS)
                or (word == "pwd" and i > 0)
                or word.endswith(_GLUED_ENDINGS)):
            return not any(w in _ABOUT_WORDS for w in words[i + 1:])
    return False


def may_be_secret(value: str) -> bool:
    """Long enough, not a plain word, not a placeholder (whitespace allowed: a passphrase)."""
    return (len(value) >= MIN_SECRET_LEN and _PLAIN_WORD.fullmatch(value) is None
            and _PLACEHOLDER.fullmatch(value) is None)


def held_value_is_secret(value: str) -> bool:
    """The value of a variable whose name ``holds_secret``: masked wherever it appears, whatever
    it looks like, once it is MIN_SECRET_LEN characters or more (and not only whitespace, which
    would blank every indent).  Judging its shape let ``correct-horse-battery-staple`` (words)
    and ``plain-token-value-123`` through to the model (security review, #30): a column name kept
    under such a name is rare and costs a masked word; a leaked passphrase cannot be taken back."""
    return len(value) >= MIN_SECRET_LEN and not value.isspace()


# An environment variable's *name* (``OPENAI_API_KEY``, ``HF_TOKEN``): what ``api_key: str =
# "OPENAI_API_KEY"`` holds is where the key is, not the key.
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def literal_is_secret(value: str, spaces: bool = False) -> bool:
    """A string literal after a name that ``holds_secret`` in code (``db_password = "…"``): masked
    as the variable's value would be once the cell runs (``held_value_is_secret``), so a cell not
    run yet does not send it -- unless it is a placeholder or an environment variable's name.
    ``spaces``: after ``=`` (an assignment, a keyword argument) a passphrase may hold spaces;
    after ``:`` a quoted text with spaces is a message or prose (``password: "must be …"``)."""
    return (held_value_is_secret(value) and _PLACEHOLDER.fullmatch(value) is None
            and _ENV_NAME.fullmatch(value) is None and (spaces or not any(ch.isspace() for ch in value)))


def is_credential_like(value: str) -> bool:
    """A value that may be a credential (see the rules above _PLAIN_WORD)."""
    return may_be_secret(value) and not any(ch.isspace() for ch in value)


def is_placeholder(value: str) -> bool:
    """``{password}``, ``${DB_PASSWORD}``, ``%(pw)s``, ``<token>``, ``****``: standing for a value."""
    return _PLACEHOLDER.fullmatch(value) is not None
