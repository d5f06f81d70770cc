"""The runtime's own statements as plain SQL text, built once per shape and reused.

The entity store and the projection reader run a handful of statement shapes (insert a
row, guarded update, audit insert, one row by key, rows by id). Building them
as SQLAlchemy Core constructs and letting ``databases`` compile them cost about a quarter of
the event loop's time of a create (docs/benchmarks.md). Here each shape is written once per
(dialect, table, column set) as SQL text with the dialect's positional placeholders and
cached; the storage runs it straight on the driver.

Identifiers are quoted by the dialect (:mod:`host.storage.dialects`), so they are spelt as
SQLAlchemy spells them. Values are passed as parameters, never inlined.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Final

from host.storage.dialects import Dialect

__all__ = [
    "Sql",
    "guarded_update",
    "increment",
    "insert",
    "select_one",
    "set_by_key",
]

Sql = str
"""A statement's SQL text with positional placeholders."""

_CACHED: Final = 1024


def _select_list(dialect: Dialect, table: str, columns: tuple[str, ...]) -> str:
    qt = dialect.quote(table)
    return ", ".join(f"{qt}.{dialect.quote(name)}" for name in columns)


def insert(
    dialect: Dialect,
    table: str,
    columns: tuple[str, ...],
    computed: Mapping[str, str] | None = None,
) -> Sql:
    """``INSERT INTO table (columns) VALUES (...)``; parameters in ``columns`` order.
    ``computed``: more columns with the SQL expressions (no parameters) of their values."""
    return _insert(dialect, table, columns, tuple((computed or {}).items()))


@lru_cache(maxsize=_CACHED)
def _insert(
    dialect: Dialect, table: str, columns: tuple[str, ...], computed: tuple[tuple[str, str], ...]
) -> Sql:
    names = ", ".join(dialect.quote(name) for name in (*columns, *(c for c, _ in computed)))
    marks = ", ".join((*dialect.placeholders(len(columns)), *(e for _, e in computed)))
    return f"INSERT INTO {dialect.quote(table)} ({names}) VALUES ({marks})"


@lru_cache(maxsize=_CACHED)
def guarded_update(dialect: Dialect, table: str, columns: tuple[str, ...]) -> Sql:
    """``UPDATE table SET columns WHERE tenant_id, id and _version match RETURNING
    _version``; parameters: the ``columns`` values, then tenant, id, the version read."""
    qt = dialect.quote(table)
    count = len(columns)
    marks = dialect.placeholders(count + 3)
    pairs = zip(columns, marks[:count], strict=True)
    sets = ", ".join(f"{dialect.quote(name)}={mark}" for name, mark in pairs)
    tenant, record, version = marks[count:]
    return (
        f"UPDATE {qt} SET {sets} WHERE {qt}.tenant_id = {tenant} AND {qt}.id = {record} "
        f"AND {qt}._version = {version} RETURNING {qt}._version"
    )


@lru_cache(maxsize=_CACHED)
def select_one(dialect: Dialect, table: str, columns: tuple[str, ...]) -> Sql:
    """``columns`` of the row (tenant_id, id); parameters: tenant, id."""
    qt = dialect.quote(table)
    tenant, record = dialect.placeholders(2)
    return (
        f"SELECT {_select_list(dialect, table, columns)} FROM {qt} "
        f"WHERE {qt}.tenant_id = {tenant} AND {qt}.id = {record}"
    )


@lru_cache(maxsize=_CACHED)
def set_by_key(dialect: Dialect, table: str, column: str) -> Sql:
    """``UPDATE table SET column = ? WHERE tenant_id = ? AND id = ?`` (in that order)."""
    value, tenant, row = dialect.placeholders(3)
    return (
        f"UPDATE {dialect.quote(table)} SET {dialect.quote(column)} = {value} "
        f"WHERE tenant_id = {tenant} AND id = {row}"
    )


@lru_cache(maxsize=_CACHED)
def increment(
    dialect: Dialect, table: str, columns: tuple[str, ...], field: str, up: bool
) -> tuple[Sql, ...]:
    """Add a number to ``field`` of the row (tenant_id, id) unless the sum would pass a bound
    (null counts as 0), with a new ``updated_at`` and ``_version``; no version guard. The
    last statement returns the version and the value before, then ``columns`` after (no
    row: no such row, or the bound). Parameters: by, now, new version, tenant, id, bound
    (``up``: the highest value that may be increased, else the lowest that may be
    decreased); SQLite's first statement takes tenant, id, bound.

    PostgreSQL: one statement, the row locked by the sub-select (``FOR UPDATE``: a waiting
    increment sees the committed one's value and version). SQLite: the version is read first
    (a writing transaction there excludes every other writer), then the row updated."""
    qt, qf = dialect.quote(table), dialect.quote(field)
    by, now, version, tenant, row, bound = dialect.placeholders(6)
    compare = "<=" if up else ">="
    sets = f"{qf} = COALESCE({qt}.{qf}, 0) + {by}, updated_at = {now}, _version = {version}"
    key = f"tenant_id = {tenant} AND id = {row} AND COALESCE({qf}, 0) {compare} {bound}"
    returned = _select_list(dialect, table, columns)
    if dialect.embedded:
        return (
            f"SELECT _version, {qf} FROM {qt} WHERE {key}",
            f"UPDATE {qt} SET {sets} WHERE {key} RETURNING {returned}",
        )
    return (
        f"UPDATE {qt} SET {sets} FROM (SELECT tenant_id, id, _version, {qf} AS _before "
        f"FROM {qt} WHERE {key} FOR UPDATE) AS _old "
        f"WHERE {qt}.tenant_id = _old.tenant_id AND {qt}.id = _old.id "
        f"RETURNING _old._version, _old._before, {returned}",
    )
