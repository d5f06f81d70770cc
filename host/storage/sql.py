"""The runtime's own statements as plain SQL text, built once per shape and reused.

The action runtime and the projection reader run a handful of statement shapes (insert a
row, guarded update, audit insert, one row by key, a tenant's rows in id order). Building
them as SQLAlchemy Core constructs and letting ``databases`` compile them cost about a
quarter of the event loop's time of a create (docs/benchmarks.md). Here each shape is
written once per (table, column set) as SQL text with positional placeholders (``?`` on
SQLite, ``$n`` on PostgreSQL) and cached; the storage runs it straight on the driver.

Identifiers are quoted by the dialect's own preparer, so they are spelt as SQLAlchemy spells
them. Values are passed as parameters, never inlined.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.compiler import IdentifierPreparer

__all__ = [
    "Sql",
    "chained",
    "guarded_update",
    "insert",
    "placeholders",
    "quote",
    "select_one",
    "select_page",
    "select_where",
    "set_by_key",
]

Sql = str
"""A statement's SQL text with positional placeholders."""

_PREPARERS: Final[dict[str, IdentifierPreparer]] = {
    "sqlite": sqlite.dialect().identifier_preparer,
    "postgresql": postgresql.dialect().identifier_preparer,  # type: ignore[no-untyped-call]
}
_CACHED: Final = 1024


def _q(dialect: str, name: str) -> str:
    quoted: str = _PREPARERS[dialect].quote(name)
    return quoted


def _marks(dialect: str, count: int) -> list[str]:
    if dialect == "postgresql":
        return [f"${n}" for n in range(1, count + 1)]
    if dialect == "sqlite":
        return ["?"] * count
    raise ValueError(f"unsupported dialect {dialect!r}")


def _select_list(dialect: str, table: str, columns: tuple[str, ...]) -> str:
    qt = _q(dialect, table)
    return ", ".join(f"{qt}.{_q(dialect, name)}" for name in columns)


@lru_cache(maxsize=_CACHED)
def insert(dialect: str, table: str, columns: tuple[str, ...]) -> Sql:
    """``INSERT INTO table (columns) VALUES (...)``; parameters in ``columns`` order."""
    names = ", ".join(_q(dialect, name) for name in columns)
    marks = ", ".join(_marks(dialect, len(columns)))
    return f"INSERT INTO {_q(dialect, table)} ({names}) VALUES ({marks})"


@lru_cache(maxsize=_CACHED)
def guarded_update(dialect: str, table: str, columns: tuple[str, ...]) -> Sql:
    """``UPDATE table SET columns WHERE tenant_id, id and _version match RETURNING
    _version``; parameters: the ``columns`` values, then tenant, id, the version read."""
    qt = _q(dialect, table)
    count = len(columns)
    marks = _marks(dialect, count + 3)
    pairs = zip(columns, marks[:count], strict=True)
    sets = ", ".join(f"{_q(dialect, name)}={mark}" for name, mark in pairs)
    tenant, record, version = marks[count:]
    return (
        f"UPDATE {qt} SET {sets} WHERE {qt}.tenant_id = {tenant} AND {qt}.id = {record} "
        f"AND {qt}._version = {version} RETURNING {qt}._version"
    )


@lru_cache(maxsize=_CACHED)
def select_one(dialect: str, table: str, columns: tuple[str, ...]) -> Sql:
    """``columns`` of the row (tenant_id, id); parameters: tenant, id."""
    qt = _q(dialect, table)
    tenant, record = _marks(dialect, 2)
    return (
        f"SELECT {_select_list(dialect, table, columns)} FROM {qt} "
        f"WHERE {qt}.tenant_id = {tenant} AND {qt}.id = {record}"
    )


@lru_cache(maxsize=_CACHED)
def select_page(dialect: str, table: str, columns: tuple[str, ...], after: bool) -> Sql:
    """``columns`` of a tenant's rows in id order, at most a limit of them (keyset
    pagination); parameters: tenant, [the last id already read,] the limit."""
    qt = _q(dialect, table)
    marks = _marks(dialect, 3 if after else 2)
    where = f"{qt}.tenant_id = {marks[0]}"
    if after:
        where += f" AND {qt}.id > {marks[1]}"
    return (
        f"SELECT {_select_list(dialect, table, columns)} FROM {qt} WHERE {where} "
        f"ORDER BY {qt}.id LIMIT {marks[-1]}"
    )


