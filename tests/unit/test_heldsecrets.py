"""Secrets a dict holds under a key that says so (context/heldsecrets.py), found for masking."""

from __future__ import annotations

from typing import Any

from jupyter_ai_ci.context.heldsecrets import ALL_ENTRIES, DICT_ENTRIES, held_in_dicts
from jupyter_ai_ci.context.privacy import mask_secrets, secret_values

PHRASE = "correct horse battery staple"


class Trap(dict):  # type: ignore[type-arg]
    """A dict subclass: not an exact dict, never asked for its items."""

    def items(self) -> Any:
        raise AssertionError("read")


def test_strings_under_secret_keys_are_found_a_few_levels_down() -> None:
    ns = {"config": {"db": {"password": PHRASE, "host": "db.local"}, "accounts": [{"api_key": "plain-token-value-42"}],
                     "sort_key": "customer_id", "odd": Trap(token="x" * 20)}}
    found = secret_values(ns, {})
    assert PHRASE in found and "plain-token-value-42" in found
    assert "customer_id" not in found and "db.local" not in found and "x" * 20 not in found
    assert PHRASE not in mask_secrets(repr(ns["config"]), found)


def test_a_huge_dict_does_not_starve_the_next_and_the_whole_read_is_bounded() -> None:
    big: dict[str, Any] = {f"k{i}": i for i in range(10 * DICT_ENTRIES)}
    big["password"] = "found-past-the-budget"  # documented: not found this way
    small = {"password": PHRASE}
    assert held_in_dicts([big, small]) == {PHRASE}
    many = [{f"k{i}": i for i in range(DICT_ENTRIES)} for _ in range(ALL_ENTRIES // DICT_ENTRIES)]
    assert held_in_dicts([*many, small]) == set()  # the read as a whole stops at ALL_ENTRIES

