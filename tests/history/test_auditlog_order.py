"""The commit-safe order of the audit log (docs/history.md, "Order"): a reader walking a
tenant's records with :meth:`AuditLog.after` never skips one, even when transactions commit
in another order than the one they took their ``seq`` in.

The out-of-order tests run on PostgreSQL with several connections of their own (SQLite
serialises writers: ``seq`` is the commit order there, and the walk is checked on it too)."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from host.config import Settings
from host.graph import build_graph
from host.service import Service
from host.storage.auditlog import AuditEntry, AuditLog, Position
from host.storage.database import Tx
from host.storage.store import AuditRecord
from host.systemfields import new_ulid

TENANT = "t1"
POSTGRES = os.environ.get("TESSERA_TEST_BACKEND") == "postgresql"
postgresql_only = pytest.mark.skipif(
    not POSTGRES, reason="out-of-order commits need concurrent writers (PostgreSQL)"
)


@pytest.fixture
async def service(tessera_database_url: str) -> AsyncIterator[Service]:
    settings = replace(
        Settings(database_url=tessera_database_url, access_log=False), plugins_only=("helpdesk",)
    )
    running = await Service.start(settings, build_graph(settings))
    try:
        yield running
    finally:
        await running.stop()


def record_statement(service: Service, subject: str) -> tuple[str, tuple[Any, ...]]:
    """The service's own audit INSERT of a record of ``subject``."""
    sql, args = service.entities.audit(
        AuditRecord(
            event_id=new_ulid(),
            tenant_id=TENANT,
            actor_id="writer",
            roles=frozenset(),
            action="helpdesk.ticket.edit",
            entity="helpdesk.ticket",
            subject_id=subject,
            inputs={},
            outputs={},
            at="2030-01-01T00:00:00.000000Z",
        )
    )
    return sql, tuple(args)


async def write(service: Service, statement: tuple[str, tuple[Any, ...]]) -> None:
    async def work(tx: Tx) -> None:
        await tx.rows(*statement)

    await service.storage.transaction(work)


async def walk(log: AuditLog, after: Position | None, limit: int = 3) -> list[AuditEntry]:
    """Every record readable now after ``after``, page by page."""
    read: list[AuditEntry] = []
    while True:
        page = await log.after(TENANT, after, limit)
        read.extend(page)
        if len(page) < limit:
            return read
        after = page[-1].position


async def test_a_walk_reads_every_record_once_in_position_order(service: Service) -> None:
    log = AuditLog(service.storage, service.schema)
    subjects = [new_ulid() for _ in range(10)]
    for subject in subjects:
        await write(service, record_statement(service, subject))

    # Another client's open transaction anywhere on the cluster holds the horizon back for a
    # moment (docs/history.md): wait for the ten records rather than for an idle cluster.
    read = await walk_until(log, None, len(subjects))

    assert [entry.subject_id for entry in read] == subjects
    assert [entry.position for entry in read] == sorted(entry.position for entry in read)
    assert await log.after(TENANT, read[-1].position, 10) == []
    assert await log.after("t2", None, 10) == []
    assert Position.parse(str(read[3].position)) == read[3].position


async def _connect(url: str) -> Any:
    import asyncpg

    return await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))


