"""The indexes that serve the declared filters and sorts of list projections.

For every field a list projection declares sortable, or filterable with a comparison
operator, the entity table gets an index on (``tenant_id``, the field's sort expression,
``id``) (:func:`host.storage.listsql.index_ddl`): the filter or sort of one tenant seeks it,
and the keyset of a deep page starts where the previous page ended. The schema evolution
diffs the indexes the graph wants against the list indexes the database has (read from its
catalog) and plans each difference as an additive change (``index-added``,
``index-removed``), applied at startup like any other.

An index is named ``<table>___<fields>___lst_<digest>`` (:mod:`host.storage.names`). A
database prepared by an earlier release has its list indexes as ``tx_<table>__<fields>_<digest>``:
such an index keeps its name (no rebuild) and stands for the index of the same table and
expressions; it never collides with another object, since its digest is part of its name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Final

import sqlalchemy as sa

from host.graph.model import Graph
from host.query.spec import Column
from host.storage.catalog import read_indexes
from host.storage.database import Tx
from host.storage.dialect import EvolutionDialect
from host.storage.dialects import Dialect
from host.storage.listsql import index_ddl, sort_expression
from host.storage.names import MARK, MAX_IDENTIFIER, generated, list_kind
from host.storage.plan import Change, ChangeClass, Statement
from host.storage.textlimits import index_groups, indexed_text_limits

__all__ = ["LEGACY_PREFIX", "index_changes", "wanted_indexes"]

LEGACY_PREFIX: Final = "tx_"
"""How an earlier release began the name of a list index."""
_LIST_INDEX: Final = re.compile(rf"(?:{MARK}lst_[0-9a-f]{{8}}|^{LEGACY_PREFIX}.*_[0-9a-f]{{8}})\Z")
"""The name of a list index, current or earlier (not the key of a table named ``tx_...``)."""
_BYTES: Final[Mapping[str, str]] = {
    "sqlite": "length(CAST({} AS BLOB))",
    "postgresql": "octet_length({})",
}
"""The UTF-8 length in bytes of a text column."""
SAMPLES: Final = 5


def _digest(dialect: Dialect, columns: Sequence[Column]) -> str:
    # The digest of the expressions renames the index when one changes (new enum options).
    text = "\x00".join(sort_expression(dialect, column) for column in columns)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _name(dialect: Dialect, table: str, columns: Sequence[Column]) -> str:
    fields = [column.name for column in columns]
    return generated(table, list_kind(_digest(dialect, columns)), fields)


def _legacy_name(dialect: Dialect, table: str, columns: Sequence[Column]) -> str:
    """The name an earlier release gave the index."""
    base = f"{LEGACY_PREFIX}{table}__{'__'.join(column.name for column in columns)}"
    return f"{base[: MAX_IDENTIFIER - 9]}_{_digest(dialect, columns)}"


def wanted_indexes(graph: Graph, dialect: Dialect) -> dict[tuple[str, str], tuple[str, str]]:
    """(table, index name) -> (fields, ``CREATE INDEX`` statement) for every list index."""
    wanted: dict[tuple[str, str], tuple[str, str]] = {}
    for _, table, group in index_groups(graph):
        name = _name(dialect, table, group)
        fields = ", ".join(column.name for column in group)
        wanted[(table, name)] = (fields, index_ddl(dialect, table, group, name))
    return wanted


async def _existing(tx: Tx, dialect: EvolutionDialect, graph: Graph) -> dict[tuple[str, str], str]:
    """(table, name) -> the name in the database, of every list index of the database: an
    earlier release's index of an index the graph wants under the name it has now."""
    current = {
        (table, _legacy_name(dialect.sql, table, group)): (table, _name(dialect.sql, table, group))
        for _, table, group in index_groups(graph)
    }
    return {
        current.get((index.table, index.name), (index.table, index.name)): index.name
        for index in await read_indexes(tx, dialect.sql)
        if not index.unique and _LIST_INDEX.search(index.name)
    }


async def index_changes(tx: Tx, dialect: EvolutionDialect, graph: Graph) -> list[Change]:
    """``index-added`` and ``index-removed`` changes (additive) from the database's list
    indexes to those ``graph`` wants."""
    existing = await _existing(tx, dialect, graph)
    wanted = wanted_indexes(graph, dialect.sql)
    changes: list[Change] = []
    for table, name in sorted(existing.keys() - wanted.keys()):
        sql = f"DROP INDEX IF EXISTS {dialect.quote(existing[(table, name)])}"
        changes.append(
            Change(
                kind="index-removed",
                change_class=ChangeClass.ADDITIVE,
                subject=f"index {name} of table {table}",
                detail="no list projection filters or sorts on its field any more",
                sql=(sql,),
                operations=(Statement(sql),),
            )
        )
    limits = indexed_text_limits(graph)
    texts = {
        (table, _name(dialect.sql, table, group)): (
            {c.name: limits[fqn][c.name] for c in group if c.name in limits.get(fqn, {})}
        )
        for fqn, table, group in index_groups(graph)
    }
    columns: dict[str, set[str]] = {}
    for row in await tx.fetch_all(dialect.columns_query()):
        columns.setdefault(str(row["table_name"]), set()).add(str(row["column_name"]))
    for (table, name), (field, sql) in sorted(wanted.items()):
        if (table, name) in existing:
            continue
        present = {k: v for k, v in texts[(table, name)].items() if k in columns.get(table, ())}
        count, samples = await _too_long(tx, dialect, table, present)
        changes.append(
            Change(
                kind="index-added",
                change_class=ChangeClass.ADDITIVE,
                subject=f"index {name} of table {table}",
                detail=f"a list projection filters or sorts on {field}",
                violations=count,
                violation_samples=samples,
                remedy=(
                    "a field a list filters or sorts on holds at most "
                    + ", ".join(f"{limit} bytes ({field})" for field, limit in present.items())
                    + " of UTF-8 text: shorten those values, or stop filtering and sorting on "
                    'the field (docs/schema-evolution.md, "Long values")'
                ),
                sql=(sql,),
                # ``sa.text`` would take ``:word`` inside an enum option for a parameter.
                operations=(Statement(sql.replace(":", "\\:")),),
            )
        )
    return changes


async def _too_long(
    tx: Tx, dialect: EvolutionDialect, table: str, limits: Mapping[str, int]
) -> tuple[int, tuple[str, ...]]:
    """Rows of ``table`` holding a value longer than its limit: (count, some ``tenant/id``)."""
    if not limits:
        return 0, ()
    where = " OR ".join(
        f"{_BYTES[dialect.name].format(dialect.quote(name))} > {int(limit)}"
        for name, limit in limits.items()
    )
    source = f"FROM {dialect.quote(table)} WHERE {where}"
    count = int(await tx.fetch_val(sa.text(f"SELECT count(*) {source}")) or 0)
    if not count:
        return 0, ()
    rows = await tx.fetch_all(
        sa.text(f"SELECT tenant_id, id {source} ORDER BY tenant_id, id LIMIT {SAMPLES}")
    )
    return count, tuple(f"{row['tenant_id']}/{row['id']}" for row in rows)
