"""Data files in the working directory, described from a bounded peek.

"What are the columns of sales.csv?" is the first thing code about a file
needs; a model that is not told guesses (``groupby('department')`` on a
``dept`` column).  So each table-like file is described by its header with
dtypes and two sample rows, read from at most ``PEEK_BYTES`` at its start:
never the whole file, whatever its size.  Parquet and Excel are read through
pyarrow / openpyxl when installed (a footer, a streamed first sheet); other
data files get their name and size.  Descriptions are cached by path, size
and modification time, so a request pays for each file once.
"""

from __future__ import annotations

import codecs
import collections
import csv
import fnmatch
import io
import itertools
import json
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any, BinaryIO

from jupyter_ai_ci.context.environment import scan
from jupyter_ai_ci.context.filetable import DATES, Table, render
from jupyter_ai_ci.text import human_size

PEEK_BYTES = 64 * 1024  # read from the start of a text table, at most
PEEK_ROWS = 200  # rows the dtypes are inferred from
SAMPLE_ROWS = 2
MAX_COLUMNS = 30
BIG_FOR_SAMPLES = 64 << 20  # Parquet/Excel files above this get their schema only
TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".txt", ".json", ".jsonl", ".ndjson", ".parquet", ".pq", ".xlsx", ".xlsm")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|nan)", re.IGNORECASE)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?|\d{1,2}/\d{1,2}/\d{2,4}")
_MISSING = frozenset({"", "na", "nan", "n/a", "null", "none", "-", "#n/a"})


def _decode(head: bytes) -> tuple[str, str]:
    """The text and the encoding pandas would need to be told (``""`` for UTF-8)."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return head.decode("utf-16", errors="replace"), "utf-16"
    try:
        return head.decode("utf-8-sig"), ""
    except UnicodeDecodeError as exc:
        if exc.start >= len(head) - 3:  # a character cut by the peek's end
            return head[:exc.start].decode("utf-8-sig"), ""
        return head.decode("latin-1"), "latin-1"


def _dtype(values: Iterable[str]) -> str:
    """The dtype pandas' read_csv would most likely give a column, from its peeked values."""
    seen = [v.strip() for v in values]
    present = [v for v in seen if v.lower() not in _MISSING]
    if not present:
        return "float64 (all missing)" if seen else "str"
    missing = len(present) < len(seen)
    if all(_INT.fullmatch(v) for v in present):
        kind = "float64" if missing else "int64"  # pandas has no missing ints by default
    elif all(_FLOAT.fullmatch(v) for v in present):
        kind = "float64"
    elif all(v.lower() in ("true", "false") for v in present):
        kind = "str" if missing else "bool"
    elif all(_DATE.fullmatch(v) for v in present):
        kind = DATES
    else:
        kind = "str"  # pandas 2 says object, pandas 3 str: the values are text either way
    return kind + (", has missing" if missing else "")


def _separator(lines: Sequence[str], suffix: str) -> str:
    if suffix in (".tsv", ".tab"):
        return "\t"
    # The candidate found the same number of times (and at least once) on the most lines.
    best, score = ",", -1
    for sep in (",", ";", "\t", "|"):
        counts = [line.count(sep) for line in lines[:20] if line.strip()]
        if not counts or counts[0] == 0:
            continue
        agree = sum(c == counts[0] for c in counts)
        if agree > score:
            best, score = sep, agree
    return best


