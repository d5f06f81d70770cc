"""The SQL text of a filtered, sorted, searched list page (keyset pagination).

Identifiers come only from the compiled graph and are quoted by the dialect; enum options
(from the graph too) are literals, quoted as SQL strings. Every value of a request (filter
values, search text, cursor values, the tenant, the limit) is a bound parameter, but for the
``LIKE`` pattern of ``q`` on PostgreSQL, written as a dollar-quoted literal so the planner
sees it (:func:`host.storage.search.search_condition`).

The sort expression of a column is the same text in ``ORDER BY``, in the keyset condition,
in filters and in the index built for it (:func:`index_ddl`), so both backends can use the
index (docs/http.md, "Lists", and docs/benchmarks.md for the plans).

A followed column (``project.key``, :attr:`Column.via`) is read through a ``LEFT JOIN`` of its
entity's table, one per reference followed (:func:`_joins`): a derived table whose columns are
named as the followed fields (names no table column can have), so every expression above
names them as it names the entity's own columns. The join matches the tenant and the id, and
holds the reader's :class:`~host.query.conditions.Floor` of that entity: a row the reader may
not read joins nothing, its followed values are null.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from host.fieldtypes import REFERENCE, Ordering
from host.query.conditions import AnyOf, Condition, Floor, matching
from host.query.cursor import KeysetValue
from host.query.params import ListQuery
from host.query.spec import DATE_BUCKETS, Column, Facet, SortKey
from host.storage.dialects import Dialect
from host.storage.search import indexed_source, search_condition

__all__ = ["count_list", "index_ddl", "select_list", "sort_expression"]

_COMPARISONS: Final = {"eq": "=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def sort_expression(dialect: Dialect, column: Column) -> str:
    """How ``column`` is compared and ordered (its type's :class:`~host.fieldtypes.Ordering`):
    text in code-point order (:meth:`Dialect.text_order`), numeric text (money) as a number,
    an enum by the position of its option."""
    name = dialect.quote(column.name)
    ordering = column.type.ordering
    if ordering is Ordering.TEXT:
        return dialect.text_order(name)
    if ordering is Ordering.NUMERIC_TEXT:
        return f"(CAST({name} AS NUMERIC))"
    if ordering is Ordering.OPTION_RANK:
        whens = " ".join(
            f"WHEN {_literal(option)} THEN {rank}"
            for rank, option in enumerate(column.field.options)
        )
        return f"(CASE {name} {whens} END)"
    return name


class _Params:
    """Collects bound values and hands out their placeholders."""

    __slots__ = ("dialect", "values")

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.values: list[object] = []

    def mark(self, value: object) -> str:
        self.values.append(value)
        return self.dialect.placeholder(len(self.values))

    def operand(self, column: Column, value: object) -> str:
        """A bound value on the same scale as :func:`sort_expression`."""
        ordering = column.type.ordering
        if ordering is Ordering.NUMERIC_TEXT:
            return f"CAST(CAST({self.mark(value)} AS TEXT) AS NUMERIC)"
        if ordering is Ordering.OPTION_RANK:
            options = column.field.options
            return self.mark(options.index(value) if value in options else None)
        return self.mark(column.type.keyset_value(value))


def _condition(condition: Condition | AnyOf, params: _Params) -> str:
    if isinstance(condition, AnyOf):
        return "(" + " OR ".join(_condition(c, params) for c in condition.alternatives) + ")"
    column, operator, values = condition.column, condition.operator, condition.values
    dialect = params.dialect
    name = dialect.quote(column.name)
    # A reference is only ever compared for equality, which no collation changes: the plain
    # column, so the (tenant, reference) index every reference field has serves it.
    expression = name if column.type is REFERENCE else sort_expression(dialect, column)
    if operator == "null":
        return f"{name} IS NULL" if values[0] else f"{name} IS NOT NULL"
    if operator == "contains":
        return dialect.contains(name, params.mark(values[0]))
    if operator == "in":
        marks = ", ".join(params.operand(column, value) for value in values)
        return f"{expression} IN ({marks})"
    if operator == "ne":
        text = f"{expression} <> {params.operand(column, values[0])}"
        return f"({text} OR {name} IS NULL)" if column.nullable else text
    return f"{expression} {_COMPARISONS[operator]} {params.operand(column, values[0])}"


def _search(table: str, needle: str, search: Sequence[Column], params: _Params) -> str:
    # The folded copies and their trigram index: host.storage.search.
    return search_condition(params.dialect, table, search, needle, params.mark)


def _keys(sort: Sequence[SortKey], id_column: Column) -> list[tuple[Column, bool]]:
    keys = [(key.column, key.descending) for key in sort]
    # ``id`` breaks ties in the direction of the last key, so one index per sort field
    # (tenant, expression, id) serves both directions.
    keys.append((id_column, keys[-1][1] if keys else False))
    return keys


def _order_by(dialect: Dialect, keys: Sequence[tuple[Column, bool]]) -> str:
    # SQLite's own order on both: nulls first ascending, last descending. ``id`` is never
    # null and is indexed in the backends' default order, so it says nothing of nulls.
    return ", ".join(
        dialect.order(sort_expression(dialect, column), descending, nullable=column.name != "id")
        for column, descending in keys
    )


def _effective(column: Column, value: KeysetValue) -> KeysetValue:
    """A stored enum value outside the options sorts as null (its sort expression is null)."""
    if column.type.ordering is Ordering.OPTION_RANK and value not in column.field.options:
        return None
    return value


def _after(
    keys: Sequence[tuple[Column, bool]], values: Sequence[KeysetValue], params: _Params
) -> str:
    """Rows strictly after the keyset ``values`` in the order of ``keys`` (null is the
    smallest value: first ascending, last descending)."""
    dialect = params.dialect
    values = [_effective(column, value) for (column, _), value in zip(keys, values, strict=True)]
    operands = [None if v is None else (c, v) for (c, _), v in zip(keys, values, strict=True)]
    directions = {descending for _, descending in keys}
    nullable = any(column.nullable for column, _ in keys)
    if len(directions) == 1 and None not in operands and not (nullable and True in directions):
        # One row-value comparison: both backends seek the (tenant, key..., id) index with it.
        left = ", ".join(sort_expression(dialect, column) for column, _ in keys)
        right = ", ".join(params.operand(c, v) for (c, _), v in zip(keys, values, strict=True))
        return f"({left}) {'<' if True in directions else '>'} ({right})"
    pairs = list(zip(keys, values, strict=True))

    def equal(column: Column, value: KeysetValue) -> str:
        if value is None:
            return f"{dialect.quote(column.name)} IS NULL"
        return f"{sort_expression(dialect, column)} = {params.operand(column, value)}"

    def beyond(column: Column, descending: bool, value: KeysetValue) -> str | None:
        name = dialect.quote(column.name)
        if value is None:
            return None if descending else f"{name} IS NOT NULL"
        expression = sort_expression(dialect, column)
        if descending:
            smaller = f"{expression} < {params.operand(column, value)}"
            return f"({smaller} OR {name} IS NULL)" if column.nullable else smaller
        return f"{expression} > {params.operand(column, value)}"

    # Placeholders are generated in text order: ``?`` on SQLite binds by position.
    alternatives: list[str] = []
    for j, ((column, descending), value) in enumerate(pairs):
        if value is None and descending:
            continue  # nothing sorts after null in a descending key
        parts = [equal(c, v) for (c, _), v in pairs[:j]]
        last = beyond(column, descending, value)
        assert last is not None
        alternatives.append(" AND ".join([*parts, last]))
    if not alternatives:
        return "1 = 0"
    return "(" + " OR ".join(f"({alternative})" for alternative in alternatives) + ")"


def _source(table: str, query: ListQuery, search: Sequence[Column], params: _Params) -> str | None:
    """The ``FROM`` clause when the text index drives the read (SQLite FTS5), else ``None``;
    its placeholders come first in the statement."""
    if query.needle is None or not search or not query.text_index:
        return None
    return indexed_source(params.dialect, table, search, query.needle, params.mark)


def _used(
    query: ListQuery, selected: Sequence[Column], facet: Column | None = None
) -> list[Column]:
    """Every column a statement of ``query`` names (those followed decide its joins)."""
    columns = [*selected, *(key.column for key in query.sort)]
    conditions: list[Condition] = [*query.conditions]
    for clause in matching(query.scope):
        conditions += clause.alternatives if isinstance(clause, AnyOf) else (clause,)
    columns += [condition.column for condition in conditions]
    return [*columns, facet] if facet is not None else columns


def _joins(query: ListQuery, columns: Sequence[Column], params: _Params) -> str:
    """The ``LEFT JOIN`` of each reference ``columns`` follow (see the module docstring)."""
    q = params.dialect.quote
    hops: dict[str, dict[str, Column]] = {}
    for column in columns:
        if column.via is not None:
            hops.setdefault(column.via, {})[column.name] = column
    floors = {clause.via: clause for clause in query.scope if isinstance(clause, Floor)}
    joins = []
    for via, followed in sorted(hops.items()):
        target = next(iter(followed.values())).target
        assert target is not None
        key, tenant = q(f"{via}.*id"), q(f"{via}.*tenant")
        picked = [f"id AS {key}", f"tenant_id AS {tenant}"]
        picked += [f"{q(column.source)} AS {q(name)}" for name, column in sorted(followed.items())]
        floor = floors.get(via)
        if floor is None and target.definition.access is not None:
            floor = Floor(via, denied=True)  # a floor the reader was not judged by: nothing
        where = ""
        if floor is not None and (floor.denied or floor.conditions):
            parts = ["1 = 0"] if floor.denied else [_condition(c, params) for c in floor.conditions]
            where = f" WHERE {' AND '.join(parts)}"
        joins.append(
            f" LEFT JOIN (SELECT {', '.join(picked)} FROM {q(target.table_name)}{where}) AS "
            f"{q(via + '.*')} ON {tenant} = tenant_id AND {key} = {q(via)}"
        )
    return "".join(joins)


def _matching(
    table: str, query: ListQuery, search: Sequence[Column], tenant: str, params: _Params
) -> list[str]:
    """The ``WHERE`` parts of the tenant's rows matching ``query``: the reader's row scope,
    the filters and the search."""
    where = [f"tenant_id = {params.mark(tenant)}"]
    where.extend(_condition(condition, params) for condition in matching(query.scope))
    where.extend(_condition(condition, params) for condition in query.conditions)
    if query.needle is not None and search:
        where.append(_search(table, query.needle, search, params))
    return where


def count_list(
    dialect: Dialect,
    table: str,
    query: ListQuery,
    *,
    search: Sequence[Column],
    tenant: str,
    facet: Facet | None,
    limit: int,
) -> tuple[str, list[object]]:
    """The statement counting the rows matching ``query`` (sort and cursor aside), reading at
    most ``limit`` of them: one row (the count) without ``facet``, else one row per value of
    the ``facet`` column, or per bucket (the prefix of the canonical datetime text that names
    it), as (value, count); and its parameters."""
    params = _Params(dialect)
    source = _source(table, query, search, params) or dialect.quote(table)
    source += _joins(query, _used(query, (), None if facet is None else facet.column), params)
    where = " AND ".join(_matching(table, query, search, tenant, params))
    picked = "1 AS v" if facet is None else f"{_facet_value(dialect, facet)} AS v"
    bounded = f"SELECT {picked} FROM {source} WHERE {where} LIMIT {params.mark(limit)}"
    if facet is None:
        return f"SELECT count(*) FROM ({bounded}) AS bounded", params.values
    return f"SELECT v, count(*) FROM ({bounded}) AS bounded GROUP BY v", params.values


def _facet_value(dialect: Dialect, facet: Facet) -> str:
    column = dialect.quote(facet.column.name)
    if facet.bucket is None:
        return column
    return f"substr({column}, 1, {DATE_BUCKETS[facet.bucket]})"


@lru_cache(maxsize=1024)
def _select_from(
    dialect: Dialect, table: str, columns: tuple[str, ...], source: str | None = None
) -> str:
    quoted = dialect.quote(table) if source is None else source
    return f"SELECT {', '.join(map(dialect.quote, columns))} FROM {quoted}"


def select_list(
    dialect: Dialect,
    table: str,
    columns: Sequence[str],
    query: ListQuery,
    *,
    search: Sequence[Column],
    id_column: Column,
    tenant: str,
    after: Sequence[KeysetValue] | None,
    limit: int,
    followed: Sequence[Column] = (),
) -> tuple[str, list[object]]:
    """The statement of one page: ``columns`` of the tenant's rows matching ``query``, in its
    order, after the keyset ``after`` (if any), at most ``limit``; and its parameters.
    ``followed``: the followed columns among ``columns``."""
    params = _Params(dialect)
    source = _source(table, query, search, params)
    joins = _joins(query, _used(query, followed), params)
    if joins:
        source = (source or dialect.quote(table)) + joins
    where = _matching(table, query, search, tenant, params)
    keys = _keys(query.sort, id_column)
    if after is not None:
        where.append(_after(keys, after, params))
    sql = (
        f"{_select_from(dialect, table, tuple(columns), source)} WHERE {' AND '.join(where)} "
        f"ORDER BY {_order_by(dialect, keys)} LIMIT {params.mark(limit)}"
    )
    return sql, params.values


def index_ddl(dialect: Dialect, table: str, columns: Sequence[Column], name: str) -> str:
    """``CREATE INDEX name`` on (tenant, the columns' sort expressions, id), ordered as
    :func:`select_list` orders (nulls first)."""
    expressions = [dialect.index_key(sort_expression(dialect, column)) for column in columns]
    return (
        f"CREATE INDEX IF NOT EXISTS {dialect.quote(name)} "
        f"ON {dialect.quote(table)} (tenant_id, {', '.join(expressions)}, id)"
    )
