"""The delivery table's statements: take due deliveries under a lease, mark them done,
failed or dead, and the operators' views (counts, lists, retry).

A delivery is *due* for a subscriber when it is ``pending`` or ``failed``, its ``next_at``
has passed, nobody holds an unexpired lease on it, and no earlier delivery (lower ``seq``) of
the same subject to the same subscriber is still ``pending`` or ``failed``: per subject, a
subscriber gets events in commit order. A ``dead`` delivery no longer holds later ones back.
On PostgreSQL the due rows are taken ``FOR UPDATE SKIP LOCKED``; on SQLite the single writer
serialises the taking. Every statement on given rows names their tenant, and the locking one
stays within one tenant (a database distributed by ``tenant_id`` routes it to one shard).
Times are Unix milliseconds of the taking host's clock.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from host.storage.database import Storage
from host.storage.outbox import PENDING, now_ms
from host.storage.tx import Closing, Statement, Tx
from plugin_api.events import Event

__all__ = ["DEAD", "FAILED", "Delivery", "DeliveryStore", "SubscriberStats"]

FAILED: Final = "failed"
DEAD: Final = "dead"
_WAITING: Final = f"('{PENDING}', '{FAILED}')"
_ERROR_LENGTH: Final = 2000


@dataclass(frozen=True, kw_only=True, slots=True)
class Delivery:
    """One event taken for one subscriber."""

    seq: int
    subscriber: str
    attempts: int
    """Failed attempts so far (0 on the first delivery)."""
    event: Event


@dataclass(frozen=True, kw_only=True, slots=True)
class SubscriberStats:
    """What one subscriber has waiting."""

    subscriber: str
    pending: int
    failed: int
    dead: int
    oldest_ms: int | None
    """``created_at`` of its oldest pending or failed delivery (the lag's start)."""


class DeliveryStore:
    """Statements on ``tessera_deliveries`` (joined with the audit table for the events)."""

    def __init__(self, storage: Storage, table: str, audit: str) -> None:
        self.storage = storage
        self.dialect = storage.dialect
        self._t = self.dialect.quote(table)
        self._audit = self.dialect.quote(audit)

    def _marks(self, count: int, start: int = 0) -> list[str]:
        return self.dialect.placeholders(start + count)[start:]

    # -- taking --------------------------------------------------------------------------

    def _due(self, names: int, *, tenant: bool = False, lock: bool = False) -> str:
        """The due deliveries (their ``seq``), of one tenant when ``tenant`` (its id the
        first parameter); only such a statement may lock (``lock``): on a database
        distributed by tenant, ``FOR UPDATE`` works within one shard."""
        where, limit = self._waiting(names, first=1 if tenant else 0)
        within = f"d.tenant_id = {self._marks(1)[0]} AND " if tenant else ""
        locking = self.dialect.lock_rows("d") if lock else ""
        return (
            f"SELECT d.seq FROM {self._t} d WHERE {within}{where} "
            f"ORDER BY d.seq LIMIT {limit}{locking}"
        )

    def _due_tenants(self, names: int) -> str:
        """The tenants with due deliveries, the longest waiting first (no lock)."""
        where, limit = self._waiting(names, first=0)
        return (
            f"SELECT d.tenant_id FROM {self._t} d WHERE {where} "
            f"GROUP BY d.tenant_id ORDER BY MIN(d.seq) LIMIT {limit}"
        )

    def _waiting(self, names: int, *, first: int) -> tuple[str, str]:
        """The condition of a due delivery (parameters: ``names`` subscribers, now, now,
        after ``first`` others) and the mark of the limit that follows them."""
        m = self._marks(first + names + 3)
        subscribers = ", ".join(m[first : first + names])
        now1, now2 = m[first + names], m[first + names + 1]
        condition = (
            f"d.subscriber IN ({subscribers}) AND d.state IN {_WAITING} AND d.next_at <= {now1} "
            f"AND (d.lease_until IS NULL OR d.lease_until < {now2}) "
            f"AND NOT EXISTS (SELECT 1 FROM {self._t} e WHERE e.tenant_id = d.tenant_id "
            "AND e.subscriber = d.subscriber AND e.entity = d.entity "
            f"AND e.subject_id = d.subject_id AND e.seq < d.seq AND e.state IN {_WAITING})"
        )
        return condition, m[-1]

    async def any_due(self, subscribers: Sequence[str]) -> bool:
        """Whether some delivery is due (a read outside any transaction: cheap when idle)."""
        now = now_ms()
        rows = await self.storage.rows(self._due(len(subscribers)), (*subscribers, now, now, 1))
        return bool(rows)

    async def take(
        self, subscribers: Sequence[str], limit: int, owner: str, lease_ms: int
    ) -> list[Delivery]:
        """Lease up to ``limit`` due deliveries to ``owner`` for ``lease_ms``; return them.
        The tenants with due deliveries are read first; each one's are then taken in a
        transaction of their own, every statement within that tenant."""
        now = now_ms()
        tenants = await self.storage.rows(
            self._due_tenants(len(subscribers)), (*subscribers, now, now, limit)
        )
        taken: list[Delivery] = []
        for (tenant,) in tenants:
            if len(taken) >= limit:
                break
            taken += await self._take_within(
                str(tenant), subscribers, limit - len(taken), owner, lease_ms
            )
        return taken

    async def _take_within(
        self, tenant: str, subscribers: Sequence[str], limit: int, owner: str, lease_ms: int
    ) -> list[Delivery]:
        async def work(tx: Tx) -> Closing[list[Delivery]]:
            now = now_ms()
            due = self._due(len(subscribers), tenant=True, lock=True)
            rows = await tx.rows(due, (tenant, *subscribers, now, now, limit))
            seqs = [row[0] for row in rows]
            if not seqs:
                return Closing([])
            m = self._marks(3 + len(seqs))
            await tx.rows(
                f"UPDATE {self._t} SET lease_owner = {m[0]}, lease_until = {m[1]} "
                f"WHERE tenant_id = {m[2]} AND seq IN ({', '.join(m[3:])})",
                (owner, now + lease_ms, tenant, *seqs),
            )
            rows = await tx.rows(self._events(len(seqs)), (tenant, *seqs))
            return Closing([_delivery(row) for row in rows])

        return await self.storage.unit_of_work(work)

    def _events(self, count: int) -> str:
        """The deliveries of one tenant (its id, then ``count`` seqs) with their events."""
        m = self._marks(1 + count)
        return (
            "SELECT d.seq, d.subscriber, d.attempts, a.id, a.tenant_id, a.actor_id, "
            "a.action, a.entity, a.subject_id, a.outputs, a.graph_hash, a.created_at "
            f"FROM {self._t} d JOIN {self._audit} a "
            "ON a.tenant_id = d.tenant_id AND a.id = d.event_id "
            f"WHERE d.tenant_id = {m[0]} AND d.seq IN ({', '.join(m[1:])}) ORDER BY d.seq"
        )

    def _listing(self, where: str, limit: str) -> str:
        return (
            "SELECT d.seq, d.event_id, d.subscriber, d.state, d.attempts, d.next_at, "
            "d.created_at, a.action, d.subject_id, d.last_error "
            f"FROM {self._t} d LEFT JOIN {self._audit} a "
            "ON a.tenant_id = d.tenant_id AND a.id = d.event_id "
            f"WHERE {where} ORDER BY d.seq LIMIT {limit}"
        )

    def statements(self) -> dict[str, str]:
        """The statements that lock rows or join two tables, by what they do (for the
        distributed lint, :func:`host.storage.tenantkeys.statement_problems`)."""
        return {
            "take: lock due deliveries": self._due(1, tenant=True, lock=True),
            "take: read their events": self._events(1),
            "events list": self._listing("d.state = 'dead'", "1"),
        }

    # -- outcomes ------------------------------------------------------------------------

    def done(self, delivery: Delivery, owner: str) -> Statement:
        """Delete the delivery if ``owner`` still holds it (returns its seq, else no row)."""
        m = self._marks(3)
        return (
            f"DELETE FROM {self._t} WHERE tenant_id = {m[0]} AND seq = {m[1]} "
            f"AND lease_owner = {m[2]} RETURNING seq",
            (delivery.event.tenant_id, delivery.seq, owner),
        )

    async def finish(self, statement: Statement) -> bool:
        """Run one guarded statement on its own; whether the lease was still ours."""

        async def work(tx: Tx) -> Closing[bool]:
            return Closing(bool(await tx.rows(*statement)))

        return await self.storage.unit_of_work(work)

    async def finish_all(self, deliveries: Sequence[Delivery], owner: str) -> set[int]:
        """Delete the rows of ``deliveries`` still leased to ``owner``; the seqs deleted.
        One statement per tenant, in one transaction."""
        by_tenant: dict[str, list[int]] = {}
        for delivery in deliveries:
            by_tenant.setdefault(delivery.event.tenant_id, []).append(delivery.seq)
        statements = []
        for tenant, seqs in by_tenant.items():
            m = self._marks(2 + len(seqs))
            statements.append(
                (
                    f"DELETE FROM {self._t} WHERE tenant_id = {m[0]} AND lease_owner = {m[1]} "
                    f"AND seq IN ({', '.join(m[2:])}) RETURNING seq",
                    (tenant, owner, *seqs),
                )
            )

        async def work(tx: Tx) -> Closing[set[int]]:
            deleted: set[int] = set()
            for statement in statements:
                deleted.update(int(row[0]) for row in await tx.rows(*statement))
            return Closing(deleted)

        return await self.storage.unit_of_work(work)

    async def fail(
        self, delivery: Delivery, owner: str, error: str, *, dead: bool, retry_at: int
    ) -> bool:
        """Count a failed attempt: ``dead``, or ``failed`` until ``retry_at``; whether the
        lease was still ours."""
        m = self._marks(6)
        statement = (
            f"UPDATE {self._t} SET state = {m[0]}, attempts = attempts + 1, next_at = {m[1]}, "
            f"lease_owner = NULL, lease_until = NULL, last_error = {m[2]} "
            f"WHERE tenant_id = {m[3]} AND seq = {m[4]} AND lease_owner = {m[5]} RETURNING seq",
            (
                DEAD if dead else FAILED,
                retry_at,
                error[:_ERROR_LENGTH],
                delivery.event.tenant_id,
                delivery.seq,
                owner,
            ),
        )
        return await self.finish(statement)

    # -- the operators' view -------------------------------------------------------------

    async def stats(self) -> list[SubscriberStats]:
        """Per subscriber: pending, failed and dead counts and the oldest waiting delivery."""
        rows = await self.storage.rows(
            f"SELECT subscriber, state, COUNT(*), MIN(created_at) FROM {self._t} "
            "GROUP BY subscriber, state ORDER BY subscriber"
        )
        found: dict[str, dict[str, Any]] = {}
        for subscriber, state, count, oldest in rows:
            entry = found.setdefault(subscriber, {PENDING: 0, FAILED: 0, DEAD: 0, "oldest": None})
            entry[state] = int(count)
            if state != DEAD and oldest is not None:
                previous = entry["oldest"]
                entry["oldest"] = int(oldest) if previous is None else min(previous, int(oldest))
        return [
            SubscriberStats(
                subscriber=name,
                pending=e[PENDING],
                failed=e[FAILED],
                dead=e[DEAD],
                oldest_ms=e["oldest"],
            )
            for name, e in found.items()
        ]

    async def listing(
        self, states: Sequence[str], subscriber: str | None, limit: int
    ) -> Sequence[Sequence[Any]]:
        """(seq, event id, subscriber, state, attempts, next_at, created_at, action,
        subject id, last error) of deliveries in ``states``, oldest first."""
        m = self._marks(len(states) + 2)
        where = f"d.state IN ({', '.join(m[: len(states)])})"
        args: list[Any] = list(states)
        if subscriber is not None:
            where += f" AND d.subscriber = {m[len(states)]}"
            args.append(subscriber)
        args.append(limit)
        return await self.storage.rows(self._listing(where, m[len(args) - 1]), args)

    async def retry(self, event_id: str | None, subscriber: str | None) -> int:
        """Make dead deliveries (of one event, or all; of one subscriber, or all) pending
        again with a fresh count of attempts; how many."""
        args: list[Any] = [now_ms()]
        where = f"state = '{DEAD}'"
        for column, value in (("event_id", event_id), ("subscriber", subscriber)):
            if value is not None:
                args.append(value)
                where += f" AND {column} = {self._marks(1, len(args) - 1)[0]}"
        statement = (
            f"UPDATE {self._t} SET state = '{PENDING}', attempts = 0, "
            f"next_at = {self._marks(1)[0]}, last_error = NULL, lease_owner = NULL, "
            f"lease_until = NULL WHERE {where} RETURNING seq",
            args,
        )

        async def work(tx: Tx) -> Closing[int]:
            return Closing(len(await tx.rows(*statement)))

        return await self.storage.unit_of_work(work)

    async def discard(self, subscriber: str) -> int:
        """Delete every delivery kept for ``subscriber`` (one that is no longer installed)."""

        async def work(tx: Tx) -> Closing[int]:
            m = self._marks(1)
            rows = await tx.rows(
                f"DELETE FROM {self._t} WHERE subscriber = {m[0]} RETURNING seq", (subscriber,)
            )
            return Closing(len(rows))

        return await self.storage.unit_of_work(work)


def _delivery(row: Sequence[Any]) -> Delivery:
    seq, subscriber, attempts, *event = row
    outputs = event[6]
    return Delivery(
        seq=int(seq),
        subscriber=str(subscriber),
        attempts=int(attempts),
        event=Event(
            id=event[0],
            tenant_id=event[1],
            actor_id=event[2],
            action=event[3],
            entity=event[4],
            subject_id=event[5],
            outputs=json.loads(outputs) if isinstance(outputs, str) else dict(outputs),
            graph_hash=event[7],
            occurred_at=event[8],
        ),
    )
