"""Data files described from a bounded peek: columns, dtypes, two rows; never the whole file."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from jupyter_ai_ci.context import datafiles
from jupyter_ai_ci.context.build import fit_context
from jupyter_ai_ci.context.datafiles import PEEK_BYTES, file_notes, peek, peek_text_table, render
from jupyter_ai_ci.context.filetable import read_call


class CountingStream(io.BytesIO):
    """A real byte stream that remembers how much was read from it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.taken += len(chunk)
        return chunk


def employees(path: Path, rows: int = 5) -> Path:
    pd.DataFrame({
        "emp_id": range(1, rows + 1), "dept": ["Sales", "Support", "Sales", "Research", "Finance"] * (rows // 5),
        "salary": [51000.5, 62000.0, 48000.25, 70500.0, 58000.0] * (rows // 5),
        "hire_date": ["2019-03-01", "2020-07-15", "2018-01-09", "2021-11-30", "2017-05-02"] * (rows // 5),
    }).to_csv(path, index=False)
    return path


def test_a_csv_is_its_columns_dtypes_and_two_rows(tmp_path: Path) -> None:
    path = employees(tmp_path / "employees.csv")
    table = peek(str(path), path.stat().st_size)
    assert table is not None
    assert table.columns == ("emp_id", "dept", "salary", "hire_date")
    # The dtypes pandas' read_csv gives these columns, dates called out as text to parse.
    assert table.dtypes == ("int64", "str", "float64", "str (dates as text)")
    numbers = pd.read_csv(path).dtypes.astype(str).tolist()
    assert (numbers[0], numbers[2]) == (table.dtypes[0], table.dtypes[2])  # as pandas reads them
    assert len(table.rows) == 2 and table.rows[0][1] == "Sales"
    assert table.row_count == 5 and not table.approximate
    full, short = render("employees.csv", "1 KB", table)
    assert "columns: emp_id: int64, dept: str, salary: float64, hire_date: str (dates as text)\n" \
        "  read: pd.read_csv('employees.csv', parse_dates=['hire_date'])" in full
    assert "Sales" in full and "Support" in full and "Research" not in full  # two rows, not three
    assert short == "employees.csv (1 KB, 5 rows): columns emp_id, dept, salary, hire_date"


def test_a_huge_file_is_peeked_not_read(tmp_path: Path) -> None:
    line = b"1,Sales,51000.5,2019-03-01\n"
    data = b"emp_id,dept,salary,hire_date\n" + line * (20 * 1024 * 1024 // len(line))  # 20 MB
    stream = CountingStream(data)
    table = peek_text_table(stream, len(data), ".csv")
    assert stream.taken <= PEEK_BYTES  # never more than the peek, whatever the size
    assert table is not None and table.columns[1] == "dept" and table.dtypes[0] == "int64"
    assert table.approximate and abs(table.row_count - data.count(b"\n") + 1) < 0.02 * data.count(b"\n")
    full, _ = render("big.csv", "20.0 MB", table)
    assert "~" in full.splitlines()[0]  # the count says it is an estimate


def test_missing_values_and_odd_separators_and_encodings(tmp_path: Path) -> None:
    semi = tmp_path / "eu.csv"
    semi.write_bytes("name;città;amount\nAda;Zürich;3\nBob;;\n".encode("latin-1"))
    table = peek(str(semi), semi.stat().st_size)
    assert table is not None and table.columns == ("name", "città", "amount")
    assert ("encoding", "'latin-1'") in table.options and ("sep", "';'") in table.options
    full, _ = render("eu.csv", "1 KB", table)
    assert "read: pd.read_csv('eu.csv', sep=';', encoding='latin-1')" in full and "note:" not in full
    assert table.dtypes[2] == "float64, has missing"  # an int column with a blank reads as float
    utf16 = tmp_path / "u16.tsv"
    utf16.write_text("a\tb\n1\tx\n", encoding="utf-16")
    table = peek(str(utf16), utf16.stat().st_size)
    assert table is not None and table.columns == ("a", "b") and ("encoding", "'utf-16'") in table.options


def read_as_told(directory: Path, name: str) -> pd.DataFrame:
    """Run the read call the description gives, in the file's folder, as generated code would."""
    table = peek(str(directory / name), (directory / name).stat().st_size)
    assert table is not None
    call = read_call(name, table)
    assert render(name, "1 KB", table)[0].splitlines()[2] == f"  read: {call}"
    before = os.getcwd()
    os.chdir(directory)
    try:
        frame = eval(call, {"pd": pd})  # noqa: S307 -- our own call, on our own test files
    finally:
        os.chdir(before)
    assert isinstance(frame, pd.DataFrame)
    return frame


def test_the_read_call_reads_the_file_as_described(tmp_path: Path) -> None:
    (tmp_path / "eu.csv").write_bytes("name;città;when\nAda;Zürich;2024-01-05\nBob;Köln;2024-02-01\n"
                                      .encode("latin-1"))
    frame = read_as_told(tmp_path, "eu.csv")
    assert list(frame.columns) == ["name", "città", "when"] and frame["città"][0] == "Zürich"
    assert str(frame["when"].dtype).startswith("datetime64")  # dates as text are parsed: .dt works
    assert frame["when"].dt.month.tolist() == [1, 2]
    (tmp_path / "t.csv").write_text("a\tb\n1\tx\n")  # tabs in a .csv
    assert list(read_as_told(tmp_path, "t.csv").columns) == ["a", "b"]
    (tmp_path / "e.jsonl").write_text('{"id": 1, "city": "Oslo"}\n{"id": 2, "city": "Rome"}\n')
    assert read_as_told(tmp_path, "e.jsonl")["city"].tolist() == ["Oslo", "Rome"]
    (tmp_path / "plain.csv").write_text("x,y\n1,2\n")
    assert read_call("plain.csv", peek(str(tmp_path / "plain.csv"), 8)) == "pd.read_csv('plain.csv')"  # type: ignore[arg-type]


def test_json_records_lines_and_a_cut_array(tmp_path: Path) -> None:
    records = [{"id": i, "city": "Oslo", "temp": 1.5 * i} for i in range(20_000)]
    array = tmp_path / "readings.json"
    array.write_text(json.dumps(records))
    assert array.stat().st_size > PEEK_BYTES  # cut mid-array: the first records still count
    table = peek(str(array), array.stat().st_size)
    assert table is not None and table.columns == ("id", "city", "temp")
    assert table.dtypes == ("int64", "str", "float64") and table.row_count is None
    lines = tmp_path / "events.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in records[:3]))
    table = peek(str(lines), lines.stat().st_size)
    assert table is not None and table.row_count == 3 and table.options == (("lines", "True"),)


def test_binary_prose_and_broken_files_are_a_name_and_size(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("just some prose\nwithout columns\n")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    (tmp_path / "empty.csv").write_bytes(b"")
    for name in ("notes.txt", "broken.parquet", "empty.csv"):
        size = (tmp_path / name).stat().st_size
        full, short = render(name, "1 B", peek(str(tmp_path / name), size))
        assert full.startswith(name) and "columns" not in full


def test_parquet_schema_from_the_footer(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    path = tmp_path / "sales.parquet"
    pd.DataFrame({"region": ["N", "S", "E"], "units": [1, 2, 3]}).to_parquet(path)
    table = peek(str(path), path.stat().st_size)
    assert table is not None and table.columns[:2] == ("region", "units") and table.row_count == 3
    assert table.rows[0][:2] == ("N", 1)


def test_excel_first_sheet(tmp_path: Path) -> None:
    pytest.importorskip("openpyxl")
    path = tmp_path / "budget.xlsx"
    pd.DataFrame({"item": ["rent", "food"], "cost": [900, 250.5]}).to_excel(path, index=False)
    table = peek(str(path), path.stat().st_size)
    assert table is not None and table.columns == ("item", "cost") and table.rows[1] == ("food", 250.5)


def test_secret_columns_and_key_shaped_values_are_masked(tmp_path: Path) -> None:
    path = tmp_path / "users.csv"
    path.write_text("user,password,note\nada,hunter2hunter2,sk-abcdefghijklmnopqrstuvwx\n")
    full, _ = render("users.csv", "1 KB", peek(str(path), path.stat().st_size))
    assert "password" in full and "hunter2" not in full and "sk-abcdefghijklmnop" not in full


def test_files_the_request_names_come_first_and_the_listing_is_cached(tmp_path: Path) -> None:
    employees(tmp_path / "employees.csv")
    (tmp_path / "ab_test.csv").write_text("user_id,group\n1,control\n")
    (tmp_path / "readme.md").write_text("not data")
    notes, total = file_notes(str(tmp_path), "Headcount per dept in employees.csv")
    assert total == 2 and notes[0][0].startswith("employees.csv") and notes[1][0].startswith("ab_test.csv")
    assert file_notes(str(tmp_path), "", exclude=("employees",))[1] == 1


def _rewrite_keeping_stat(path: Path, text: str) -> None:
    """New content of the same length, with the old modification time put back."""
    stat = path.stat()
    assert len(text.encode()) == stat.st_size
    path.write_text(text)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_an_unchanged_file_is_not_read_again(tmp_path: Path) -> None:
    # Same size and modification time: the description from the first read stands, so the
    # new columns are not seen (a re-read would see them).  That is the cache's contract.
    path = tmp_path / "sales.csv"
    path.write_text("region,units\nNorth,3\n")
    first, _ = file_notes(str(tmp_path), "")
    assert "region: str" in first[0][0]
    _rewrite_keeping_stat(path, "county,items\nNorth,3\n")
    again, _ = file_notes(str(tmp_path), "")
    assert again == first


@pytest.mark.parametrize("change", ["size", "mtime"])
def test_a_changed_file_is_described_anew(tmp_path: Path, change: str) -> None:
    path = tmp_path / "sales.csv"
    path.write_text("region,units\nNorth,3\n")
    assert "region: str" in file_notes(str(tmp_path), "")[0][0][0]
    stat = path.stat()
    if change == "size":  # one byte longer, the same modification time
        path.write_text("county,items\nNorth,30\n")
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    else:  # the same length, a later modification time
        path.write_text("county,items\nNorth,3\n")
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    notes, _ = file_notes(str(tmp_path), "")
    assert "county: str" in notes[0][0] and "region" not in notes[0][0]


def test_the_cache_is_bounded_and_keeps_one_entry_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datafiles, "_CACHE_MAX", 3)
    monkeypatch.setattr(datafiles, "_CACHE", type(datafiles._CACHE)())
    path = tmp_path / "a.csv"
    for rows in range(1, 6):  # the same file, changed five times: one entry, the latest
        employees(path, rows * 5)
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + rows * 10**9))
        file_notes(str(tmp_path), "")
    assert list(datafiles._CACHE) == [str(path)]
    for name in "bcde":
        employees(tmp_path / f"{name}.csv")
    file_notes(str(tmp_path), "")
    assert len(datafiles._CACHE) == 3


def test_the_files_section_has_its_share_and_a_place_in_the_context(tmp_path: Path) -> None:
    employees(tmp_path / "employees.csv")
    files, total = file_notes(str(tmp_path), "headcount per dept")
    ctx = fit_context("headcount per dept", [], [], 3000, files=files, files_total=total,
                      environment=["Python 3.11 on linux"])
    assert "### Data files in the working directory\nemployees.csv" in ctx.text
    assert "dept: str" in ctx.text and ctx.text.index("### Data files") < ctx.text.index("### Environment")
    many = [(f"f{i}.csv (1 KB)\n  columns: " + ", ".join(f"c{j}: int64" for j in range(30)), f"f{i}.csv (1 KB)")
            for i in range(8)]
    small = fit_context("x", [], [], 600, files=many, files_total=12)
    assert small.tokens <= 600 and "f0.csv" in small.text and "more not shown" in small.text
