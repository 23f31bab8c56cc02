"""Descriptions of variables: useful, bounded, and never failing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from jupyter_ai_ci.context.describe import describe


class RaisingRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")

    @property
    def shape(self) -> tuple[int, int]:
        raise RuntimeError("no shape either")


class AnswersEverything:
    """A proxy whose __getattr__ makes up any attribute (and counts the asks)."""

    asked = 0

    def __getattr__(self, name: str) -> Any:
        AnswersEverything.asked += 1
        return lambda *a, **k: self


class BadList(list[int]):
    def __len__(self) -> int:
        raise ValueError("no len")


def test_dataframe_full_has_columns_dtypes_nulls_and_rows() -> None:
    sales = pd.DataFrame({"region": ["n", "s", None, "n"], "revenue": [1.5, None, 3.0, 4.0]})
    text = describe("sales", sales, full=True)
    assert text.startswith("sales: pandas.DataFrame 4 rows × 2 columns [region:")
    assert "revenue:float64" in text
    assert "nulls: {'region': 1, 'revenue': 1}" in text
    assert "first rows:" in text and "1.5" in text
    compact = describe("sales", sales)
    assert compact.count("\n") == 0 and "[region, revenue]" in compact


def test_dataframe_subclasses_are_frames() -> None:
    class GeoFrame(pd.DataFrame):
        pass

    text = describe("g", GeoFrame({"a": [1]}), full=True)
    assert text.startswith("g: tests.GeoFrame 1 rows × 1 columns [a:int64]") and "nulls: none" in text


def test_huge_and_wide_frames_stay_small() -> None:
    big = pd.DataFrame(np.zeros((1_000_000, 20)), columns=[f"c{i}" for i in range(20)])
    text = describe("big", big, full=True)
    assert "1000000 rows × 20 columns" in text and "c19:float64" in text
    assert "nulls: not counted (large)" in text
    wide = pd.DataFrame(np.zeros((3, 1700)), columns=[f"column_{i}" for i in range(1700)])
    full = describe("wide", wide, full=True)
    assert "… 1660 more]" in full and len(full) < 3000
    assert "… 1692 more" in describe("wide", wide)


def test_arrays_series_and_containers() -> None:
    huge = np.zeros(10**8, dtype=np.uint8)  # 1e8 elements: only shape, dtype and five of them are read
    assert describe("huge", huge) == "huge: numpy.ndarray shape=(100000000,) dtype=uint8"
    assert describe("huge", huge, full=True).endswith("first values: [0, 0, 0, 0, 0]")
    s = pd.Series([1, 2, 3], name="n")
    assert describe("s", s, full=True) == "s: pandas.Series shape=(3,) dtype=int64 name='n' first values: [1, 2, 3]"
    inner = list(range(10**5))
    nested = {f"k{i}": {"inner": inner} for i in range(1000)}
    text = describe("nested", nested, full=True)
    assert text == ("nested: dict len=1000 {'k0': dict(len=1), 'k1': dict(len=1), 'k2': dict(len=1), "
                    "'k3': dict(len=1), …}")
    assert describe("xs", list(range(10**6))) == "xs: list len=1000000 [0, 1, 2, …]"
    assert describe("tags", {"b", "a"}) == "tags: set len=2"


def test_scalars_strings_and_huge_ints() -> None:
    assert describe("n", 3) == "n: int = 3"
    assert describe("flag", True) == "flag: bool = True"
    assert describe("mean", np.float64(2.5)) == "mean: numpy.float64 = 2.5"
    assert describe("count", np.int64(7)) == "count: numpy.int64 = 7"
    text = describe("s", "x" * 1_000_000)
    assert text.startswith("s: str len=1000000 = 'xxx") and len(text) < 120
    assert describe("big", 10**5000) == "big: int = <int of 16610 bits>"


def test_notebook_functions_and_classes_get_signature_and_doc() -> None:
    def clean(df: Any, column: str = "x") -> Any:
        """Drop empty rows.

        More text that is not sent."""
        return df

    class Model:
        """A tiny model."""

        def fit(self, x: int) -> None: ...

        def predict(self) -> None: ...

    for obj in (clean, Model):
        obj.__module__ = "__main__"  # as if defined in a notebook cell
    assert describe("clean", clean) == "clean: def clean(df: 'Any', column: 'str' = 'x') -> 'Any' — Drop empty rows."
    assert describe("Model", Model, full=True) == "Model: class Model() — A tiny model.\n  methods: fit, predict"
    assert describe("sqrt", np.sqrt) == "sqrt: numpy.ufunc"
    assert describe("join", __import__("os").path.join) == "join: function from posixpath"


def test_hostile_objects_never_raise_and_are_not_probed() -> None:
    assert describe("h", RaisingRepr()) == "h: tests.RaisingRepr"
    assert describe("h", RaisingRepr(), full=True) == "h: tests.RaisingRepr"
    assert describe("p", AnswersEverything(), full=True) == "p: tests.AnswersEverything"
    assert AnswersEverything.asked == 0
    assert describe("bad", BadList([1])) == "bad: tests.BadList"


def test_secret_names_and_values_are_hidden() -> None:
    assert describe("api_key", "hunter2") == "api_key: str (value hidden: the name looks like a secret)"
    # Review #30: a passphrase's name did not match the broad rule, so its value was listed.
    assert describe("db_passphrase", "correct-horse-battery-staple") == \
        "db_passphrase: str (value hidden: the name looks like a secret)"
    assert "sk-" not in describe("note", "use sk-abcdefghijklmnopqrstuvwxyz123456 here")
    config = {"user": "ann", "password": "hunter2", "token": "abc"}
    text = describe("config", config, full=True)
    assert "hunter2" not in text and "abc" not in text and "'user': 'ann'" in text


def test_values_of_a_column_named_like_a_secret_never_go_in_the_sample() -> None:
    """Review #38, item 7: a preview showed the values of ``password`` and ``api_key`` columns."""
    users = pd.DataFrame({"user": ["ann", "bob"], "password": ["hunter2-secret", "pa55word-bob"],
                          "api_key": ["sk-live-abcdef123456", "sk-live-zyx987654321"], "key_count": [3, 4]})
    text = describe("users", users, full=True)
    assert "password" in text and "api_key" in text  # the names: what the model needs to write code
    for value in ("hunter2-secret", "pa55word-bob", "sk-live-abcdef123456", "sk-live-zyx987654321"):
        assert value not in text
    assert "***" in text and "ann" in text and "3" in text  # the other columns as before
