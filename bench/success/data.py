"""The CSVs the tasks work on, generated from fixed seeds (same bytes on every machine).

Small on purpose (hundreds of rows): the benchmark measures whether the loop
gets to a right answer, not pandas' speed.  Some files are messy on purpose
(duplicates, inconsistent spellings, blanks, missing readings): cleaning is
most of real analysis.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20241122
REGIONS = ["North", "South", "East", "West"]
PRODUCTS = {"A": 4.0, "B": 9.5, "C": 15.0, "D": 22.0, "E": 40.0}
COUNTRIES = {"US": ["US", "usa", "United States"], "UK": ["UK", "uk", "United Kingdom"], "DE": ["DE", "Germany", "de"]}


def sales(rng: np.random.Generator, n: int = 400) -> pd.DataFrame:
    products = rng.choice(list(PRODUCTS), size=n)
    base = np.array([PRODUCTS[p] for p in products])
    days = rng.integers(0, 366, size=n)
    return pd.DataFrame({
        "order_id": np.arange(1001, 1001 + n),
        "date": (pd.Timestamp("2024-01-01") + pd.to_timedelta(days, unit="D")).strftime("%Y-%m-%d"),
        "region": rng.choice(REGIONS, size=n, p=[0.35, 0.25, 0.25, 0.15]),
        "product": products,
        "units": rng.integers(1, 21, size=n),
        "unit_price": np.round(base * rng.uniform(0.85, 1.15, size=n), 2),
        # Customers 1..70 exist; only 1..60 order, so some have no orders.
        "customer_id": rng.integers(1, 61, size=n),
    }).sort_values(["date", "order_id"], kind="stable")


def customers_raw(rng: np.random.Generator, n: int = 70) -> pd.DataFrame:
    first = ["ada", "Grace", " alan", "edsger ", "BARBARA", "donald", "john", "margaret", "ken", "dennis"]
    last = ["lovelace", "Hopper", "turing", "DIJKSTRA", "liskov", "knuth ", "backus", "hamilton", "thompson"]
    canon = rng.choice(list(COUNTRIES), size=n, p=[0.5, 0.3, 0.2])
    rows = pd.DataFrame({
        "customer_id": np.arange(1, n + 1),
        "name": [f"{rng.choice(first)} {rng.choice(last)}" for _ in range(n)],
        "email": [None if rng.random() < 0.12 else f"user{i}@example.com" for i in range(1, n + 1)],
        "country": [str(rng.choice(COUNTRIES[c])) for c in canon],
        "segment": rng.choice(["Consumer", "Corporate", "Home Office"], size=n),
        "signup": (pd.Timestamp("2022-01-01") + pd.to_timedelta(rng.integers(0, 700, size=n), unit="D"))
        .strftime("%Y-%m-%d"),
    })
    dupes = rows.sample(8, random_state=int(rng.integers(0, 2**31)))
    return pd.concat([rows, dupes]).sample(frac=1, random_state=int(rng.integers(0, 2**31)))


def sensors(rng: np.random.Generator, days: int = 20) -> pd.DataFrame:
    frames = []
    hours = pd.date_range("2024-03-01", periods=days * 24, freq="h")
    for i, sensor in enumerate(["S1", "S2", "S3"]):
        daily = 18 + 3 * i + 5 * np.sin(2 * np.pi * (hours.hour.to_numpy() - 9) / 24)
        temp = daily + rng.normal(0, 1.2, size=len(hours)) + np.linspace(0, 2, len(hours))
        humidity = 70 - 1.5 * (temp - temp.mean()) + rng.normal(0, 3, size=len(hours))
        temp[rng.random(len(hours)) < 0.05] = np.nan
        frames.append(pd.DataFrame({"timestamp": hours.strftime("%Y-%m-%d %H:%M"), "sensor": sensor,
                                    "temperature": np.round(temp, 2), "humidity": np.round(humidity, 1)}))
    return pd.concat(frames).sample(frac=1, random_state=int(rng.integers(0, 2**31)))


def employees(rng: np.random.Generator, n: int = 120) -> pd.DataFrame:
    depts = rng.choice(["Engineering", "Sales", "Support", "Finance", "Research"], size=n)
    ages = rng.integers(22, 64, size=n)
    salary = np.round(30000 + 900 * (ages - 22) + rng.normal(0, 9000, size=n), -2)
    managers = [0] + [int(rng.integers(1, max(i, 2))) for i in range(1, n)]
    return pd.DataFrame({
        "emp_id": np.arange(1, n + 1), "dept": depts, "age": ages, "salary": salary,
        "hire_date": (pd.Timestamp("2010-01-01") + pd.to_timedelta(rng.integers(0, 5000, size=n), unit="D"))
        .strftime("%Y-%m-%d"),
        "manager_id": [m if m else None for m in managers],
    })


def ab_test(rng: np.random.Generator, n: int = 1000) -> pd.DataFrame:
    group = rng.choice(["control", "treatment"], size=n)
    rate = np.where(group == "treatment", 0.14, 0.10)
    converted = (rng.random(n) < rate).astype(int)
    revenue = np.round(converted * rng.gamma(2.0, np.where(group == "treatment", 26.0, 24.0)), 2)
    return pd.DataFrame({"user_id": np.arange(1, n + 1), "group": group, "converted": converted,
                         "revenue": revenue})


def generate(directory: Path) -> list[Path]:
    """Write every CSV into ``directory``; the same seed gives the same bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    written = []
    for name, make in (("sales", sales), ("customers_raw", customers_raw), ("sensors", sensors),
                       ("employees", employees), ("ab_test", ab_test)):
        path = directory / f"{name}.csv"
        make(rng).to_csv(path, index=False)
        written.append(path)
    return written
