"""How a data file's peek is written for the model: columns with dtypes, the pandas call that
reads the file as described, two sample rows; and a one-line form for when room is short.

The read call is the answer to the next question after "what are the columns?": ``sep``,
``encoding`` and, above all, ``parse_dates`` for columns that hold dates as text.  Measured on
the task suite with a 1.5B coder model, every date question failed on ``.dt`` applied to text
until the call said which columns to parse.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from jupyter_ai_ci.context.describe import _table
from jupyter_ai_ci.context.privacy import SECRET_VALUE
from jupyter_ai_ci.context.secretnames import MASK, is_secret_name

MAX_NAME = 40  # characters of a column name
MAX_VALUE = 24  # characters of a sample value
DATES = "str (dates as text)"
_READERS = {".parquet": "read_parquet", ".pq": "read_parquet", ".xlsx": "read_excel", ".xlsm": "read_excel",
            ".json": "read_json", ".jsonl": "read_json", ".ndjson": "read_json"}


@dataclass(frozen=True)
class Table:
    """What a peek found: column names, a dtype each, sample rows, the row count."""

    columns: tuple[str, ...]
    dtypes: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    row_count: int | None  # None: not known without reading the whole file
    approximate: bool = False
    notes: tuple[str, ...] = ()  # "encoding latin-1", "sep ';'", "sheets: …"
    # Keyword arguments pandas needs to read the file as described, values as Python source.
    options: tuple[tuple[str, str], ...] = ()


def read_call(name: str, table: Table) -> str:
    """``pd.read_csv('sales.csv', parse_dates=['date'])``: the file read as its peek found it."""
    reader = _READERS.get(os.path.splitext(name)[1].lower(), "read_csv")
    args = [repr(name), *(f"{key}={value}" for key, value in table.options)]
    dates = [c for c, d in zip(table.columns, table.dtypes, strict=False) if d.startswith(DATES)]
    if dates and reader == "read_csv":
        args.append(f"parse_dates={dates!r}")
    return f"pd.{reader}({', '.join(args)})"


def _value(column: str, value: Any) -> str:
    if is_secret_name(column):
        return MASK
    text = SECRET_VALUE.sub(MASK, str(value))
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def _name(column: str) -> str:
    return column if len(column) <= MAX_NAME else column[: MAX_NAME - 1] + "…"


def render(name: str, size_text: str, table: Table | None) -> tuple[str, str]:
    """A file's full description (columns with dtypes, sample rows) and its one-line form."""
    if table is None or not table.columns:
        line = f"{name} ({size_text})" + (f" — {table.notes[0]}" if table and table.notes else "")
        return line, line
    rows = ""
    if table.row_count is not None:
        rows = f", {'~' if table.approximate else ''}{table.row_count} rows"
    head = f"{name} ({size_text}{rows})"
    names = [_name(c) for c in table.columns]
    short = f"{head}: columns {', '.join(names)}"
    typed = ", ".join(f"{c}: {d}" for c, d in zip(names, table.dtypes, strict=False)) if table.dtypes else \
        ", ".join(names)
    full = f"{head}\n  columns: {typed}\n  read: {read_call(name, table)}"
    if table.notes:
        full += "\n  note: " + "; ".join(table.notes)
    if table.rows:
        sample = _table(names, ((i, *(_value(c, v) for c, v in zip(table.columns, r, strict=False)))
                                for i, r in enumerate(table.rows)))
        full += "\n  first rows:\n" + "\n".join("    " + line for line in sample.splitlines())
    return full, short
