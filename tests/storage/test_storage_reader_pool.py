"""The SQLite reader pool serves reads in the order they ask (docs/benchmarks.md, "Read
latency tail"): a connection given back goes to the oldest waiter, never to a newcomer, so no
read can be overtaken again and again under a steady stream of new ones."""

from __future__ import annotations

import asyncio

from host.storage.pool import FairPool


async def test_a_connection_given_back_goes_to_the_oldest_waiter_not_a_newcomer() -> None:
    pool: FairPool[str] = FairPool()
    pool.release("only")
    held = await pool.acquire()
    served: list[str] = []

    async def read(name: str) -> None:
        connection = await pool.acquire()
        served.append(name)
        await asyncio.sleep(0)
        pool.release(connection)

    first = asyncio.ensure_future(read("waiting since before"))
    await asyncio.sleep(0)  # it waits now
    newcomer = asyncio.ensure_future(read("a newcomer"))  # will run before ``first`` wakes
    pool.release(held)
    await asyncio.gather(first, newcomer)
    assert served == ["waiting since before", "a newcomer"]
    assert pool.idle() == 1


async def test_a_cancelled_waiter_leaves_the_line_and_loses_no_connection() -> None:
    pool: FairPool[str] = FairPool()
    pool.release("c")
    held = await pool.acquire()
    cancelled = asyncio.ensure_future(pool.acquire())
    behind = asyncio.ensure_future(pool.acquire())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    pool.release(held)
    assert await behind == "c"
    assert cancelled.cancelled()
    pool.release("c")
    assert pool.idle() == 1


async def test_a_waiter_cancelled_after_being_handed_a_connection_passes_it_on() -> None:
    pool: FairPool[str] = FairPool()
    pool.release("c")
    held = await pool.acquire()
    first = asyncio.ensure_future(pool.acquire())
    second = asyncio.ensure_future(pool.acquire())
    await asyncio.sleep(0)
    pool.release(held)  # handed to ``first``, which has not run yet
    first.cancel()
    assert await second == "c"
    assert pool.idle() == 0