@postgresql_only
@pytest.mark.parametrize("first_id", ["early", "late"])
async def test_a_record_committed_late_with_a_smaller_seq_is_not_skipped(
    service: Service, tessera_database_url: str, first_id: str
) -> None:
    """Transaction *late* takes the smaller ``seq`` and commits last: a walk of ``seq`` alone
    passes it for good; the walk of positions reads it once it commits, whichever of the two
    took its transaction id first (``first_id``)."""
    log = AuditLog(service.storage, service.schema)
    early, late = await _connect(tessera_database_url), await _connect(tessera_database_url)
    try:
        late_tx, early_tx = late.transaction(), early.transaction()
        await late_tx.start()
        await early_tx.start()
        for connection in (early, late) if first_id == "early" else (late, early):
            await connection.fetchval("SELECT pg_current_xact_id()")
        late_subject, early_subject = new_ulid(), new_ulid()
        await late.execute(*_args(record_statement(service, late_subject)))  # smaller seq
        await early.execute(*_args(record_statement(service, early_subject)))
        await early_tx.commit()

        # Transactions of other clients of the cluster hold the horizon back too: wait for
        # what this test expects rather than for an idle cluster.
        seen_now = await walk_until(log, None, 1 if first_id == "early" else 0)
        by_seq = await _by_seq(tessera_database_url, after=0)
        await late_tx.commit()
        seen_after = await walk_until(
            log, seen_now[-1].position if seen_now else None, 2 - len(seen_now)
        )
        by_seq_after = await _by_seq(tessera_database_url, after=by_seq[-1][0])
    finally:
        await early.close()
        await late.close()

    if first_id == "early":  # early's record is below the horizon: final, read at once
        assert [e.subject_id for e in seen_now] == [early_subject]
        assert [e.subject_id for e in seen_after] == [late_subject]
    else:  # late holds the horizon: nothing is read until it ends, then both in order
        assert seen_now == []
        assert [e.subject_id for e in seen_after] == [late_subject, early_subject]
    # the naive walk of seq: it read early's record (the larger seq) and never sees late's
    assert [subject for _, subject in by_seq] == [early_subject]
    assert by_seq_after == []


async def walk_until(log: AuditLog, after: Position | None, count: int) -> list[AuditEntry]:
    """A walk after ``after``, repeated until it reads ``count`` records (10 s at most)."""
    read: list[AuditEntry] = []
    for _ in range(400):
        read = await walk(log, after)
        if len(read) >= count:
            break
        await asyncio.sleep(0.025)
    return read


async def _by_seq(url: str, after: int) -> list[tuple[int, str]]:
    connection = await _connect(url)
    try:
        rows = await connection.fetch(
            "SELECT seq, subject_id FROM tessera_audit WHERE seq > $1 ORDER BY seq", after
        )
    finally:
        await connection.close()
    return [(int(row["seq"]), str(row["subject_id"])) for row in rows]


def _args(statement: tuple[str, tuple[Any, ...]]) -> tuple[Any, ...]:
    sql, args = statement
    return (sql, *args)


@postgresql_only
async def test_walkers_never_skip_a_record_while_writers_commit_out_of_order(
    service: Service, tessera_database_url: str
) -> None:
    """Eight connections insert records and commit (or roll back) after random delays while
    a reader walks the log: it reads every committed record exactly once, none rolled back."""
    log = AuditLog(service.storage, service.schema)
    rng = random.Random(26)
    committed: list[str] = []
    writers_done = asyncio.Event()

    async def writer(connection: Any, rounds: int) -> None:
        for _ in range(rounds):
            transaction = connection.transaction()
            await transaction.start()
            subject = new_ulid()
            await connection.execute(*_args(record_statement(service, subject)))
            await asyncio.sleep(rng.random() * 0.02)
            if rng.random() < 0.15:
                await transaction.rollback()
            else:
                await transaction.commit()
                committed.append(subject)

    async def reader() -> list[str]:
        read: list[str] = []
        position: Position | None = None
        while True:
            finished = writers_done.is_set()
            page = await walk(log, position)
            read.extend(entry.subject_id for entry in page)
            if page:
                position = page[-1].position
            if finished and len(read) >= len(committed):
                return read
            await asyncio.sleep(0.005)

    connections = [await _connect(tessera_database_url) for _ in range(8)]
    try:
        reading = asyncio.ensure_future(reader())
        await asyncio.gather(*(writer(c, 25) for c in connections))
        writers_done.set()
        read = await asyncio.wait_for(reading, timeout=30)
    finally:
        for connection in connections:
            await connection.close()

    assert len(read) == len(set(read))
    assert sorted(read) == sorted(committed)
    assert len(committed) > 100