@lru_cache(maxsize=_CACHED)
def set_by_key(dialect: str, table: str, column: str) -> Sql:
    """``UPDATE table SET column = ? WHERE tenant_id = ? AND id = ?`` (in that order)."""
    value, tenant, row = _marks(dialect, 3)
    return (
        f"UPDATE {_q(dialect, table)} SET {_q(dialect, column)} = {value} "
        f"WHERE tenant_id = {tenant} AND id = {row}"
    )


def quote(dialect: str, name: str) -> str:
    """``name`` quoted as an identifier of ``dialect``."""
    return _q(dialect, name)


def placeholders(dialect: str, count: int) -> list[str]:
    """``count`` positional placeholders of ``dialect`` (``?`` or ``$1``...)."""
    return _marks(dialect, count)


_COMPARISONS: Final = {"eq": "=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
_ORDERED: Final = frozenset({"lt", "lte", "gt", "gte"})

Where = tuple[tuple[str, str, int, bool], ...]
"""Conditions as (column, operator, number of parameters, text column): ``eq ne lt lte gt
gte contains`` take one parameter, ``in`` its count (at least one), ``null``/``notnull``
none. Text columns compare in code-point order (``COLLATE "C"`` on PostgreSQL, as SQLite
does); ``contains`` compares ASCII-folded text (the parameter must be folded already)."""


def _condition(dialect: str, qt: str, where: tuple[str, str, int, bool], marks: list[str]) -> str:
    column, op, _, text = where
    col = f"{qt}.{_q(dialect, column)}"
    if op in _ORDERED and text and dialect == "postgresql":
        return f'({col} COLLATE "C") {_COMPARISONS[op]} {marks[0]}'
    if op in _COMPARISONS:
        return f"{col} {_COMPARISONS[op]} {marks[0]}"
    if op == "ne":
        return f"({col} <> {marks[0]} OR {col} IS NULL)"
    if op == "in":
        return f"{col} IN ({', '.join(marks)})"
    if op == "contains":
        if dialect == "postgresql":
            return f'strpos(lower({col} COLLATE "C"), {marks[0]}) > 0'
        return f"instr(lower({col}), {marks[0]}) > 0"
    if op == "null":
        return f"{col} IS NULL"
    if op == "notnull":
        return f"{col} IS NOT NULL"
    raise ValueError(f"unknown operator {op!r}")


@lru_cache(maxsize=_CACHED)
def select_where(dialect: str, table: str, columns: tuple[str, ...], where: Where) -> Sql:
    """``columns`` of a tenant's rows matching every condition of ``where``, in id order, at
    most a limit of them; parameters: tenant, each condition's values in order, the limit."""
    qt = _q(dialect, table)
    marks = _marks(dialect, 2 + sum(condition[2] for condition in where))
    clauses = [f"{qt}.tenant_id = {marks[0]}"]
    at = 1
    for condition in where:
        count = condition[2]
        clauses.append(_condition(dialect, qt, condition, marks[at : at + count]))
        at += count
    return (
        f"SELECT {_select_list(dialect, table, columns)} FROM {qt} "
        f"WHERE {' AND '.join(clauses)} ORDER BY {qt}.id LIMIT {marks[-1]}"
    )


_MARK: Final = re.compile(r"\$(\d+)")


@lru_cache(maxsize=_CACHED)
def chained(first: Sql, first_marks: int, second: Sql) -> Sql:
    """PostgreSQL: two writes as one statement, so they cost one round trip:
    ``WITH _first AS (first) second``, the second's ``$n`` moved past the first's
    ``first_marks`` parameters. The first must not need to return rows (a data-modifying
    ``WITH`` without ``RETURNING`` runs all the same); the parameters are the first's, then
    the second's. Only for statements built here (no ``$`` inside literals)."""
    moved = _MARK.sub(lambda mark: f"${int(mark.group(1)) + first_marks}", second)
    return f"WITH _first AS ({first}) {moved}"
