"""Applying a schema evolution plan, at startup and from ``python -m host migrate``.

Everything runs in the one transaction of :meth:`Storage.prepare`, under its lock (``BEGIN
IMMEDIATE`` on SQLite, an advisory lock on PostgreSQL): the plan is computed under the lock,
so of several processes starting at once the first applies it and the others find the graph
recorded and do nothing. A plan with a change that is not allowed raises
:class:`~host.storage.plan.SchemaEvolutionError` before any statement runs, and the rollback
undoes the tables the same transaction would have created: nothing is altered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone

import sqlalchemy as sa

from host.graph.model import Graph
from host.storage import sql
from host.storage.convert import Unconvertible, convert_value
from host.storage.database import Storage, Tx
from host.storage.dialect import EvolutionDialect
from host.storage.evolution import SCAN_PAGE, build_plan, page_values
from host.storage.history import create_history, record_graph
from host.storage.plan import (
    Backfill,
    Convert,
    Operation,
    Plan,
    SchemaEvolutionError,
    Statement,
    table_clause,
)
from host.storage.schema import Schema
from host.storage.tx import Statement as SqlStatement

__all__ = ["Evolution", "apply", "plan_only", "startup_evolution"]

logger = logging.getLogger("tessera.storage.evolution")

Clock = Callable[[], datetime]


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


async def _run(tx: Tx, operation: Operation, dialect: str) -> None:
    if isinstance(operation, Statement):
        await tx.execute(sa.text(operation.sql))
    elif isinstance(operation, Backfill):
        table = table_clause(operation.table, operation.column, operation.field)
        update = sa.update(table).values({operation.column: operation.value})
        if operation.only_null:
            update = update.where(table.c[operation.column].is_(None))
        await tx.execute(update)
    else:
        await _convert(tx, operation, dialect)


async def _convert(tx: Tx, op: Convert, dialect: str) -> None:
    # The pages are keyed on (tenant_id, id) and read the moved-aside column, so writing the
    # new column as they go cannot disturb them. The converted values of a page are written
    # as one batch of keyed UPDATEs (one round trip to SQLite's thread per page).
    update = sql.set_by_key(dialect, op.table, op.column)
    pending: list[SqlStatement] = []
    async for tenant, row_id, value in page_values(tx, op.table, op.source):
        try:
            converted = convert_value(op.old_type, op.old_currency, value, op.field)
        except Unconvertible:
            continue  # allowed (the plan checked): left null, kept in the aside column
        pending.append((update, (converted, tenant, row_id)))
        if len(pending) >= SCAN_PAGE:
            await tx.batch(pending)
            pending = []
    if pending:
        await tx.batch(pending)


@dataclass(kw_only=True, slots=True)
class Evolution:
    """One evolution step for :meth:`Storage.prepare`: plan under the lock, refuse what is
    not allowed, apply the rest and record the graph. The plan stays on :attr:`plan`."""

    graph: Graph
    schema: Schema
    dialect: str
    allow: frozenset[str] = frozenset()
    clock: Clock = _utcnow
    plan: Plan | None = field(default=None)

    async def __call__(self, tx: Tx) -> None:
        dialect = EvolutionDialect(self.dialect)
        plan = await build_plan(tx, dialect, self.graph, self.schema, self.clock())
        self.plan = plan
        if plan.up_to_date:
            return
        blocked = plan.blocked(self.allow)
        if blocked:
            raise SchemaEvolutionError(plan, blocked)
        await create_history(tx)
        for change in plan.changes:
            for operation in change.operations:
                await _run(tx, operation, self.dialect)
            level = logging.WARNING if change.breaking else logging.INFO
            logger.log(level, "schema evolution: %s", change.line())
        await record_graph(tx, self.graph, [change.line() for change in plan.changes])


def startup_evolution(graph: Graph, schema: Schema, dialect: str) -> Evolution:
    """The evolution run at every startup: metadata and additive changes only."""
    return Evolution(graph=graph, schema=schema, dialect=dialect)


async def plan_only(storage: Storage, graph: Graph, schema: Schema) -> Plan:
    """Compute the plan without changing anything."""
    dialect = EvolutionDialect(storage.dialect)

    async def work(tx: Tx) -> Plan:
        return await build_plan(tx, dialect, graph, schema, _utcnow())

    return await storage.transaction(work)


async def apply(storage: Storage, graph: Graph, schema: Schema, allow: Iterable[str] = ()) -> Plan:
    """Apply the plan (breaking kinds only when in ``allow``); return what was applied.

    :raises SchemaEvolutionError: when a change needs a kind not allowed; nothing altered.
    """
    evolution = Evolution(
        graph=graph, schema=schema, dialect=storage.dialect, allow=frozenset(allow)
    )
    await storage.prepare(schema, evolve=evolution)
    assert evolution.plan is not None
    return evolution.plan
