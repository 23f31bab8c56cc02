"""Destructive SQL in generated code: the risk scan's rules for database calls.

A transaction undoes the kernel's memory, not a database: a dropped table stays dropped.
So SQL handed to sqlite3, SQLAlchemy, pandas or DuckDB is read when the code shows it
(a literal, a name bound once to one, an f-string's literal parts) and flagged when it
drops, empties or rewrites whole tables.  Queries and inserts for analysis
(SELECT, INSERT, CREATE TABLE, DELETE/UPDATE with a WHERE) pass.  SQL built at run
time from parts the code does not show is not judged.
"""

from __future__ import annotations

import ast
import re

from jupyter_ai_ci.safety.astutil import Scope, dotted
from jupyter_ai_ci.safety.literals import literal_text

# The last part of a call's name that takes SQL as its first argument:
# cursor/connection/engine .execute*, sqlalchemy.text, pandas.read_sql*, duckdb/spark .sql/.query.
SQL_CALLS = frozenset({"execute", "executemany", "executescript", "exec_driver_sql", "read_sql",
                       "read_sql_query", "text", "sql", "query"})
_SQL_KEYWORDS = ("sql", "statement", "sql_script", "query", "operation")
_QUOTED = re.compile(r"'(?:[^']|'')*'")  # string values: 'drop table' inside one is data, not a statement
_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
_WHERE = re.compile(r"\bwhere\b", re.I)
# (statement pattern, needs no WHERE to be destructive, why): first match wins.
_RULES: tuple[tuple[re.Pattern[str], bool, str], ...] = (
    (re.compile(r"\balter\s+table\b.*\bdrop\b", re.I | re.S), False, "drops part of a database table"),
    (re.compile(r"\bdrop\s+(table|database|schema|view|index|trigger|column)\b", re.I), False,
     "drops a database {0}"),
    (re.compile(r"\btruncate\b", re.I), False, "empties a database table"),
    (re.compile(r"\bdelete\s+from\b", re.I), True, "deletes every row of a table (no WHERE)"),
    (re.compile(r"^\s*update\b.*\bset\b", re.I | re.S), True, "changes every row of a table (no WHERE)"),
)


def destructive(sql: str) -> str | None:
    """Why a SQL text destroys data, e.g. "drops a database table: 'DROP TABLE t'"; None if it does not."""
    text = _COMMENT.sub(" ", _QUOTED.sub("''", sql))
    for statement in text.split(";"):
        for pattern, unless_where, why in _RULES:
            found = pattern.search(statement)
            if found and not (unless_where and _WHERE.search(statement)):
                short = " ".join(statement.split())
                short = short if len(short) <= 60 else short[:57] + "..."
                return f"{why.format(*(g.lower() for g in found.groups()))}: {short!r}"
    return None


def sql_findings(node: ast.Call, name: str, scope: Scope) -> list[str]:
    """Why a database call destroys data (one reason per call), or nothing."""
    if name.rsplit(".", 1)[-1] not in SQL_CALLS:
        return []
    if isinstance(node.func, ast.Attribute) and _in_memory(node.func.value, scope, 0):
        return []  # a scratch database made by this code: dropping its tables loses nothing
    arg = next((k.value for k in node.keywords if k.arg in _SQL_KEYWORDS), node.args[0] if node.args else None)
    text = literal_text(arg, scope.values, hole="?")  # f"DROP TABLE {name}" still reads as a DROP
    why = destructive(text) if text is not None else None
    return [why] if why else []


def _in_memory(node: ast.expr, scope: Scope, depth: int) -> bool:
    """``conn``/``cur`` bound in this code to ``sqlite3.connect(':memory:')`` (or its cursor),
    ``duckdb.connect()`` or ``create_engine('sqlite://')``."""
    if depth > 4:
        return False
    if isinstance(node, ast.Name) and node.id in scope.values:
        return _in_memory(scope.values[node.id], scope, depth + 1)
    if not isinstance(node, ast.Call):
        return False
    func = dotted(node.func, scope.aliases) or ""
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("cursor", "connect", "begin"):
        if _in_memory(node.func.value, scope, depth + 1):  # engine.connect(), conn.cursor()
            return True
    target = literal_text(node.args[0], scope.values) if node.args else None
    if func in ("sqlite3.connect", "duckdb.connect"):
        return target in (":memory:", "") if node.args else func == "duckdb.connect"
    if func.endswith("create_engine"):
        return target in ("sqlite://", "sqlite:///:memory:")
    return False


def magic_findings(node: ast.Call, scope: Scope) -> list[str]:
    """``%sql`` / ``%%sql`` (ipython-sql, jupysql): the statement is the magic's last argument."""
    text = literal_text(node.args[-1], scope.values, hole="?") if len(node.args) > 1 else None
    why = destructive(text) if text is not None else None
    return [why] if why else []
