"""Hints for errors that come from an API which changed: code a model learned from older pandas.

A model trained on years of pandas 0.x/1.x answers writes what pandas 2 removed or never
allowed: ``df.groupby(k)['a', 'b']``, ``df.append(row)``, ``.dt.days`` on dates, a
``groupby().mean()`` over text columns.  The exception says *what* failed, not the current
way to write it, and the closest-name hints can mislead here (``.dt.days`` → ``.day``, when
the code wanted a time difference).  These hints say the current way; each is keyed on the
exception's own text, never on the task.
"""

from __future__ import annotations

import re

# (exception type, pattern of its message, hint): first match wins.
_HINTS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("ValueError", re.compile(r"Cannot subset columns with a tuple"),
     "Several columns are selected with a list, not a tuple: df.groupby(key)[['a', 'b']], "
     "not df.groupby(key)['a', 'b']."),
    ("AttributeError", re.compile(r"'(DataFrame|Series)' object has no attribute 'append'"),
     "DataFrame.append and Series.append were removed in pandas 2: use pd.concat([df, other])."),
    ("AttributeError", re.compile(r"'DatetimeProperties' object has no attribute 'days'"),
     ".dt.days is for time differences, not dates: subtract first, e.g. (end - start).dt.days; "
     "a date's parts are .dt.year, .dt.month, .dt.day."),
    ("AttributeError", re.compile(r"'(DataFrame|Series)' object has no attribute 'iteritems'"),
     ".iteritems() was removed in pandas 2: use .items()."),
    ("AttributeError", re.compile(r"'(DataFrame|Series)' object has no attribute 'ix'"),
     ".ix was removed: use .loc (labels) or .iloc (positions)."),
    ("AttributeError", re.compile(r"module 'pandas' has no attribute 'datetime'"),
     "pd.datetime was removed: use pd.Timestamp, or import datetime."),
    ("TypeError", re.compile(r"does not support operation '(mean|sum|median|std|var|prod)'"
                             r"|agg function failed \[how->\w+,dtype->(object|str)"),
     "Text columns cannot be averaged or summed: select the numeric column(s) first, "
     "df.groupby(key)['col'].mean(), or pass numeric_only=True."),
)


def api_hints(ename: str, evalue: str) -> list[str]:
    """The hint for an exception raised by an API that changed, if it is one we know."""
    for kind, pattern, hint in _HINTS:
        if ename == kind and pattern.search(evalue[:2000]):
            return [hint]
    return []
