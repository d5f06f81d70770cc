"""Firing one timer: claim it and run its action in one transaction.

The claim is a guarded ``UPDATE ... WHERE state = 'pending' RETURNING id`` at the start of the
action's own transaction (on PostgreSQL the timer is first picked with ``FOR UPDATE SKIP
LOCKED``, so concurrent workers take different timers): if the action commits, the timer is
``fired`` with it, exactly once; if the process dies before the commit, the transaction rolls
back and the timer is still pending. A refusal of the action (an error of the taxonomy: the row
moved on, a policy says no) rolls the action back and records the timer ``failed`` with the
refusal as its outcome, in a transaction of its own: it is not retried. A lost race
(409) leaves it pending for the next look.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from host.fieldtypes import now_db, parse_datetime
from host.graph.model import Graph
from host.runtime import ActionRuntime
from host.runtime.actor import Actor
from host.storage import Closing, Storage, TransientConflict, Tx
from host.storage.timers import CLOCK_TENANT, FAILED, FIRED, ROW_COLUMNS, TimerStatements
from host.timers.cron import CronClocks
from plugin_api.errors import ConcurrencyConflict, NotFound, TesseraError
from plugin_api.timers import CronJob

__all__ = ["VIA_PREFIX", "Firing", "FiringCounts", "TimerRow"]

logger = logging.getLogger("tessera.timers")

VIA_PREFIX = "timer:"
"""A firing's audit record names its timer in ``via``: ``{"action": "timer:<name>", ...}``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TimerRow:
    """One row of ``tessera_timers``."""

    tenant_id: str
    id: str
    timer: str
    entity: str
    subject_id: str
    action: str
    due_at: str
    state: str
    outcome: str | None
    fired_at: str | None
    created_at: str

    @classmethod
    def of(cls, values: Sequence[Any]) -> TimerRow:
        """From the columns :attr:`TimerStatements.select_list` reads."""
        return cls(**dict(zip(("tenant_id", *ROW_COLUMNS), values, strict=True)))


@dataclass(slots=True)
class FiringCounts:
    """What this process fired since it started (for metrics)."""

    fired: int = 0
    failed: int = 0
    lag_s: list[float] = field(default_factory=list)
    """Seconds between each firing's due time and its commit (the last 1,000)."""
    listener: Callable[[str, float], None] | None = None
    """Called with each settled timer's outcome and lag (the metrics)."""

    def took(self, row: TimerRow, outcome: str) -> None:
        if outcome == FIRED:
            self.fired += 1
        elif outcome == FAILED:
            self.failed += 1
        else:
            return
        due = parse_datetime(row.due_at)
        now = parse_datetime(now_db())
        if due is None or now is None:
            return
        lag = max(0.0, (now - due).total_seconds())
        self.lag_s.append(lag)
        del self.lag_s[:-1000]
        if self.listener is not None:
            self.listener(outcome, lag)


class Firing:
    """Fires due timers of one graph on one storage."""

    def __init__(self, graph: Graph, storage: Storage, runtime: ActionRuntime) -> None:
        self._graph = graph
        self.storage = storage
        self._runtime = runtime
        self.sql = TimerStatements(storage.dialect)
        self.clocks = CronClocks(graph, self.sql)
        self.counts = FiringCounts()

    async def due(self, limit: int) -> list[TimerRow]:
        """Up to ``limit`` pending timers due now, earliest first (no lock)."""
        rows = await self.storage.rows(*self.sql.due(now_db(), limit, lock=False))
        return [TimerRow.of(row) for row in rows]

    async def fire_next(self) -> str | None:
        """Pick the earliest due timer no other transaction holds (``FOR UPDATE SKIP
        LOCKED``, PostgreSQL) and fire it; ``None`` when none is due."""

        async def pick(tx: Tx) -> TimerRow | None:
            rows = await tx.rows(*self.sql.due(now_db(), 1, lock=True))
            return TimerRow.of(rows[0]) if rows else None

        outcome = await self._fire(None, pick)
        return None if outcome == "none" else outcome

    async def fire(self, row: TimerRow) -> str:
        """Fire ``row`` now if it is still pending; answer ``fired``, ``failed`` (the action
        refused; recorded), ``pending`` (a lost race: left for the next look) or ``gone``
        (not pending any more: another worker took it, or it was cancelled)."""
        return await self._fire(row, None)

    async def _fire(
        self, given: TimerRow | None, pick: Callable[[Tx], Awaitable[TimerRow | None]] | None
    ) -> str:
        row: list[TimerRow] = [] if given is None else [given]

        async def work(tx: Tx) -> Closing[str]:
            if pick is not None:
                found = await pick(tx)
                if found is None:
                    return Closing("none")
                row.append(found)
            timer = row[0]
            claimed = await tx.rows(
                *self.sql.settle(timer.tenant_id, timer.id, FIRED, None, now_db())
            )
            if not claimed:
                return Closing("gone")
            await self._run(tx, timer)
            return Closing(FIRED)

        try:
            outcome = await self.storage.unit_of_work(work)
        except (ConcurrencyConflict, TransientConflict):
            return "pending"
        except TesseraError as refusal:
            outcome = await self._refused(row[0], refusal)
        if row:
            self.counts.took(row[0], outcome)
            if outcome in (FIRED, FAILED):
                logger.info(
                    "timer %s on %s %s: %s",
                    row[0].timer,
                    row[0].entity,
                    row[0].subject_id,
                    outcome,
                    extra={"event": "timer_" + outcome, "timer": row[0].timer},
                )
        return outcome

    async def _run(self, tx: Tx, row: TimerRow) -> None:
        timer = self._graph.timers.by_name.get(row.timer)
        if timer is None:
            raise NotFound(f"No timer {row.timer!r} in the running graph")
        subject: str | None = row.subject_id
        inputs: dict[str, Any] = {}
        if isinstance(timer.definition, CronJob):
            if row.tenant_id == CLOCK_TENANT:  # a job's clock: arm the occurrence in each tenant
                await self.clocks.occurred(tx, timer, row.due_at)
                return
            subject, inputs = None, dict(timer.definition.inputs)
        actor = Actor(
            tenant_id=row.tenant_id,
            actor_id=timer.actor_id,
            roles=timer.roles,
            via=((VIA_PREFIX + timer.name, timer.plugin.name),),
        )
        await self._runtime.run_nested(
            tx, timer.action, actor, subject, inputs, depth=0, rehearsal=False
        )

    async def _refused(self, row: TimerRow, refusal: TesseraError) -> str:
        outcome = f"{refusal.kind}: {refusal}"

        async def record(tx: Tx) -> Closing[str]:
            settled = await tx.rows(
                *self.sql.settle(row.tenant_id, row.id, FAILED, outcome, now_db())
            )
            return Closing(FAILED if settled else "gone")

        return await self.storage.unit_of_work(record)
