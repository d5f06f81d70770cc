"""Applying a schema evolution plan, at startup and from ``python -m host migrate``.

Everything runs in the one transaction of :meth:`Storage.prepare`, under its lock (``BEGIN
IMMEDIATE`` on SQLite, an advisory lock on PostgreSQL): the plan is computed under the lock,
so of several processes starting at once the first applies it and the others find the graph
recorded and do nothing. A plan with a change that is not allowed raises
:class:`~host.storage.plan.SchemaEvolutionError` before any statement runs, and the rollback
undoes the tables the same transaction would have created: nothing is altered.

The whole plan (DDL, conversions, backfills, the graph record) is one transaction on both
backends (SQLite and PostgreSQL both have transactional DDL): an error, or an interruption
(:class:`~host.storage.progress.Interrupted`, raised at the next page of rows after SIGINT or
SIGTERM), rolls all of it back.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlalchemy as sa

from host.graph.model import Graph
from host.query.folding import search_fold
from host.storage import sql
from host.storage.auditchain import create_chain_tables
from host.storage.auditlog import add_audit_columns
from host.storage.convert import Unconvertible
from host.storage.database import Storage, Tx
from host.storage.dialect import EvolutionDialect
from host.storage.dialects import Dialect
from host.storage.evolution import build_plan, map_statement, page_values
from host.storage.history import create_history, record_graph
from host.storage.migrated import MigratedRows
from host.storage.plan import (
    Backfill,
    Convert,
    MapValues,
    NeedsTrigram,
    Operation,
    Plan,
    Refold,
    SchemaEvolutionError,
    Statement,
    table_clause,
)
from host.storage.progress import NO_PROGRESS, Progress
from host.storage.schema import Schema
from host.storage.search import SearchUnavailable, refold_page
from host.storage.tx import Statement as SqlStatement

__all__ = ["Evolution", "apply", "plan_only", "startup_check", "startup_evolution"]

logger = logging.getLogger("tessera.storage.evolution")


async def _run(tx: Tx, operation: Operation, dialect: Dialect, progress: Progress) -> None:
    if isinstance(operation, Statement):
        await tx.execute(sa.text(operation.sql))
    elif isinstance(operation, Backfill):
        table = table_clause(operation.table, operation.column, operation.field)
        update = sa.update(table).values({operation.column: operation.value})
        if operation.only_null:
            update = update.where(table.c[operation.column].is_(None))
        await tx.execute(update)
    elif isinstance(operation, MapValues):
        progress.start(f"mapping {operation.table}.{operation.column}", operation.rows)
        await tx.execute(map_statement(operation))
        progress.advance(operation.rows)
        progress.finish()
    elif isinstance(operation, Refold):
        await _refold(tx, operation, dialect, progress)
    elif isinstance(operation, NeedsTrigram):
        await _trigram(tx)
    else:
        await _convert(tx, operation, dialect, progress)


async def _refold(tx: Tx, op: Refold, dialect: Dialect, progress: Progress) -> None:
    # As :func:`_convert`: pages keyed on (tenant_id, id) read the field, the shadow is
    # written as they go, one batch per page.
    update = sql.set_by_key(dialect, op.table, op.shadow)
    progress.start(f"folding {op.table}.{op.column} for search", op.rows)
    async for page in page_values(tx, op.table, op.column):
        folded = [
            (search_fold(value), tenant, row_id)
            for tenant, row_id, value in page
            if isinstance(value, str)
        ]
        if folded and dialect.embedded:
            await tx.batch([(update, values) for values in folded])
        elif folded:  # PostgreSQL: one statement per page (arrays), not one per row
            await tx.rows(
                refold_page(dialect, op.table, op.shadow),
                list(map(list, zip(*folded, strict=True))),
            )
        progress.advance(len(page))
    progress.finish()


async def _trigram(tx: Tx) -> None:
    present = await tx.fetch_val(sa.text("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'"))
    if present:
        return
    allowed = await tx.fetch_val(
        sa.text(
            "SELECT rolsuper OR has_database_privilege(current_database(), 'CREATE') "
            "FROM pg_roles WHERE rolname = current_user"
        )
    )
    if not allowed:
        name = await tx.fetch_val(sa.text("SELECT current_database()"))
        raise SearchUnavailable(
            "the text index of list search needs the PostgreSQL extension pg_trgm, and this "
            f"role may not create it: run 'CREATE EXTENSION pg_trgm;' in database {name!r} "
            "as a superuser (or the database owner), then start again"
        )
    await tx.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))


async def _convert(tx: Tx, op: Convert, dialect: Dialect, progress: Progress) -> None:
    # The pages are keyed on (tenant_id, id) and read the moved-aside column, so writing the
    # new column as they go cannot disturb them. The converted values of a page are written
    # as one batch of keyed UPDATEs (one round trip to SQLite's thread per page).
    update = sql.set_by_key(dialect, op.table, op.column)
    progress.start(f"converting {op.table}.{op.column}", op.rows)
    async for page in page_values(tx, op.table, op.source):
        pending: list[SqlStatement] = []
        for tenant, row_id, value in page:
            try:
                converted = op.converter(value)
            except Unconvertible:
                continue  # allowed (the plan checked): default or null, kept aside
            if converted is not None:
                pending.append((update, (converted, tenant, row_id)))
        if pending:
            await tx.batch(pending)
        progress.advance(len(page))
    progress.finish()


@dataclass(kw_only=True, slots=True)
class Evolution:
    """One evolution step for :meth:`Storage.prepare`: plan under the lock, refuse what is
    not allowed, apply the rest and record the graph. The plan stays on :attr:`plan`."""

    graph: Graph
    schema: Schema
    dialect: Dialect
    allow: frozenset[str] = frozenset()
    progress: Progress = NO_PROGRESS
    dry_run: bool = False
    """Plan and decide only (``tessera check``): refuse exactly as a start would, alter
    nothing."""
    versioned: bool = True
    """Rows a conversion or a map rewrites get a new ``_version``, ``updated_at`` and an audit
    record naming the migration (:mod:`host.storage.migrated`); ``False``
    (``TESSERA_MIGRATION_VERSIONS=0``): values rewritten in place, as before 0.1's issue 30."""
    plan: Plan | None = field(default=None)

    async def __call__(self, tx: Tx) -> None:
        dialect = EvolutionDialect(self.dialect)
        if not self.dry_run:
            for name in await add_audit_columns(tx, dialect, self.schema):
                logger.info("schema evolution: audit column %s added", name)
            await create_chain_tables(tx)
        plan = await build_plan(tx, dialect, self.graph, self.schema, self.progress)
        self.plan = plan
        if plan.up_to_date and not plan.changes:
            return
        blocked = plan.blocked(self.allow)
        if blocked:
            raise SchemaEvolutionError(plan, blocked)
        if self.dry_run:
            return
        await create_history(tx)
        rows = MigratedRows(tx, self.dialect, self.graph, self.schema) if self.versioned else None
        for change in plan.changes:
            for operation in change.operations:
                if rows is not None and isinstance(operation, MapValues):
                    await rows.mapped(operation)
                await _run(tx, operation, self.dialect, self.progress)
            for operation in change.operations:
                if rows is not None and isinstance(operation, Convert):
                    await rows.converted(operation)
            level = logging.WARNING if change.breaking else logging.INFO
            logger.log(level, "schema evolution: %s", change.line())
        if rows is not None and rows.rows:
            logger.info("schema evolution: %d migrated row(s) versioned and audited", rows.rows)
        await record_graph(tx, self.graph, [change.line() for change in plan.changes])


