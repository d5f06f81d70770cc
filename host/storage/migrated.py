"""Migrated rows keep their history: a row whose stored value a migration rewrites (a type
conversion, a removed enum option or workflow state mapped) gets a new ``_version`` and
``updated_at`` and an audit record naming the migration (docs/schema-evolution.md, "Migrated
rows").

The record's ``action`` is ``migration:<plugin>@<version>`` (the plugin that owns the entity,
its distribution's version when it has one), its actor ``system`` with no role, its
``changes`` the field's value before and after in read shapes with ``_version``'s pair:
exactly what a patch would have written, so the row's history and ``asOf`` read through it.

In bulk: the rows are read in pages keyed on (tenant_id, id); each page is one multi-row
``INSERT`` of audit records and one ``UPDATE`` of versions (PostgreSQL: from arrays; SQLite:
a batch in one round trip). A map is versioned before its ``UPDATE`` (the rows still hold
the old values); a conversion after it (the moved-aside column holds the old values).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from host.fieldtypes import now_db, render
from host.graph.model import CompiledEntity, Graph
from host.storage.dialects import Dialect
from host.storage.plan import Convert, MapValues
from host.storage.schema import Schema
from host.storage.store import AuditRecord, audit_values
from host.storage.tx import Tx
from host.systemfields import new_ulid

__all__ = ["MigratedRows", "migration_action"]

PAGE: Final = 500
SYSTEM_ACTOR: Final = "system"

Before = Callable[[Any], Any]


def migration_action(entity: CompiledEntity) -> str:
    """``migration:<plugin>@<version>`` (``migration:<plugin>`` without a version)."""
    plugin = entity.plugin
    return f"migration:{plugin.name}" + (f"@{plugin.version}" if plugin.version else "")


class MigratedRows:
    """Versions and audits the rows one evolution's operations rewrite, in its transaction."""

    def __init__(self, tx: Tx, dialect: Dialect, graph: Graph, schema: Schema) -> None:
        self._tx = tx
        self._dialect = dialect
        self._graph = graph
        self._audit = schema.audit.name
        self._columns = schema.audit_columns
        self._tables = {entity.table_name: entity for entity in graph.entities.values()}
        self._now = now_db()
        self.rows = 0
        """Rows versioned so far."""

    async def mapped(self, op: MapValues) -> None:
        """Before ``op`` runs: the rows holding a mapped value."""
        mapping = dict(op.mapping)
        marks = ", ".join(self._dialect.placeholders(len(mapping)))
        q = self._dialect.quote
        after = {old: render(op.field.type, new, op.field.currency) for old, new in mapping.items()}
        await self._each_page(
            op.table,
            op.column,
            f"{q(op.column)}, {q(op.column)}",
            f"{q(op.column)} IN ({marks})",
            tuple(mapping),
            lambda old: old,
            lambda old, _new: after[old],
        )

    async def converted(self, op: Convert) -> None:
        """After ``op`` (and the rest of its change) ran: the rows that held a value (kept in
        the moved-aside column)."""
        q = self._dialect.quote
        field, old_type, old_currency = op.field, op.old_type, op.old_currency
        await self._each_page(
            op.table,
            op.column,
            f"{q(op.source)}, {q(op.column)}",
            f"{q(op.source)} IS NOT NULL",
            (),
            lambda old: render(old_type, old, old_currency),
            lambda _old, new: render(field.type, new, field.currency),
        )

    async def _each_page(
        self,
        table: str,
        field: str,
        values: str,
        where: str,
        args: tuple[Any, ...],
        before: Before,
        after: Callable[[Any, Any], Any],
    ) -> None:
        entity = self._tables[table]
        q = self._dialect.quote
        last: tuple[str, str] | None = None
        while True:
            marks = self._dialect.placeholders(len(args) + 3)
            keyed = ""
            page_args: tuple[Any, ...] = args
            if last is not None:
                keyed = f" AND (tenant_id > {marks[len(args)]} OR (tenant_id = "
                keyed += f"{marks[len(args) + 1]} AND id > {marks[len(args) + 2]}))"
                page_args = (*args, last[0], last[0], last[1])
            rows = await self._tx.rows(
                f"SELECT tenant_id, id, _version, {values} FROM {q(table)} "
                f"WHERE {where}{keyed} ORDER BY tenant_id, id LIMIT {PAGE}",
                page_args,
            )
            if rows:
                await self._write(entity, table, field, rows, before, after)
                last = (rows[-1][0], rows[-1][1])
            if len(rows) < PAGE:
                return

    async def _write(
        self,
        entity: CompiledEntity,
        table: str,
        field: str,
        rows: Sequence[Sequence[Any]],
        before: Before,
        after: Callable[[Any, Any], Any],
    ) -> None:
        action, now, graph_hash = migration_action(entity), self._now, self._graph.hash
        versions: list[tuple[str, str, str]] = []
        records: list[Any] = []
        for tenant, row_id, old_version, old, new in rows:
            version = new_ulid()
            versions.append((version, tenant, row_id))
            value = after(old, new)
            record = AuditRecord(
                event_id=new_ulid(),
                tenant_id=tenant,
                actor_id=SYSTEM_ACTOR,
                roles=frozenset(),
                action=action,
                entity=entity.fqn,
                subject_id=row_id,
                inputs={},
                outputs={field: value, "_version": version},
                at=now,
                version=version,
                changes={field: [before(old), value], "_version": [old_version, version]},
            )
            records.extend(audit_values(record, graph_hash))
        await self._tx.rows(self._audit_insert(len(rows)), records)
        await self._versions(table, versions)
        self.rows += len(rows)

    def _audit_insert(self, count: int) -> str:
        q, width = self._dialect.quote, len(self._columns)
        marks = self._dialect.placeholders(count * width)
        position = self._dialect.transaction_position
        rows = ", ".join(
            "(" + ", ".join(marks[i * width : (i + 1) * width]) + f", {position})"
            for i in range(count)
        )
        names = ", ".join(q(name) for name in (*self._columns, "xact"))
        return f"INSERT INTO {q(self._audit)} ({names}) VALUES {rows}"

    async def _versions(self, table: str, versions: list[tuple[str, str, str]]) -> None:
        q, now = self._dialect.quote, self._now
        if self._dialect.embedded:
            update = (
                f"UPDATE {q(table)} SET _version = ?, updated_at = ? WHERE tenant_id = ? AND id = ?"
            )
            await self._tx.batch([(update, (v, now, t, i)) for v, t, i in versions])
            return
        await self._tx.rows(
            f"UPDATE {q(table)} SET _version = page.version, updated_at = $1 FROM "
            "unnest($2::text[], $3::text[], $4::text[]) AS page(version, tenant_id, id) "
            f"WHERE {q(table)}.tenant_id = page.tenant_id AND {q(table)}.id = page.id",
            (now, *map(list, zip(*versions, strict=True))),
        )
