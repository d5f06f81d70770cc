"""The in-test subscriber plugin and database helpers of the event tests."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from databases import Database

from plugin_api import EventContext, Subscriber, hookimpl
from plugin_api.events import Event

FAST: dict[str, Any] = {
    "events_poll_s": 0.02,
    "events_backoff_s": 0.01,
    "events_backoff_max_s": 0.05,
    "events_max_attempts": 3,
}
"""Dispatcher settings that make a test's retries quick."""


class Recorder:
    """A plugin whose subscribers record what they get; tests decide who fails."""

    def __init__(self) -> None:
        self.seen: dict[str, list[Event]] = {"lab.all": [], "lab.tickets": [], "lab.broken": []}
        self.attempts: dict[str, list[tuple[str, int]]] = {name: [] for name in self.seen}
        self.fail_first = 0.0
        """``lab.tickets`` fails the first attempt of an event with this probability."""
        self.broken = True
        """``lab.broken`` raises while this is true."""
        self.slow_s = 0.0

    def _handler(self, name: str) -> Callable[[EventContext], Awaitable[None]]:
        async def handle(ctx: EventContext) -> None:
            self.attempts[name].append((ctx.event.id, ctx.attempt))
            if name == "lab.tickets":
                if self.slow_s:
                    await asyncio.sleep(self.slow_s)
                if ctx.attempt == 1 and random.random() < self.fail_first:
                    raise RuntimeError("first attempt fails")
            if name == "lab.broken" and self.broken:
                raise RuntimeError("broken subscriber")
            self.seen[name].append(ctx.event)

        return handle

    @hookimpl
    def tessera_subscribers(self) -> Sequence[Subscriber]:
        return (
            Subscriber(name="lab.all", handler=self._handler("lab.all")),
            Subscriber(
                name="lab.tickets",
                handler=self._handler("lab.tickets"),
                entities=("helpdesk.ticket",),
                timeout_s=1.0,
            ),
            Subscriber(
                name="lab.broken",
                handler=self._handler("lab.broken"),
                actions=("billing.invoice.create",),
            ),
        )


async def rows(url: str, query: str) -> list[dict[str, Any]]:
    async with Database(url) as db:
        return [dict(r._mapping) for r in await db.fetch_all(query)]


async def until(check: Callable[[], Awaitable[bool]], timeout: float = 20.0) -> None:
    """Wait for ``check`` to hold (deliveries are asynchronous); fail after ``timeout``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        assert loop.time() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.02)
