"""The timers table (``tessera_timers``, issue 41; docs/timers.md) and its statements.

One row per armed timer of one row: keyed by (``tenant_id``, ``id``), tenant first as every
host table, and unique on (``tenant_id``, ``timer``, ``subject_id``, ``key``): ``key`` is the
field's value for a field timer (so each value fires at most once) and the row's version at
its entry into the state for a state timer. ``state`` is ``pending``, ``fired``, ``failed``
(the action refused; ``outcome`` says why) or ``cancelled``. Times are canonical datetime
text (as every datetime column), compared as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import sqlalchemy as sa

from host.fieldtypes import DATETIME_TEXT_LENGTH, ULID_LENGTH
from host.storage.dialects import Dialect
from host.storage.tx import Statement

__all__ = [
    "ARM_BATCH",
    "CANCELLED",
    "CLOCK_TENANT",
    "CRON_SUBJECT",
    "FAILED",
    "FIRED",
    "PENDING",
    "TIMERS_TABLE",
    "TimerStatements",
    "timers_table",
]

TIMERS_TABLE: Final = "tessera_timers"
PENDING: Final = "pending"
FIRED: Final = "fired"
FAILED: Final = "failed"
CANCELLED: Final = "cancelled"
TIMERS_KEY: Final = "uq_tessera_timers_key"
ARM_BATCH: Final = 500
"""Rows per :meth:`TimerStatements.arm_many` (9 parameters each: 4,500, under SQLite's and
PostgreSQL's bounds)."""
CLOCK_TENANT: Final = ""
"""The tenant of a cron job's clock rows: one per occurrence, database-wide (no request can
name an empty tenant). Firing one arms the occurrence in every tenant, and the next one."""
CRON_SUBJECT: Final = "0" * 26
"""The ``subject_id`` of a cron job's rows (they act on no row; ``key`` is the occurrence)."""
ROW_COLUMNS: Final = (
    "id",
    "timer",
    "entity",
    "subject_id",
    "action",
    "due_at",
    "state",
    "outcome",
    "fired_at",
    "created_at",
)
"""The columns :meth:`TimerStatements.select` reads, in order (``tenant_id`` first)."""


def timers_table(metadata: sa.MetaData) -> sa.Table:
    """Define ``tessera_timers`` in ``metadata``."""
    when = sa.String(DATETIME_TEXT_LENGTH)
    return sa.Table(
        TIMERS_TABLE,
        metadata,
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("id", sa.String(ULID_LENGTH), nullable=False),
        sa.Column("timer", sa.Text, nullable=False),
        sa.Column("entity", sa.Text, nullable=False),
        sa.Column("subject_id", sa.String(ULID_LENGTH), nullable=False),
        sa.Column("action", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("due_at", when, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("outcome", sa.Text, nullable=True),
        sa.Column("fired_at", when, nullable=True),
        sa.Column("created_at", when, nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "id", name=f"{TIMERS_TABLE}_pkey"),
        sa.UniqueConstraint("tenant_id", "timer", "subject_id", "key", name=TIMERS_KEY),
        sa.Index("ix_tessera_timers_due", "state", "due_at"),
        sa.Index("ix_tessera_timers_subject", "tenant_id", "entity", "subject_id"),
    )


class TimerStatements:
    """The SQL of the timers table on one dialect."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        q = dialect.quote
        self.table = q(TIMERS_TABLE)
        self._arm = self._arming(1)
        self.select_list = ", ".join(q(c) for c in ("tenant_id", *ROW_COLUMNS))

    def arm(
        self,
        tenant: str,
        id: str,
        timer: str,
        entity: str,
        subject: str,
        action: str,
        key: str,
        due_at: str,
        now: str,
    ) -> Statement:
        """Arm a timer (again, if that one was cancelled; never if it fired)."""
        return self._arm, (tenant, id, timer, entity, subject, action, key, due_at, now)

    def _arming(self, count: int) -> str:
        q = self.dialect.quote
        columns = ("tenant_id", "id", "timer", "entity", "subject_id", "action", "key", "due_at")
        names = ", ".join(q(c) for c in (*columns, "state", "created_at"))
        marks = iter(self.dialect.placeholders(9 * count))
        rows = ", ".join(
            "(" + ", ".join((*(next(marks) for _ in range(8)), f"'{PENDING}'", next(marks))) + ")"
            for _ in range(count)
        )
        return (
            f"INSERT INTO {self.table} ({names}) VALUES {rows} "
            f"ON CONFLICT ({q('tenant_id')}, {q('timer')}, {q('subject_id')}, {q('key')}) "
            f"DO UPDATE SET {q('state')} = '{PENDING}', {q('due_at')} = excluded.{q('due_at')}, "
            f"{q('outcome')} = NULL, {q('fired_at')} = NULL "
            f"WHERE {self.table}.{q('state')} = '{CANCELLED}'"
        )

    def arm_many(self, rows: Sequence[Sequence[str]]) -> Statement:
        """:meth:`arm` of several timers in one statement, each row its nine arguments (at
        most :data:`ARM_BATCH` rows: the databases bound the parameters of a statement)."""
        assert 0 < len(rows) <= ARM_BATCH
        return self._arming(len(rows)), tuple(value for row in rows for value in row)

    def cancel(
        self, tenant: str, entity: str, subject: str, timers: Sequence[str], now: str
    ) -> Statement:
        """Cancel the pending ``timers`` of one row (``fired_at``: when it was settled)."""
        q = self.dialect.quote
        marks = self.dialect.placeholders(4 + len(timers))
        return (
            f"UPDATE {self.table} SET {q('state')} = '{CANCELLED}', {q('fired_at')} = "
            f"{marks[0]} WHERE {q('tenant_id')} = {marks[1]} AND {q('entity')} = {marks[2]} "
            f"AND {q('subject_id')} = {marks[3]} AND {q('state')} = '{PENDING}' "
            f"AND {q('timer')} IN ({', '.join(marks[4:])})",
            (now, tenant, entity, subject, *timers),
        )

    def purge(self, before: str, limit: int) -> Statement:
        """Delete up to ``limit`` settled timers (fired, failed, cancelled) settled before
        ``before`` (a timer cancelled before settlement times were kept: due before it)."""
        q = self.dialect.quote
        a, b = self.dialect.placeholders(2)
        key = f"{q('tenant_id')}, {q('id')}"
        return (
            f"DELETE FROM {self.table} WHERE ({key}) IN (SELECT {key} FROM {self.table} "
            f"WHERE {q('state')} IN ('{FIRED}', '{FAILED}', '{CANCELLED}') AND "
            f"COALESCE({q('fired_at')}, {q('due_at')}) < {a} LIMIT {b}) RETURNING {q('id')}",
            (before, limit),
        )

    def due(self, now: str, limit: int, *, lock: bool) -> Statement:
        """The pending timers due at ``now``, earliest first (``lock``: locked for this
        transaction, skipping those another holds, where the database can)."""
        q = self.dialect.quote
        a, b = self.dialect.placeholders(2)
        locking = self.dialect.lock_rows(self.table) if lock else ""
        return (
            f"SELECT {self.select_list} FROM {self.table} WHERE {q('state')} = '{PENDING}' "
            f"AND {q('due_at')} <= {a} ORDER BY {q('due_at')} LIMIT {b}{locking}",
            (now, limit),
        )

    def settle(self, tenant: str, id: str, state: str, outcome: str | None, now: str) -> Statement:
        """Mark a pending timer ``state`` (claim it as fired, or record its failure or its
        cancellation); returns its id when it was still pending, nothing otherwise."""
        q = self.dialect.quote
        marks = self.dialect.placeholders(5)
        return (
            f"UPDATE {self.table} SET {q('state')} = {marks[0]}, {q('outcome')} = {marks[1]}, "
            f"{q('fired_at')} = {marks[2]} WHERE {q('tenant_id')} = {marks[3]} AND {q('id')} = "
            f"{marks[4]} AND {q('state')} = '{PENDING}' RETURNING {q('id')}",
            (state, outcome, now, tenant, id),
        )

    def pending_of(self, tenant: str, timer: str) -> Statement:
        """The pending rows of ``timer`` in ``tenant`` (a cron job's armed clock)."""
        q = self.dialect.quote
        a, b = self.dialect.placeholders(2)
        return (
            f"SELECT {self.select_list} FROM {self.table} WHERE {q('tenant_id')} = {a} AND "
            f"{q('timer')} = {b} AND {q('state')} = '{PENDING}'",
            (tenant, timer),
        )

    def known_tenants(self, audit_table: str) -> Statement:
        """Every tenant with an audit record (one that has written anything), in order: a
        skip scan of the tenant-led audit index, one index probe per tenant."""
        q = self.dialect.quote
        audit, tenant = q(audit_table), q("tenant_id")
        return (
            f"WITH RECURSIVE known(t) AS (SELECT MIN({tenant}) FROM {audit} UNION ALL "
            f"SELECT (SELECT MIN({tenant}) FROM {audit} WHERE {tenant} > known.t) FROM known "
            f"WHERE known.t IS NOT NULL) SELECT t FROM known WHERE t IS NOT NULL",
            (),
        )

    def of_subject(self, tenant: str, entity: str, subject: str) -> Statement:
        """A row's pending timers, earliest first."""
        q = self.dialect.quote
        marks = self.dialect.placeholders(3)
        return (
            f"SELECT {self.select_list} FROM {self.table} WHERE {q('tenant_id')} = {marks[0]} "
            f"AND {q('entity')} = {marks[1]} AND {q('subject_id')} = {marks[2]} AND "
            f"{q('state')} = '{PENDING}' ORDER BY {q('due_at')}",
            (tenant, entity, subject),
        )
