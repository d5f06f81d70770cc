"""A first-come, first-served pool of long-lived connections (the SQLite readers).

``asyncio.Queue`` is not fair to its waiters: a connection given back wakes the oldest waiter,
but a task that asks in the meantime (a new request) finds the connection in the queue and
takes it; the woken waiter finds the queue empty and waits again, *at the back of the line*.
Under a steady stream of new reads an unlucky read can lose that race many times in a row:
that was the long tail of SQLite reads (docs/benchmarks.md, "Read latency tail").

Here a connection given back goes straight to the oldest waiter, and a newcomer waits behind
everyone already waiting: every read is served in the order it asked.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

__all__ = ["FairPool"]

C = TypeVar("C")


class FairPool(Generic[C]):
    """Idle connections, handed out in the order they are asked for."""

    def __init__(self) -> None:
        self._idle: list[C] = []
        self._waiters: deque[asyncio.Future[C]] = deque()

    def idle(self) -> int:
        """How many connections are idle now."""
        return len(self._idle)

    async def acquire(self) -> C:
        """An idle connection, or the next one given back once every earlier caller has
        been served."""
        if self._idle and not self._waiters:
            return self._idle.pop()
        waiter: asyncio.Future[C] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(waiter.result())  # handed over as we were cancelled: pass it on
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    def release(self, connection: C) -> None:
        """Give ``connection`` back: to the oldest waiter still waiting, else to the idle."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return
        self._idle.append(connection)
