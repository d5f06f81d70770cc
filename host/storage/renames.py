"""Generated objects brought to the names they have now (:mod:`host.storage.names`).

An index, full-text table or primary key the host derives from an entity's table is found in
the catalog by what it is (:mod:`host.storage.catalog`): an FTS5 table by the shadow column it
indexes, a trigram index likewise, the unique index of ``_search_key``, the index of a
reference field (``tenant_id`` and one column), a table's primary key. One found under another
name (an earlier release's: ``ts_<table>__<field>``, ``ts_<table>__key``, ``ix_<table>_<field>``,
PostgreSQL's own ``<table>_pkey``; or the name of a table since renamed) is renamed, first in
the plan: a start on a database of an earlier release renames its objects once, and the next
start finds nothing to do. Renaming is immediate on PostgreSQL (``ALTER ... RENAME``) and for
an FTS5 table; SQLite cannot rename an index, so it builds the index again under its name. A
second object of the same kind and columns (the earlier one, beside the current) is dropped,
and so is the index of a removed reference field's column kept aside (``_removed_...``).

List indexes are left to :mod:`host.storage.indexes` (an earlier release's keep their names).
"""

from __future__ import annotations

from collections.abc import Iterable

from host.storage.catalog import Index, read_full_text, read_indexes
from host.storage.database import Tx
from host.storage.dialect import EvolutionDialect
from host.storage.names import ASIDE_PREFIX, primary_key, reference_index
from host.storage.plan import Change, ChangeClass, Statement
from host.storage.search import (
    KEY_COLUMN,
    SHADOW_PREFIX,
    fts_table,
    key_index,
    sqlite_key_index_sql,
    sqlite_trigger_drops,
    sqlite_trigger_sql,
    trigram_index,
)

__all__ = ["name_changes"]

TENANT = "tenant_id"


def _entity_like(table: str) -> bool:
    """An entity's table, or one kept aside (the host's own tables hold no ``__``)."""
    return "__" in table


def _change(subject: str, old: str, new: str | None, sql: Iterable[str]) -> Change:
    """``subject``, named ``old``, renamed ``new`` (dropped when ``None``)."""
    statements = tuple(sql)
    return Change(
        kind="name-migrated",
        change_class=ChangeClass.ADDITIVE,
        subject=subject,
        detail=f"named {old}",
        outcome=f"named {new}" if new else "dropped",
        sql=statements,
        operations=tuple(Statement(s) for s in statements),
    )


class _Renamer:
    """The changes of one plan (the catalog read once)."""

    def __init__(self, dialect: EvolutionDialect, indexes: list[Index]) -> None:
        self.dialect = dialect
        self.q = dialect.quote
        self.embedded = dialect.sql.embedded
        self.indexes = indexes
        self.changes: list[Change] = []

    def indexes_of(self, subject: str, found: list[Index], wanted: str, create: str | None) -> None:
        """Indexes of one kind and columns (``found``) brought to one named ``wanted``:
        renamed (PostgreSQL), or built again (SQLite, with ``create``); others dropped."""
        if not found or [index.name for index in found] == [wanted]:
            return
        keep = next((index for index in found if index.name == wanted), None)
        drops = [index for index in found if index is not keep]
        sql: list[str] = []
        if keep is None and not self.embedded:
            first = drops.pop(0)
            sql.append(f"ALTER INDEX {self.q(first.name)} RENAME TO {self.q(wanted)}")
        sql += [f"DROP INDEX {self.q(index.name)}" for index in drops]
        if keep is None and self.embedded and create is not None:
            sql.append(create)
        old = ", ".join(index.name for index in found if index is not keep)
        self.changes.append(_change(subject, old, wanted, sql))

    def references(self) -> None:
        groups: dict[tuple[str, str], list[Index]] = {}
        for index in self.indexes:
            columns = index.columns
            if (
                _entity_like(index.table)
                and not index.unique
                and len(columns) == 2
                and columns[0] == TENANT
                and columns[1] is not None
            ):
                groups.setdefault((index.table, columns[1]), []).append(index)
        for (table, column), found in sorted(groups.items()):
            if column.startswith(ASIDE_PREFIX):  # a removed field's column kept aside
                sql = [f"DROP INDEX {self.q(index.name)}" for index in found]
                old = ", ".join(index.name for index in found)
                subject = f"index of column {column} of table {table}"
                self.changes.append(_change(subject, old, None, sql))
                continue
            wanted = reference_index(table, column)
            create = (
                f"CREATE INDEX {self.q(wanted)} ON {self.q(table)} "
                f"({self.q(TENANT)}, {self.q(column)})"
            )
            self.indexes_of(f"index of field {column!r} of table {table}", found, wanted, create)

    def search_keys(self) -> None:
        groups: dict[str, list[Index]] = {}
        for index in self.indexes:
            if index.unique and index.columns == (KEY_COLUMN,):
                groups.setdefault(index.table, []).append(index)
        for table, found in sorted(groups.items()):
            create = sqlite_key_index_sql(self.dialect.sql, table)
            subject = f"index of {KEY_COLUMN} of table {table}"
            self.indexes_of(subject, found, key_index(table), create)

    def trigrams(self) -> None:
        groups: dict[tuple[str, str], list[Index]] = {}
        for index in self.indexes:
            column = index.columns[0] if len(index.columns) == 1 else None
            if column and column.startswith(SHADOW_PREFIX) and "gin_trgm_ops" in index.definition:
                groups.setdefault((index.table, column), []).append(index)
        for (table, column), found in sorted(groups.items()):
            wanted = trigram_index(table, column[len(SHADOW_PREFIX) :])
            self.indexes_of(f"text index of {column} of table {table}", found, wanted, None)

    def primary_keys(self) -> None:
        for index in self.indexes:
            wanted = primary_key(index.table)
            if index.primary and _entity_like(index.table) and index.name != wanted:
                sql = (
                    f"ALTER TABLE {self.q(index.table)} RENAME CONSTRAINT {self.q(index.name)} "
                    f"TO {self.q(wanted)}"
                )
                subject = f"primary key of table {index.table}"
                self.changes.append(_change(subject, index.name, wanted, [sql]))


async def name_changes(tx: Tx, dialect: EvolutionDialect) -> list[Change]:
    """``name-migrated`` changes (additive) for every generated object of the database that
    is not named as the host names it now (module docstring); none the second time."""
    renamer = _Renamer(dialect, await read_indexes(tx, dialect.sql))
    renamer.references()
    if dialect.sql.embedded:
        renamer.search_keys()
        for fts in await read_full_text(tx, dialect.sql):
            field = fts.column[len(SHADOW_PREFIX) :]
            wanted = fts_table(fts.table, field)
            if fts.name == wanted:
                continue
            sql = [
                *sqlite_trigger_drops(dialect.sql, fts.name),
                f"ALTER TABLE {dialect.quote(fts.name)} RENAME TO {dialect.quote(wanted)}",
                *sqlite_trigger_sql(dialect.sql, fts.table, field),
            ]
            subject = f"text index of {fts.column} of table {fts.table}"
            renamer.changes.append(_change(subject, fts.name, wanted, sql))
    else:
        renamer.trigrams()
        renamer.primary_keys()
    return renamer.changes