def peek_text_table(stream: BinaryIO, size: int, suffix: str) -> Table | None:
    """A CSV/TSV from its first ``PEEK_BYTES``; None when it does not look like a table."""
    head = stream.read(PEEK_BYTES)
    complete = len(head) >= size
    text, encoding = _decode(head)
    if not complete:
        text = text[: text.rfind("\n") + 1] or text  # the last line may be cut
    lines = text.splitlines()
    if not lines:
        return None
    sep = _separator(lines, suffix)
    records = list(itertools.islice(csv.reader(io.StringIO(text), delimiter=sep), PEEK_ROWS + 1))
    if not records or len(records[0]) < 2 and suffix == ".txt":
        return None  # prose, not a table
    header, body = records[0], [r for r in records[1:] if r]
    width = min(len(header), MAX_COLUMNS)
    dtypes = tuple(_dtype(r[i] if i < len(r) else "" for r in body) for i in range(width))
    # The separator and encoding are said once, in the read call (options), not again as notes.
    notes: list[str] = []
    options = tuple((k, repr(v)) for k, v in (("sep", sep), ("encoding", encoding)) if v and v != ",")
    if len(header) > width:
        notes.append(f"{len(header) - width} more columns not shown")
    rows = tuple(tuple(r[:width]) for r in body[:SAMPLE_ROWS])
    if complete:
        count, approximate = sum(1 for r in csv.reader(io.StringIO(text), delimiter=sep) if r) - 1, False
    else:  # estimated from the bytes per line of the peek
        per_line = len(head) / max(len(lines), 1)
        count, approximate = int(size / per_line) - 1, True
    return Table(tuple(header[:width]), dtypes, rows, count, approximate, tuple(notes), options)


def _json_type(values: Iterable[Any]) -> str:
    kinds = {"bool" if isinstance(v, bool) else "int64" if isinstance(v, int) else "float64"
             if isinstance(v, float) else "missing" if v is None else "str" if isinstance(v, str) else "object"
             for v in values}
    missing = "missing" in kinds
    kinds.discard("missing")
    kind = "float64" if kinds == {"int64", "float64"} else kinds.pop() if len(kinds) == 1 else "object"
    return kind + (", has missing" if missing else "")


def _records(items: Sequence[Any]) -> Table | None:
    dicts = [x for x in items if isinstance(x, dict)]
    if not dicts:
        return None
    columns = list(dict.fromkeys(k for d in dicts for k in d))[:MAX_COLUMNS]
    dtypes = tuple(_json_type(d.get(c) for d in dicts) for c in columns)
    rows = tuple(tuple(d.get(c) for c in columns) for d in dicts[:SAMPLE_ROWS])
    return Table(tuple(str(c) for c in columns), dtypes, rows, None)


def peek_json(stream: BinaryIO, size: int, suffix: str) -> Table | None:
    """Records from a JSON array or JSON lines, parsed from the first ``PEEK_BYTES`` only."""
    head = stream.read(PEEK_BYTES)
    text, _ = _decode(head)
    complete = len(head) >= size
    decoder = json.JSONDecoder()
    items: list[Any] = []
    if suffix in (".jsonl", ".ndjson") or not text.lstrip().startswith(("[", "{")):
        for line in text.splitlines()[:PEEK_ROWS]:
            try:
                items.append(json.loads(line))
            except ValueError:
                break
        table = _records(items)
        return table and Table(table.columns, table.dtypes, table.rows, len(items) if complete else None,
                               notes=("JSON lines",), options=(("lines", "True"),))
    body = text.lstrip()
    if body.startswith("{"):
        try:
            value, _ = decoder.raw_decode(body)
        except ValueError:
            keys = re.findall(r'"([^"\\]{1,40})"\s*:', body[:2000])[:MAX_COLUMNS]
            return Table(tuple(dict.fromkeys(keys)), (), (), None, notes=("a JSON object; its first keys",))
        if isinstance(value, dict):
            return Table(tuple(str(k) for k in itertools.islice(value, MAX_COLUMNS)), (), (), len(value),
                         notes=("a JSON object; its keys",))
    index = 1
    while len(items) < PEEK_ROWS:  # element by element: a cut-off array still yields its first records
        while index < len(body) and body[index] in " \t\r\n,":
            index += 1
        if index >= len(body) or body[index] == "]":
            break
        try:
            item, index = decoder.raw_decode(body, index)
        except ValueError:
            complete = False
            break
        items.append(item)
    table = _records(items)
    return table and Table(table.columns, table.dtypes, table.rows, len(items) if complete else None)


def _installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def peek_parquet(path: str, size: int) -> Table | None:
    """The schema and row count from the Parquet footer (pyarrow); two rows from small files."""
    if not _installed("pyarrow"):
        return Table((), (), (), None, notes=("pyarrow is not installed: pd.read_parquet needs it",))
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    schema = parquet.schema_arrow
    names = tuple(schema.names[:MAX_COLUMNS])
    dtypes = tuple(str(schema.field(n).type) for n in names)
    rows: tuple[tuple[Any, ...], ...] = ()
    if size <= BIG_FOR_SAMPLES and parquet.metadata.num_rows:
        batch = next(parquet.iter_batches(batch_size=SAMPLE_ROWS, columns=list(names)), None)
        if batch is not None:
            data = batch.to_pydict()
            rows = tuple(tuple(data[n][i] for n in names) for i in range(batch.num_rows))
    return Table(names, dtypes, rows, parquet.metadata.num_rows)


