"""Secrets a dict holds under a key that says so (context/heldsecrets.py), found for masking."""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from typing import Any

from jupyter_ai_ci.context.heldsecrets import ALL_ENTRIES, DICT_ENTRIES, held_in_dicts
from jupyter_ai_ci.context.privacy import mask_secrets, secret_values

PHRASE = "correct horse battery staple"


class Settings(dict):  # type: ignore[type-arg]
    """A dict subclass whose own ``items`` must never be called: read as the plain dict it is."""

    def items(self) -> Any:
        raise AssertionError("read through the subclass")


def test_strings_under_secret_keys_are_found_a_few_levels_down() -> None:
    ns = {"config": {"db": {"password": PHRASE, "host": "db.local"}, "accounts": [{"api_key": "plain-token-value-42"}],
                     "sort_key": "customer_id", "extra": Settings(token="vault-token-value-7")}}
    found = secret_values(ns, {})
    assert {PHRASE, "plain-token-value-42", "vault-token-value-7"} <= set(found)
    assert "customer_id" not in found and "db.local" not in found
    assert PHRASE not in mask_secrets(repr(ns["config"]), found)


def test_everything_under_a_secret_key_counts_and_bytes_too() -> None:
    found = held_in_dicts([{"passwords": ["first-key-value-1", "second-key-value-2"],
                            "secrets": {"github": "ghost-token-value-3"}, "passwd": b"bytes-secret-4",
                            "tokens": ["the", "words", "of a sentence, not secrets"]}])  # NLP's tokens
    assert found == {"first-key-value-1", "second-key-value-2", "ghost-token-value-3", "bytes-secret-4"}


def test_ordered_and_default_dicts_in_the_namespace_are_read() -> None:
    ns = {"a": OrderedDict(password=PHRASE), "b": defaultdict(str, secret="another-secret-value")}
    assert {PHRASE, "another-secret-value"} <= set(secret_values(ns, {}))


def test_a_big_value_before_the_password_does_not_use_up_its_budget() -> None:
    assert held_in_dicts([{"rows": list(range(10 * DICT_ENTRIES)), "password": PHRASE}]) == {PHRASE}


def test_a_huge_dict_does_not_starve_a_small_one_and_the_whole_read_is_bounded() -> None:
    big: dict[str, Any] = {f"k{i}": i for i in range(10 * DICT_ENTRIES)}
    big["password"] = "found-past-the-budget"  # documented: not found this way
    assert held_in_dicts([big, {"password": PHRASE}]) == {PHRASE}  # the small one is read first
    size = DICT_ENTRIES * 3 // 4
    many = [{**{f"k{j}": j for j in range(size - 1)}, "password": f"secret-number-{i:04d}"} for i in range(20)]
    assert len(held_in_dicts(many)) == ALL_ENTRIES // size  # whole dicts up to the cap, and no more
