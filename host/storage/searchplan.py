"""The schema evolution's changes of the text index of ``q`` (:mod:`host.storage.search`).

For every field a list projection searches: the shadow column (added, then filled with the
folded values of existing rows page by page, with progress) and its trigram index; for every
shadow column no projection searches any more: its index and the column, dropped (they hold
nothing but derived data). On SQLite a table with searched fields also gets ``_search_key``
(numbered once, unique-indexed) to key its FTS5 tables. All changes are additive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa

from host.graph.model import Graph
from host.storage.database import Tx
from host.storage.dialect import EvolutionDialect
from host.storage.plan import Change, ChangeClass, NeedsTrigram, Operation, Refold, Statement
from host.storage.search import (
    KEY_COLUMN,
    SHADOW_PREFIX,
    postgresql_index_sql,
    searched_fields,
    shadow_column,
    sqlite_drop_sql,
    sqlite_index_sql,
    sqlite_key_sql,
    sqlite_trigram,
    trigram_index,
)

__all__ = ["search_changes"]


async def _count(tx: Tx, dialect: EvolutionDialect, table: str, column: str) -> int:
    q = dialect.quote
    value = await tx.fetch_val(
        sa.text(f"SELECT count(*) FROM {q(table)} WHERE {q(column)} IS NOT NULL")
    )
    return int(value or 0)


async def search_changes(
    tx: Tx, dialect: EvolutionDialect, graph: Graph, columns: Mapping[str, Sequence[str]]
) -> list[Change]:
    """``search-index-added`` and ``search-index-removed`` changes from the shadow columns
    the tables have (``columns``, read before this plan's other changes) to those ``graph``
    wants."""
    sql = dialect.sql
    fts = dialect.sql.embedded and sqlite_trigram()
    wanted = {
        (graph.entities[fqn].table_name, name): fqn
        for fqn, names in searched_fields(graph).items()
        for name in names
    }
    tables = {table for table, _ in wanted}
    changes: list[Change] = []
    trigram_asked = False
    for table in sorted(columns):
        if table.startswith("ts_"):
            continue
        have = [c for c in columns[table] if c.startswith(SHADOW_PREFIX)]
        shadows = {shadow_column(name): name for t, name in wanted if t == table}
        for shadow in sorted(set(have) - shadows.keys()):
            field = shadow[len(SHADOW_PREFIX) :]
            drops = sqlite_drop_sql(sql, table, field) if fts else []
            if not sql.embedded:
                drops.append(f"DROP INDEX IF EXISTS {dialect.quote(trigram_index(table, field))}")
            drops.append(f"ALTER TABLE {dialect.quote(table)} DROP COLUMN {dialect.quote(shadow)}")
            changes.append(
                Change(
                    kind="search-index-removed",
                    change_class=ChangeClass.ADDITIVE,
                    subject=f"text index of field {field!r} of table {table}",
                    detail="no list projection searches the field any more",
                    sql=tuple(drops),
                    operations=tuple(Statement(s) for s in drops),
                )
            )
    for table, field in sorted(wanted):
        present = columns.get(table, ())
        shadow = shadow_column(field)
        if shadow in present:
            continue
        ddl: list[str] = []
        operations: list[Operation] = []
        if sql.embedded and table in tables and KEY_COLUMN not in present:
            tables.discard(table)  # numbered once per table
            add = dialect.add_column(table, KEY_COLUMN, sa.BigInteger())
            ddl += [add, *sqlite_key_sql(sql, table)]
        if not sql.embedded and not trigram_asked:
            trigram_asked = True
            operations.append(NeedsTrigram())
            ddl.append("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        add = dialect.add_column(table, shadow, sa.Text())
        ddl.append(add)
        operations.extend(Statement(s) for s in ddl if not s.startswith("CREATE EXTENSION"))
        rows = await _count(tx, dialect, table, field) if table in columns else 0
        operations.append(Refold(table, field, shadow, rows))
        index = (
            (sqlite_index_sql(sql, table, field) if fts else [])
            if sql.embedded
            else [postgresql_index_sql(sql, table, field)]
        )
        operations.extend(Statement(s) for s in index)
        changes.append(
            Change(
                kind="search-index-added",
                change_class=ChangeClass.ADDITIVE,
                subject=f"text index of field {field!r} of table {table}",
                detail="a list projection searches the field (q)",
                affected_rows=rows,
                outcome="existing rows get their folded copy",
                sql=(*ddl, f"-- fill {shadow} with the folded {field}", *index),
                operations=tuple(operations),
            )
        )
    return changes