def peek_excel(path: str, size: int) -> Table | None:
    """The first sheet's header and rows, streamed (openpyxl read-only)."""
    if not _installed("openpyxl"):
        return Table((), (), (), None, notes=("openpyxl is not installed: pd.read_excel needs it",))
    if size > BIG_FOR_SAMPLES:
        return None
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        sheet = book.worksheets[0]
        grid = [list(r) for r in sheet.iter_rows(max_row=PEEK_ROWS + 1, values_only=True)]
        sheets = book.sheetnames
    finally:
        book.close()
    if not grid:
        return None
    header = [str(c) if c is not None else f"Unnamed: {i}" for i, c in enumerate(grid[0][:MAX_COLUMNS])]
    body = grid[1:]
    dtypes = tuple(_json_type(r[i] if i < len(r) else None for r in body) for i in range(len(header)))
    notes = (f"sheets: {', '.join(sheets[:6])}",) if len(sheets) > 1 else ()
    return Table(tuple(header), dtypes, tuple(tuple(r[: len(header)]) for r in body[:SAMPLE_ROWS]), None,
                 notes=notes)


def peek(path: str, size: int) -> Table | None:
    """The table in ``path``, or None; never raises, never reads past a bounded peek."""
    suffix = os.path.splitext(path)[1].lower()
    try:
        if suffix in (".parquet", ".pq"):
            return peek_parquet(path, size)
        if suffix in (".xlsx", ".xlsm"):
            return peek_excel(path, size)
        if suffix in (".csv", ".tsv", ".tab", ".txt", ".json", ".jsonl", ".ndjson"):
            with open(path, "rb") as stream:
                reader = peek_json if suffix.startswith(".json") or suffix == ".ndjson" else peek_text_table
                return reader(stream, size, suffix)
    except Exception:  # noqa: BLE001 -- a malformed or unreadable file is described by name only
        return None
    return None


# path -> (size, mtime in ns, (full, one-line) description), least recently used first.  By
# path, so a file that changes replaces its entry instead of leaving the old one behind; a
# request pays for a file once until its size or modification time changes.
_CACHE: collections.OrderedDict[str, tuple[int, int, tuple[str, str]]] = collections.OrderedDict()
_CACHE_MAX = 256  # files; the least recently described goes first


def _described(path: str, name: str, size: int, mtime: int, size_text: str) -> tuple[str, str]:
    cached = _CACHE.get(path)
    if cached is not None and cached[0] == size and cached[1] == mtime:
        _CACHE.move_to_end(path)
        return cached[2]
    notes = render(name, size_text, peek(path, size) if name.lower().endswith(TABLE_SUFFIXES) else None)
    _CACHE[path] = (size, mtime, notes)
    _CACHE.move_to_end(path)
    while len(_CACHE) > _CACHE_MAX:
        _CACHE.popitem(last=False)
    return notes


def file_notes(directory: str, request: str = "", exclude: Sequence[str] = (),
               limit: int = 8) -> tuple[list[tuple[str, str]], int]:
    """Up to ``limit`` data files of ``directory`` as (full, one-line) descriptions, the files the
    request names first, then by name; and how many data files there are.  A file whose name
    (or name without suffix) matches an ``exclude`` pattern is left out like the variable."""
    found, _ = scan(directory)
    found = [f for f in found if not any(fnmatch.fnmatchcase(f[0], p) or fnmatch.fnmatchcase(
        os.path.splitext(f[0])[0], p) for p in exclude)]
    total = len(found)
    words = request.lower()
    found.sort(key=lambda entry: (entry[0].lower() not in words, entry[0]))
    notes = []
    for name, size, mtime in found[:limit]:
        notes.append(_described(os.path.join(directory, name), name, size, mtime, human_size(size)))
    return notes, total
