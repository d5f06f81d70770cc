"""Cron jobs' clocks (plugin API 1.12; docs/timers.md, "Cron jobs").

A job's next occurrence is one pending row of ``tessera_timers`` under the database-wide
:data:`~host.storage.timers.CLOCK_TENANT`, keyed by the occurrence. Firing it (claimed as any
timer, in one transaction) arms the occurrence in every tenant that has written anything, one
pending row each, keyed by the occurrence too (so each tenant gets it at most once), and arms
the job's next occurrence after now. Those rows then fire as any timer: the job's create
action, run by its system actor with its inputs.

Every timer loop keeps each job's clock armed (:meth:`CronClocks.keep_armed`, at its start and
every :data:`~host.timers.scheduler.CLOCKS_EVERY_S`): a job without a pending clock row that
matches its schedule (a new job, a schedule changed by an upgrade, a clock that failed) gets
the next occurrence after now. Two loops arming at once arm the same occurrence, which the
table's unique key keeps once.
"""

from __future__ import annotations

from collections.abc import Sequence

from host.fieldtypes import now_db
from host.graph.cron import next_occurrence, occurs_at
from host.graph.model import Graph
from host.graph.timerdefs import CompiledTimer
from host.storage import Closing, Storage, Tx
from host.storage.schema import AUDIT_TABLE
from host.storage.timers import (
    ARM_BATCH,
    CANCELLED,
    CLOCK_TENANT,
    CRON_SUBJECT,
    ROW_COLUMNS,
    TimerStatements,
)
from host.storage.tx import Statement
from host.systemfields import new_ulid
from plugin_api.timers import CronJob

__all__ = ["CronClocks"]

_ID_AT = ("tenant_id", *ROW_COLUMNS).index("id")
_DUE_AT = ("tenant_id", *ROW_COLUMNS).index("due_at")


def _schedule(job: CompiledTimer) -> str:
    definition = job.definition
    assert isinstance(definition, CronJob)
    return definition.schedule


class CronClocks:
    """The clocks of one graph's cron jobs."""

    def __init__(self, graph: Graph, sql: TimerStatements) -> None:
        self.jobs = graph.timers.cron
        self.sql = sql

    @staticmethod
    def _row(tenant: str, job: CompiledTimer, occurrence: str, now: str) -> tuple[str, ...]:
        """The arguments of :meth:`TimerStatements.arm` of ``occurrence`` in ``tenant``."""
        return (
            tenant, new_ulid(), job.name, job.entity, CRON_SUBJECT, job.action, occurrence,
            occurrence, now,
        )  # fmt: skip

    def _arm(self, tenant: str, job: CompiledTimer, occurrence: str, now: str) -> Statement:
        return self.sql.arm(*self._row(tenant, job, occurrence, now))

    async def keep_armed(self, storage: Storage) -> int:
        """Arm the next occurrence of each job whose clock is not armed (cancelling a
        pending clock row its schedule no longer has); answer how many were armed. A job
        whose clock is armed costs one read, no write transaction (SQLite's writer is not
        taken every :data:`~host.timers.scheduler.CLOCKS_EVERY_S` for nothing)."""
        armed = 0
        for job in self.jobs:
            pending = await storage.rows(*self.sql.pending_of(CLOCK_TENANT, job.name))
            if pending and all(occurs_at(_schedule(job), row[_DUE_AT]) for row in pending):
                continue

            async def keep(tx: Tx, job: CompiledTimer = job) -> Closing[int]:
                return await self._keep(tx, job)

            armed += await storage.unit_of_work(keep)
        return armed

    async def _keep(self, tx: Tx, job: CompiledTimer) -> Closing[int]:
        schedule, now = _schedule(job), now_db()
        armed = False
        for row in await tx.rows(*self.sql.pending_of(CLOCK_TENANT, job.name)):
            if occurs_at(schedule, row[_DUE_AT]):
                armed = True
            else:
                stale = self.sql.settle(
                    CLOCK_TENANT, row[_ID_AT], CANCELLED, "schedule changed", now
                )
                await tx.rows(*stale)
        if armed:
            return Closing(0)
        await tx.rows(*self._arm(CLOCK_TENANT, job, next_occurrence(schedule, now), now))
        return Closing(1)

    async def occurred(self, tx: Tx, job: CompiledTimer, occurrence: str) -> Sequence[str]:
        """In the transaction that claimed a clock row of ``occurrence``: arm it in every
        known tenant (unless the job's schedule no longer has it) and arm the next one.
        Answer the tenants armed."""
        schedule, now = _schedule(job), now_db()
        tenants: list[str] = []
        if occurs_at(schedule, occurrence):
            tenants = [row[0] for row in await tx.rows(*self.sql.known_tenants(AUDIT_TABLE))]
            rows = [self._row(tenant, job, occurrence, now) for tenant in tenants]
            for start in range(0, len(rows), ARM_BATCH):
                await tx.rows(*self.sql.arm_many(rows[start : start + ARM_BATCH]))
        await tx.rows(*self._arm(CLOCK_TENANT, job, next_occurrence(schedule, now), now))
        return tenants
