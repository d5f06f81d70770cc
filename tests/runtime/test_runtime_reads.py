"""Projection reads in process, through ``ProjectionReads`` and ``Storage`` directly.

A read holds a database connection only for one statement, runs to its end even when the
request task is cancelled, and never leaves a connection inside a transaction; a connection
found inside one anyway is rolled back before use, with one warning naming the request id.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from host.config import Settings
from host.graph import build_graph
from host.logs import request_id_var
from host.query.params import plain_query
from host.runtime.actor import Actor
from host.service import Service
from host.storage.database import SQLITE_READERS

TENANT = "t1"
QUEUE = "helpdesk.ticket.queue"
REQUESTER = Actor(tenant_id=TENANT, actor_id="rita", roles=frozenset({"requester"}))
CHUNK = 4


@pytest.fixture
async def service(tessera_database_url: str) -> AsyncIterator[Service]:
    settings = Settings(
        database_url=tessera_database_url, access_log=False, plugins_only=("helpdesk",)
    )
    running = await Service.start(settings, build_graph(settings))
    try:
        yield running
    finally:
        await asyncio.wait_for(running.stop(), 15)


async def create(service: Service, title: str) -> str:
    outputs = await service.runtime.invoke(
        "helpdesk.ticket.create", REQUESTER, None, {"title": title}
    )
    return str(outputs["id"])


async def read_all(service: Service) -> list[str]:
    listing = await service.reads.every_row(
        service.graph.projections[QUEUE], TENANT, plain_query(), CHUNK
    )
    ids = [row["id"] for row in listing.first]
    if listing.rest is not None:
        async for chunk in listing.rest:
            ids.extend(row["id"] for row in chunk)
    return ids


async def assert_every_connection_sees(service: Service, row_id: str) -> None:
    """The row is visible to reads on every connection (SQLite: every reader; PostgreSQL:
    reads spread over the pool)."""
    projection = service.graph.projections[QUEUE]
    for _ in range(2 * SQLITE_READERS):
        assert await service.reads.one(projection, TENANT, row_id, ()) is not None
    found = await asyncio.gather(
        *(service.reads.one(projection, TENANT, row_id, ()) for _ in range(8))
    )
    assert all(item is not None for item in found)


async def test_a_long_list_is_read_chunk_by_chunk_in_id_order(service: Service) -> None:
    ids = [await create(service, f"#{n}") for n in range(4 * CHUNK + 1)]
    listing = await service.reads.every_row(
        service.graph.projections[QUEUE], TENANT, plain_query(), CHUNK
    )
    assert listing.rest is not None
    chunks = [listing.first, *[chunk async for chunk in listing.rest]]
    assert [len(chunk) for chunk in chunks] == [CHUNK, CHUNK, CHUNK, CHUNK, 1]
    assert [row["id"] for chunk in chunks for row in chunk] == sorted(ids)


async def test_rows_created_while_a_list_is_read_do_not_repeat_or_hide_others(
    service: Service,
) -> None:
    before = [await create(service, f"before {n}") for n in range(3 * CHUNK)]
    listing = await service.reads.every_row(
        service.graph.projections[QUEUE], TENANT, plain_query(), CHUNK
    )
    assert listing.rest is not None
    seen = [row["id"] for row in listing.first]
    created = []
    async for chunk in listing.rest:
        seen.extend(row["id"] for row in chunk)
        created.append(await create(service, "during"))
    assert len(seen) == len(set(seen))
    assert set(before) <= set(seen)
    assert seen == sorted(seen)
    # Created after its chunk was read (ULIDs of one process are increasing): shown if the
    # chunk that covers its id was read after it was created, which here is every one but
    # the last.
    assert set(created[:-1]) <= set(seen)


async def test_cancelled_reads_leave_every_connection_clean(service: Service) -> None:
    for n in range(5 * CHUNK):
        await create(service, f"#{n}")
    rng = random.Random(19)
    for _ in range(150):
        reading = asyncio.ensure_future(read_all(service))
        for _ in range(rng.randint(0, 6)):
            await asyncio.sleep(0)
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
    newest = await create(service, "after the cancellations")
    await assert_every_connection_sees(service, newest)
    assert len(await read_all(service)) == 5 * CHUNK + 1
    if service.storage.dialect.name == "postgresql":
        rows = await service.storage.rows(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND state LIKE 'idle in transaction%'"
        )
        assert rows[0][0] == 0


@pytest.mark.parametrize("role", ["reader", "writer"])
async def test_a_connection_left_in_a_transaction_is_rolled_back_before_use(
    service: Service, role: str, caplog: pytest.LogCaptureFixture
) -> None:
    storage: Any = service.storage
    if not storage.dialect.embedded:
        pytest.skip("PostgreSQL: asyncpg's pool rolls back a released connection itself")
    old = await create(service, "before")
    # A fault no code path produces any more: a connection left inside a read transaction,
    # holding an old snapshot.
    connections = storage._reader_list if role == "reader" else [storage._writer]
    for conn in connections:
        await conn.execute("BEGIN")
        await conn.fetch_all("SELECT count(*) FROM helpdesk__ticket")
    token = request_id_var.set("01TESTREQUEST")
    try:
        with caplog.at_level(logging.WARNING, logger="tessera.storage"):
            newest = await create(service, "after")
            await assert_every_connection_sees(service, newest)
            await assert_every_connection_sees(service, old)
    finally:
        request_id_var.reset(token)
    warnings = [
        r.getMessage() for r in caplog.records if "rolled back before use" in r.getMessage()
    ]
    assert len(warnings) == len(connections), warnings
    assert all(f"a {role} database connection" in w and "01TESTREQUEST" in w for w in warnings)
