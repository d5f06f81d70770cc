"""What the database's own catalog says about indexes and full-text tables, on both backends.

The schema evolution reads objects here by what they are (the table, the columns, unique or
primary, an FTS5 table's content), never by what they are called: so it finds the objects an
earlier release named otherwise (:mod:`host.storage.renames`) as surely as its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa

from host.storage.database import Tx
from host.storage.dialects import Dialect

__all__ = ["FullText", "Index", "read_full_text", "read_indexes"]

_SQLITE_INDEXES: Final = """
SELECT m.tbl_name AS table_name, m.name AS index_name, coalesce(m.sql, '') AS definition,
       i.name AS column_name
FROM sqlite_master AS m JOIN pragma_index_info(m.name) AS i
WHERE m.type = 'index'
ORDER BY m.name, i.seqno
"""
_POSTGRESQL_INDEXES: Final = """
SELECT t.relname AS table_name, i.relname AS index_name, x.indisunique AS is_unique,
       x.indisprimary AS is_primary, pg_get_indexdef(x.indexrelid) AS definition,
       ARRAY(SELECT a.attname FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
             LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
             ORDER BY k.n) AS columns
FROM pg_index x
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = current_schema()
ORDER BY i.relname
"""
_FTS: Final = (
    "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
    "AND upper(substr(sql, 1, 20)) = 'CREATE VIRTUAL TABLE' AND instr(lower(sql), 'fts5') > 0"
)
_FTS_SPEC: Final = re.compile(
    r'fts5\(\s*"?(?P<column>[^",\s)]+)"?\s*,\s*content\s*=\s*"?(?P<table>[^",\s)]+)"?',
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Index:
    """One index of the current schema."""

    table: str
    name: str
    columns: tuple[str | None, ...]
    """Its key columns in order; ``None`` for an expression."""
    unique: bool
    primary: bool
    """The index of a primary key (PostgreSQL; SQLite's keys are not named objects)."""
    definition: str
    """Its SQL (PostgreSQL: ``pg_get_indexdef``; SQLite: as created, empty for its own)."""


@dataclass(frozen=True, slots=True)
class FullText:
    """SQLite: an FTS5 table indexing one column of a content table."""

    name: str
    table: str
    column: str


async def read_indexes(tx: Tx, dialect: Dialect) -> list[Index]:
    """Every index of the current schema (SQLite: those it keeps for itself too)."""
    if not dialect.embedded:
        rows = await tx.fetch_all(sa.text(_POSTGRESQL_INDEXES))
        return [
            Index(
                table=str(row["table_name"]),
                name=str(row["index_name"]),
                columns=tuple(row["columns"]),
                unique=bool(row["is_unique"]),
                primary=bool(row["is_primary"]),
                definition=str(row["definition"]),
            )
            for row in rows
        ]
    found: dict[str, tuple[str, str, list[str | None]]] = {}
    for row in await tx.fetch_all(sa.text(_SQLITE_INDEXES)):
        name, column = str(row["index_name"]), row["column_name"]
        if name not in found:
            found[name] = (str(row["table_name"]), str(row["definition"]), [])
        found[name][2].append(None if column is None else str(column))
    return [
        Index(
            table=table,
            name=name,
            columns=tuple(columns),
            unique=not definition or definition.upper().startswith("CREATE UNIQUE"),
            primary=False,
            definition=definition,
        )
        for name, (table, definition, columns) in found.items()
    ]


async def read_full_text(tx: Tx, dialect: Dialect) -> list[FullText]:
    """SQLite: every FTS5 table with the content table and column it indexes (none on
    PostgreSQL)."""
    if not dialect.embedded:
        return []
    tables: list[FullText] = []
    for row in await tx.fetch_all(sa.text(_FTS)):
        spec = _FTS_SPEC.search(str(row["sql"]))
        if spec is not None:
            tables.append(FullText(str(row["name"]), spec["table"], spec["column"]))
    return tables
