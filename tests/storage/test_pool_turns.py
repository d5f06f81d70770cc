"""PostgreSQL: a request waiting for a pooled connection gets one in its turn.

asyncpg's pool hands a connection given back to whichever task asks first, while the task it
woke for it has yet to run: under load, requests that arrived later overtook one that waited,
which then went to the back of the queue (writes' p99 up to 6 times their p50,
docs/benchmarks.md "PostgreSQL: the pool's turns"). The storage now takes the pool's
connections in order of arrival. No table is needed: plain queries on the test server's
database, through a pool of one connection.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from sqlalchemy import text

from host.config import Settings
from host.storage.database import Storage
from plugin_api.testing import DEFAULT_POSTGRES_URL

pytestmark = pytest.mark.postgres

MOST_ARRIVALS = 5_000
"""Bound on the requests arriving after the one that waits (one per turn of the loop)."""


async def test_a_waiting_request_is_not_overtaken_by_later_ones() -> None:
    url = os.environ.get("TESSERA_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    storage = Storage(Settings(database_url=url, pg_pool_min=1, pg_pool_max=1))
    await storage.connect()
    answered: list[int] = []

    async def request(number: int, sql: str = "SELECT 1") -> None:
        await storage.fetch_all(text(sql))
        answered.append(number)

    try:
        holder = asyncio.ensure_future(request(-1, "SELECT pg_sleep(0.2)"))
        for _ in range(1_000):  # until the one connection is taken (at most 10 s)
            if storage.connections_in_use() == 1:
                break
            await asyncio.sleep(0.01)
        waiting = asyncio.ensure_future(request(0))
        await asyncio.sleep(0.05)  # request 0 waits for it
        later: list[asyncio.Future[None]] = []
        while 0 not in answered and len(later) < MOST_ARRIVALS:
            # A new request every turn of the event loop, as on a busy server, until
            # request 0 has its answer.
            later.append(asyncio.ensure_future(request(len(later) + 1)))
            await asyncio.sleep(0)
        await asyncio.gather(holder, waiting, *later)
    finally:
        await storage.disconnect()

    overtook = answered[: answered.index(0)]
    assert overtook == [-1], f"{len(overtook) - 1} later request(s) answered before request 0"
    assert answered[1:] == list(range(len(later) + 1)), "answered out of their order"
