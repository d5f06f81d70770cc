"""The schema evolution's changes of the text index of ``q`` (:mod:`host.storage.search`).

For every field a list projection searches: the shadow column (added, then filled with the
folded values of existing rows page by page, with progress) and its trigram index; for every
shadow column no projection searches any more: its index and the column, dropped (they hold
nothing but derived data). On SQLite a table with searched fields also gets ``_search_key``
(numbered once, unique-indexed) to key its FTS5 tables. All changes are additive.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import sqlalchemy as sa

from host.graph.model import Graph
from host.storage.catalog import read_full_text
from host.storage.database import Tx
from host.storage.dialect import EvolutionDialect
from host.storage.plan import Change, ChangeClass, NeedsTrigram, Operation, Refold, Statement
from host.storage.search import (
    KEY_COLUMN,
    SHADOW_PREFIX,
    key_index,
    postgresql_index_sql,
    searched_fields,
    shadow_column,
    sqlite_drop_sql,
    sqlite_index_sql,
    sqlite_key_index_sql,
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


def _removed(dialect: EvolutionDialect, table: str, origin: str, field: str, why: str) -> Change:
    """Drop the text index of ``field`` (objects named after ``origin``, the table's name
    before a rename in this plan) and its shadow column of ``table``."""
    sql = dialect.sql
    drops = sqlite_drop_sql(sql, origin, field) if sql.embedded else []
    if not sql.embedded:
        drops.append(f"DROP INDEX IF EXISTS {dialect.quote(trigram_index(origin, field))}")
    shadow = dialect.quote(shadow_column(field))
    drops.append(f"ALTER TABLE {dialect.quote(table)} DROP COLUMN {shadow}")
    return Change(
        kind="search-index-removed",
        change_class=ChangeClass.ADDITIVE,
        subject=f"text index of field {field!r} of table {table}",
        detail=why,
        sql=tuple(drops),
        operations=tuple(Statement(s) for s in drops),
    )


def _keys_renamed(
    dialect: EvolutionDialect, current: Mapping[str, Sequence[str]], renamed: Mapping[str, str]
) -> list[Change]:
    """SQLite: the unique index of ``_search_key`` of each table renamed by the plan, named
    after the table's new name (its old name may be an entity's again)."""
    if not dialect.sql.embedded:
        return []
    changes = []
    for table, origin in sorted(renamed.items()):
        if KEY_COLUMN not in current.get(table, ()):
            continue
        sql = (
            f"DROP INDEX IF EXISTS {dialect.quote(key_index(origin))}",
            sqlite_key_index_sql(dialect.sql, table),
        )
        changes.append(
            Change(
                kind="search-key-renamed",
                change_class=ChangeClass.ADDITIVE,
                subject=f"index of _search_key of table {table}",
                detail=f"the table was {origin}",
                sql=sql,
                operations=tuple(Statement(s) for s in sql),
            )
        )
    return changes


async def search_changes(
    tx: Tx,
    dialect: EvolutionDialect,
    graph: Graph,
    columns: Mapping[str, Sequence[str]],
    renamed: Mapping[str, str] | None = None,
    rewritten: Collection[tuple[str, str]] = (),
) -> list[Change]:
    """The changes of the text index from the shadow columns the tables have (``columns``,
    read before this plan's other changes) to those ``graph`` wants: ``search-index-added``,
    ``search-index-removed``, and ``search-index-refolded`` for a searched (table, field)
    among ``rewritten`` (values the plan's other changes rewrite). A table of ``renamed``
    (its name after the plan's other changes -> its name now: a renamed entity, or a removed
    one kept aside) has its text index dropped, and rebuilt under its new name if wanted."""
    sql = dialect.sql
    fts = sql.embedded and sqlite_trigram()
    renamed = renamed or {}
    wanted = {
        (graph.entities[fqn].table_name, name)
        for fqn, names in searched_fields(graph).items()
        for name in names
    }
    current = {
        table: list(names) for table, names in columns.items() if table not in renamed.values()
    }
    current.update({new: list(columns.get(old, ())) for new, old in renamed.items()})
    changes: list[Change] = []
    full_text = {fts.name for fts in await read_full_text(tx, sql)}
    for table in sorted(current):
        if table in full_text:
            continue  # an FTS5 table holds a copy of the shadow column it indexes
        origin = renamed.get(table, table)
        have = [c for c in current[table] if c.startswith(SHADOW_PREFIX)]
        keep = set() if table in renamed else {shadow_column(n) for t, n in wanted if t == table}
        for shadow in sorted(set(have) - keep):
            why = "the table was renamed" if table in renamed else "no list searches it any more"
            changes.append(_removed(dialect, table, origin, shadow[len(SHADOW_PREFIX) :], why))
            current[table].remove(shadow)
    changes.extend(_keys_renamed(dialect, current, renamed))
    keyed: set[str] = set()
    trigram_asked = False
    for table, field in sorted(wanted):
        present = current.get(table, [])
        shadow = shadow_column(field)
        if shadow in present:
            if (table, field) in rewritten:
                rows = await _count(tx, dialect, table, field)
                changes.append(
                    Change(
                        kind="search-index-refolded",
                        change_class=ChangeClass.ADDITIVE,
                        subject=f"text index of field {field!r} of table {table}",
                        detail="the plan rewrites the field's values",
                        affected_rows=rows,
                        sql=(f"-- fill {shadow} with the folded {field}",),
                        operations=(Refold(table, field, shadow, rows),),
                    )
                )
            continue
        ddl: list[str] = []
        operations: list[Operation] = []
        if sql.embedded and table not in keyed and KEY_COLUMN not in present:
            keyed.add(table)  # numbered once per table
            ddl += [
                dialect.add_column(table, KEY_COLUMN, sa.BigInteger()),
                *sqlite_key_sql(sql, table),
            ]
        if not sql.embedded and not trigram_asked:
            trigram_asked = True
            operations.append(NeedsTrigram())
        ddl.append(dialect.add_column(table, shadow, sa.Text()))
        operations.extend(Statement(s) for s in ddl)
        # Rows holding a value now (the progress total; 0 when the field comes in this plan).
        source = renamed.get(table, table)
        rows = await _count(tx, dialect, source, field) if field in present else 0
        operations.append(Refold(table, field, shadow, rows))
        if sql.embedded:
            index = sqlite_index_sql(sql, table, field) if fts else []
        else:
            # The planner chooses the index (a rare text) or the list's order (a frequent
            # one) from the new column's statistics.
            index = [postgresql_index_sql(sql, table, field), f"ANALYZE {dialect.quote(table)}"]
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
