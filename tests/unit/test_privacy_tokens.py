"""Secret masking, and how tokens are counted (tiktoken only when it can load offline)."""

from __future__ import annotations

import hashlib
import sys
import types
from pathlib import Path

import pytest

from jupyter_ai_ci import tokens
from jupyter_ai_ci.context.privacy import mask_secrets, masked_cut, secret_values
from jupyter_ai_ci.context.secretnames import is_secret_name


@pytest.mark.parametrize("text", [
    "sk-proj-abcdefghijklmnopqrstuvwxyz0123",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "AKIAABCDEFGHIJKLMNOP",
    "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
])
def test_key_shaped_strings_are_masked(text: str) -> None:
    assert mask_secrets(f"before {text} after") == "before *** after"


@pytest.mark.parametrize("code, expected", [
    ('API_KEY = "abc123def456"', 'API_KEY = "***"'),
    ("os.environ['HF_TOKEN'] = 'x9y8z7w6v5'", "os.environ['HF_TOKEN'] = '***'"),
    ('connect(user="ann", password="pw-2024!x")', 'connect(user="ann", password="***")'),
    ('API_KEY = "abc123"', 'API_KEY = "abc123"'),  # shorter than MIN_SECRET_LEN: not credential-like
    ('author = "Ann"', 'author = "Ann"'),
    ('join_key = "customer_id"', 'join_key = "customer_id"'),
])
def test_secret_assignments_in_code_keep_their_shape(code: str, expected: str) -> None:
    assert mask_secrets(code) == expected


def test_known_values_of_secret_variables_and_environment() -> None:
    ns = {"db_password": "correct horse", "pin": "12", "name": "correct horse battery", "n": 3,
          "join_key": "customer_id", "api_key": "short"}
    env = {"OPENAI_API_KEY": "plain-looking-value", "HOME": "/root"}
    known = secret_values(ns, env)
    assert known == ("plain-looking-value", "correct horse")
    assert mask_secrets("x plain-looking-value y correct horse", known) == "x *** y ***"
    assert is_secret_name("GITHUB_TOKEN") and is_secret_name("db_passwd") and not is_secret_name("author")
    assert not is_secret_name("pwd")  # a working directory far more often than a password


def test_a_variables_value_is_read_anew_each_time_while_its_name_is_judged_once() -> None:
    # Each name's verdict is kept (a long session's namespace is mostly history names); the
    # value never is: a secret name rebound from a number to a key is found, and dropped again.
    ns: dict[str, object] = {"db_password": 42, "_i7": "db_password = 'correct horse 789'", "_7": "x"}
    assert "correct horse 789" not in secret_values(ns, {})
    ns["db_password"] = "correct horse 789"
    assert "correct horse 789" in secret_values(ns, {})
    ns["db_password"] = b"Tr0ub4dor&3 x"
    assert secret_values(ns, {}) == ("Tr0ub4dor&3 x",)
    del ns["db_password"]
    assert secret_values(ns, {}) == ()


def test_the_process_environment_is_read_again_when_it_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its scan is kept while the environment is unchanged; a key set meanwhile still counts.
    monkeypatch.setenv("MY_SERVICE_TOKEN", "first-value-123")
    assert "first-value-123" in secret_values({})
    assert secret_values({}) == secret_values({})
    monkeypatch.setenv("MY_SERVICE_TOKEN", "second-value-456")
    found = secret_values({})
    assert "second-value-456" in found and "first-value-123" not in found
    monkeypatch.delenv("MY_SERVICE_TOKEN")
    assert "second-value-456" not in secret_values({})


def test_a_cut_never_leaves_half_a_key() -> None:
    key = "sk-abcdefghijklmnopqrstuvwxyz0123456789"
    for position in range(0, 3000, 37):  # wherever the key falls relative to the cuts
        text = "x " * position + key + " y" * (3000 - position)
        cut = masked_cut(text, 200)
        assert "sk-" not in cut and "abcdefghijklmnop" not in cut
        assert len(cut) <= 200
    assert masked_cut("db: correct horse battery", 100, ["correct horse battery"]) == "db: ***"
    assert "sk-" not in __import__("jupyter_ai_ci.context.describe", fromlist=["_"]).describe("s", "a " * 25 + key)


def test_estimate_is_conservative_and_handles_non_ascii() -> None:
    assert tokens.estimate_tokens("") == 0
    assert tokens.estimate_tokens("x" * 35) == 10
    assert tokens.estimate_tokens("数据" * 10) >= 20  # about a token per CJK character


class _FakeEncoding:
    def encode(self, text: str, disallowed_special: object = ()) -> list[int]:
        return [0] * len(text.split())


@pytest.fixture
def fake_tiktoken(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """A stand-in tiktoken module recording which encodings were loaded."""
    loaded: list[str] = []
    module = types.ModuleType("tiktoken")

    def get_encoding(name: str) -> _FakeEncoding:
        loaded.append(name)
        return _FakeEncoding()

    module.get_encoding = get_encoding  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tiktoken", module)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tokens.reset()
    yield loaded
    tokens.reset()


def test_tiktoken_without_its_encoding_on_disk_is_never_asked(fake_tiktoken: list[str]) -> None:
    assert tokens.counter_name() == tokens.ESTIMATE_NAME
    assert tokens.count_tokens("two words") == tokens.estimate_tokens("two words")
    assert fake_tiktoken == []  # no load, hence no download attempt


def test_tiktoken_is_used_when_its_encoding_is_cached(fake_tiktoken: list[str], tmp_path: Path) -> None:
    blob = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    (tmp_path / hashlib.sha1(blob.encode()).hexdigest()).write_bytes(b"cached")
    assert tokens.counter_name() == "tiktoken cl100k_base"
    assert tokens.count_tokens("three little words") == 3
    assert fake_tiktoken == ["cl100k_base"]
