"""The environment the generated code will run in, in a few lines.

Only what changes the code a model should write: the Python version and the
versions of data libraries *already imported* (we never import one to ask
its version: that would cost seconds and change the kernel).  ``scan`` finds
the data files in the working directory, which ``datafiles`` describes.
"""

from __future__ import annotations

import functools
import os
import platform
import sys
from collections.abc import Mapping
from types import ModuleType

from jupyter_ai_ci.text import human_size

DATA_LIBRARIES = (
    "pandas", "numpy", "polars", "pyarrow", "scipy", "sklearn", "statsmodels", "matplotlib",
    "seaborn", "plotly", "altair", "bokeh", "torch", "tensorflow", "jax", "xarray", "duckdb",
    "sqlalchemy", "geopandas", "networkx", "dask",
)
DATA_SUFFIXES = (
    ".csv", ".tsv", ".parquet", ".feather", ".arrow", ".json", ".jsonl", ".ndjson", ".xlsx",
    ".xls", ".sqlite", ".db", ".duckdb", ".h5", ".hdf5", ".nc", ".zarr", ".pkl", ".pickle",
    ".txt", ".xml", ".geojson", ".npy", ".npz", ".gz", ".zip",
)
MAX_FILES = 8
MAX_ENTRIES = 2000  # a directory of a million files must not stall the request


def library_versions(modules: Mapping[str, ModuleType] | None = None) -> list[str]:
    modules = sys.modules if modules is None else modules
    found = []
    for name in DATA_LIBRARIES:
        module = modules.get(name)
        if module is not None:
            version = getattr(module, "__version__", None)
            found.append(f"{name} {version}" if isinstance(version, str) else name)
    return found


def scan(directory: str) -> tuple[list[tuple[str, int, int]], int]:
    """Data files (name, size, mtime in ns) by name, at most MAX_SCANNED of them, and how many matched;
    at most MAX_ENTRIES directory entries are looked at."""
    matched: list[tuple[str, int, int]] = []
    try:
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= MAX_ENTRIES:
                    break
                name = entry.name
                if name.startswith(".") or not name.lower().endswith(DATA_SUFFIXES):
                    continue
                try:
                    if entry.is_file():  # follows links; never a FIFO or device, which could block
                        stat = entry.stat()
                        matched.append((name, stat.st_size, stat.st_mtime_ns))
                except OSError:
                    continue
    except OSError:
        return [], 0
    matched.sort()
    return matched, len(matched)


def data_files(directory: str) -> tuple[list[str], int]:
    """Up to MAX_FILES data files (name and size), sorted by name, and how many matched."""
    matched, total = scan(directory)
    return [f"{name} ({human_size(size)})" for name, size, _ in matched[:MAX_FILES]], total


@functools.cache
def _python_line() -> str:  # fixed for the life of the process; platform parses sys.version each time
    return f"Python {platform.python_version()} on {sys.platform}"


def environment_lines() -> list[str]:
    """The environment piece of the context, most useful line first.  The data files in the
    working directory are a piece of their own (``datafiles.file_notes``)."""
    lines = [_python_line()]
    libraries = library_versions()
    if libraries:
        # Loaded in the process, not bound to names a new cell can use: measured with a 1.5B
        # model, "Imported: pandas" made it write pd.read_csv(...) without the import.
        lines.append("Libraries loaded (a cell must still import what it uses): " + ", ".join(libraries))
    return lines
