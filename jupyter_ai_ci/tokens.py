"""Counting tokens for the context budget.

A real tokenizer (tiktoken) is used when it is installed *and* its encoding
is already on disk.  tiktoken downloads encodings on first use, and a kernel
may have no internet (or a slow one): we never let counting wait on the
network, so the estimate below is the working path and tiktoken a bonus.

The estimate: one token per 3.5 characters, plus one for every two bytes
beyond the first that non-ASCII characters take in UTF-8.  Real tokenizers give about
4 characters per token for English and 3–3.5 for code, numbers and tables
(what a notebook context is made of), and about one token per CJK
character; erring high keeps a budget a budget when the real count is used
by the server.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

# Newest first: o200k_base is the gpt-4o family's, cl100k_base gpt-4's.
_ENCODINGS = ("o200k_base", "cl100k_base")
_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
ESTIMATE_NAME = "estimate (chars/3.5)"


def estimate_tokens(text: str) -> int:
    if text.isascii():
        return (len(text) * 2 + 6) // 7
    extra = len(text.encode("utf-8", "replace")) - len(text)
    return (len(text) * 2 + 6) // 7 + extra // 2


def _cached_on_disk(name: str) -> bool:
    # Mirrors tiktoken.load.read_file_cached: a cache miss there means a download.
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if cache_dir is None:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    key = hashlib.sha1(_BLOB.format(name).encode()).hexdigest()
    return os.path.exists(os.path.join(cache_dir, key))


def _count_with(encoding: Any, text: str) -> int:
    # Text from a notebook may contain "<|endoftext|>"; count it as text.
    return len(encoding.encode(text, disallowed_special=()))


@lru_cache(maxsize=1)
def _counter() -> tuple[str, Callable[[str], int]]:
    try:
        import tiktoken
    except Exception:
        return ESTIMATE_NAME, estimate_tokens
    for name in _ENCODINGS:
        if not _cached_on_disk(name):
            continue
        try:
            encoding = tiktoken.get_encoding(name)
            encoding.encode("probe")
        except Exception:  # a corrupt cache or a changed tiktoken: fall back quietly
            continue
        return f"tiktoken {name}", partial(_count_with, encoding)
    return ESTIMATE_NAME, estimate_tokens


def count_tokens(text: str) -> int:
    """Tokens in ``text``: tiktoken when available offline, else the estimate."""
    return _counter()[1](text)


def counter_name() -> str:
    """How tokens are counted, for ``--show-context``."""
    return _counter()[0]


def reset() -> None:
    """Forget the chosen counter (tests; a tiktoken cache filled meanwhile)."""
    _counter.cache_clear()


def estimate_usage(text: str) -> int:
    # ~4 characters per token for English and code: used only when the
    # server reports no usage.
    return (len(text) + 3) // 4
