"""Reading server-sent events in tests: a parser, and a stream over the Quart test client."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from quart.testing.connections import TestHTTPConnection


@dataclass
class Event:
    """One SSE message (``comments`` alone for a heartbeat)."""

    event: str = "message"
    id: str | None = None
    data: Any = None
    comments: list[str] = field(default_factory=list)

    @property
    def is_heartbeat(self) -> bool:
        return self.data is None and "heartbeat" in self.comments


def parse_events(text: str) -> tuple[list[Event], str]:
    """The complete messages of ``text`` and what is left of it."""
    events: list[Event] = []
    while "\n\n" in text:
        block, text = text.split("\n\n", 1)
        current = Event()
        data: list[str] = []
        for line in block.split("\n"):
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "":
                current.comments.append(value)
            elif name == "data":
                data.append(value)
            elif name == "event":
                current.event = value
            elif name == "id":
                current.id = value
        if data:
            current.data = json.loads("\n".join(data))
        events.append(current)
    return events, text


class LiveStream:
    """A live stream read through the Quart test client."""

    def __init__(self, connection: TestHTTPConnection) -> None:
        self.connection = connection
        self._rest = ""
        self.events: list[Event] = []

    async def next_events(self, timeout: float = 5.0) -> list[Event]:
        """The messages of the next chunk the server sends."""
        chunk = await asyncio.wait_for(self.connection.receive(), timeout)
        events, self._rest = parse_events(self._rest + chunk.decode())
        self.events.extend(events)
        return events

    async def changes(self, count: int, timeout: float = 10.0) -> list[Event]:
        """Read until ``count`` change messages came (heartbeats and others skipped)."""
        found: list[Event] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while len(found) < count:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"{len(found)} of {count} changes came: {self.events}")
            found.extend(e for e in await self.next_events(remaining) if e.event == "change")
        return found

    async def quiet(self, seconds: float) -> list[Event]:
        """Every message sent within ``seconds``."""
        found: list[Event] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while (remaining := deadline - loop.time()) > 0:
            try:
                found.extend(await self.next_events(remaining))
            except asyncio.TimeoutError:
                break
        return found


@contextlib.asynccontextmanager
async def open_stream(client: Any, path: str, head: Mapping[str, str]) -> AsyncIterator[LiveStream]:
    """A stream asked by ``client`` (a Quart test client), its first chunk (the retry hint)
    read: the stream is registered."""
    async with client.request(path, headers=dict(head)) as connection:
        await connection.send_complete()
        stream = LiveStream(connection)
        first = await stream.next_events()
        assert connection.status_code == 200, first
        yield stream
        await connection.disconnect()


TICKET = "helpdesk.ticket"
QUEUE = f"{TICKET}.queue"
MINE = f"{TICKET}.mine"
DETAIL = f"{TICKET}.detail"


def headers(
    tenant: str = "t1", actor: str | None = None, roles: str | None = None, **more: str
) -> dict[str, str]:
    found = {"X-Tenant-ID": tenant, **more}
    if actor is not None:
        found["X-Actor-Id"] = actor
    if roles is not None:
        found["X-Actor-Roles"] = roles
    return found


def changes_path(*projections: str) -> str:
    return "/api/changes?" + "&".join(f"projection={p}" for p in projections)
