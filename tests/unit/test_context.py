from __future__ import annotations

import numpy as np
import pandas as pd

from jupyter_ai_ci.context import CellRecord, build_context, describe, user_variables


class Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")

    @property
    def shape(self) -> tuple[int, int]:
        raise RuntimeError("no shape either")


def test_dataframe_named_in_request_gets_columns_and_dtypes() -> None:
    sales = pd.DataFrame({"region": ["n", "s"], "revenue": [1.5, 2.0]})
    ctx = build_context("plot revenue per region from sales", [("sales", sales)], [], 1000)
    assert "sales: pandas.DataFrame 2 rows × 2 columns [region:" in ctx
    assert "revenue:float64" in ctx


def test_descriptions_are_bounded_and_never_fail() -> None:
    assert describe("h", Hostile()) == "h: test_context.Hostile" or describe("h", Hostile()).startswith("h:")
    big = np.zeros((10_000, 1_000), dtype=np.float32)
    assert describe("big", big) == "big: numpy.ndarray shape=(10000, 1000) dtype=float32"
    assert len(describe("s", "x" * 1_000_000)) < 200


def test_secrets_are_masked() -> None:
    ns = {"api_key": "hunter2", "msg": "use sk-abcdefghijklmnopqrstuvwxyz123456 here"}
    ctx = build_context("go", user_variables(ns), [], 1000)
    assert "hunter2" not in ctx and "sk-abcdefghijklmnop" not in ctx
    assert "api_key" in ctx


def test_modules_private_names_skipped_newest_first() -> None:
    import os

    ns = {"os": os, "_hidden": 1, "first": 1, "second": 2, "In": [], "Out": {}}
    assert [n for n, _ in user_variables(ns)] == ["second", "first"]


def test_budget_holds_and_recent_cells_come_first() -> None:
    cells = [CellRecord(f"x{i} = {i}", f"out {i}") for i in range(1000)]
    variables = [(f"v{i}", i) for i in range(500)]
    ctx = build_context("go", variables, cells, 300)
    assert len(ctx) // 4 <= 320
    assert ctx == build_context("go", variables, cells, 300)  # deterministic
