"""Replay records are signed with a key that only this user has.

The replay store lives beside the notebook, where anyone who can write a file there (a
shared folder, a cloned repository, a downloaded zip) can plant one.  A record carries
an HMAC-SHA256 over its content, made with a per-user secret kept outside every notebook
folder: ``<Jupyter data dir>/jupyter_ai_ci/replay.key`` (``jupyter --data-dir``), mode
0600, created on first use; ``JUPYTER_AI_CI_REPLAY_KEY_FILE`` names another file (the
tests use it).  A record this key did not sign was made elsewhere: its code is shown for
review and runs only when approved (docs/safety.md).

A key file that others could read or that belongs to someone else signs and verifies
nothing: every record then needs approval, and the user is told why.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

KEY_ENV = "JUPYTER_AI_CI_REPLAY_KEY_FILE"
_DOMAIN = b"jupyter-ai-ci replay record v1\n"  # a signature means this and nothing else


def key_path() -> Path:
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV]).expanduser()
    from jupyter_core.paths import jupyter_data_dir  # jupyter_client's own dependency

    return Path(jupyter_data_dir()) / "jupyter_ai_ci" / "replay.key"


class KeyProblem(Exception):
    """The key file exists but cannot be trusted (or cannot be made)."""


def _safe(path: Path) -> None:
    st = path.stat()
    if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o077):
        raise KeyProblem(f"{path} is readable or writable by other users, or not yours; "
                         "delete it and a new key is made")


def _create(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        # O_EXCL: of two processes making it at once, one writes it, both then read it.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))


def user_key() -> bytes:
    """This user's signing key, made on first use; ``KeyProblem`` if it cannot be trusted."""
    path = key_path()
    try:
        if not path.exists():
            _create(path)
        _safe(path)
        key = path.read_text().strip()
    except OSError as exc:
        raise KeyProblem(f"cannot read or create the replay key {path} ({exc.strerror or exc})") from None
    if len(key) < 32:
        raise KeyProblem(f"{path} holds no usable key; delete it and a new key is made")
    return key.encode()


def _message(fields: dict[str, Any]) -> bytes:
    return _DOMAIN + json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign(fields: dict[str, Any]) -> str:
    """The signature of a record's fields; "" when there is no usable key (then nothing
    replays without approval)."""
    try:
        key = user_key()
    except KeyProblem:
        return ""
    return hmac.new(key, _message(fields), hashlib.sha256).hexdigest()


def verify(fields: dict[str, Any], signature: object) -> str:
    """"" when this user's key signed ``fields``, else why the record is not verified."""
    if not isinstance(signature, str) or not signature:
        return "it is not signed"
    try:
        key = user_key()
    except KeyProblem as exc:
        return str(exc)
    expected = hmac.new(key, _message(fields), hashlib.sha256).hexdigest()
    return "" if hmac.compare_digest(expected, signature) else "it was not signed with your key"