def startup_evolution(
    graph: Graph, schema: Schema, dialect: Dialect, *, dry_run: bool = False
) -> Evolution:
    """The evolution run at every startup: metadata and additive changes only. With
    ``dry_run`` (``tessera check``) the same decision, nothing applied."""
    return Evolution(graph=graph, schema=schema, dialect=dialect, dry_run=dry_run)


async def startup_check(storage: Storage, graph: Graph, schema: Schema) -> Plan:
    """The plan a start would find, and its verdict: :class:`SchemaEvolutionError` exactly
    when a start would refuse. Reads only (the startup evolution's own code, ``dry_run``).

    :raises SchemaEvolutionError: a start would refuse; nothing was altered.
    """
    evolution = startup_evolution(graph, schema, storage.dialect, dry_run=True)
    await storage.transaction(evolution)
    assert evolution.plan is not None
    return evolution.plan


async def plan_only(storage: Storage, graph: Graph, schema: Schema) -> Plan:
    """Compute the plan without changing anything."""
    dialect = EvolutionDialect(storage.dialect)

    async def work(tx: Tx) -> Plan:
        return await build_plan(tx, dialect, graph, schema)

    return await storage.transaction(work)


async def apply(
    storage: Storage,
    graph: Graph,
    schema: Schema,
    allow: Iterable[str] = (),
    progress: Progress = NO_PROGRESS,
    *,
    versioned: bool = True,
) -> Plan:
    """Apply the plan (breaking kinds only when in ``allow``); return what was applied.

    :raises SchemaEvolutionError: when a change needs a kind not allowed, or would leave
        rows breaking their field's declared rules; nothing altered.
    :raises Interrupted: ``progress`` was interrupted; everything was rolled back.
    """
    evolution = Evolution(
        graph=graph,
        schema=schema,
        dialect=storage.dialect,
        allow=frozenset(allow),
        progress=progress,
        versioned=versioned,
    )
    await storage.prepare(schema, evolve=evolution)
    assert evolution.plan is not None
    return evolution.plan
