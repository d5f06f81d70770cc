"""Live changes across real Hypercorn processes on one database (docs/live.md): a change
made through one host (or worker) reaches a stream of the other; the PostgreSQL NOTIFY
wake-up; a forced disconnect and resume against the audit records; streams end cleanly
when the server stops."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..server.conftest import Server, run_server
from .conftest import DETAIL, QUEUE, TICKET, Event, changes_path, parse_events

pytestmark = pytest.mark.slow

POSTGRES = os.environ.get("TESSERA_TEST_BACKEND") == "postgresql"
AGENT = {"X-Tenant-ID": "live", "X-Actor-Id": "ann", "X-Actor-Roles": "agent"}
FAST = {"TESSERA_LIVE_POLL_S": "0.1"}


class Listener:
    """A stream over a real connection, read in a task into :attr:`events`."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.ended = asyncio.Event()
        self.opened = asyncio.Event()

    def changes(self) -> list[Event]:
        return [e for e in self.events if e.event == "change"]

    async def wait_for(self, count: int, timeout: float = 15.0) -> list[Event]:
        deadline = time.monotonic() + timeout
        while len(self.changes()) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.changes())} of {count} changes: {self.events}")
            await asyncio.sleep(0.02)
        return self.changes()


@asynccontextmanager
async def listening(
    server: Server, *projections: str, last: str | None = None
) -> AsyncIterator[Listener]:
    listener = Listener()
    head = dict(AGENT) if last is None else {**AGENT, "Last-Event-ID": last}

    async def read() -> None:
        rest = ""
        async with (
            httpx.AsyncClient(base_url=server.base_url, timeout=None) as http,
            http.stream("GET", changes_path(*projections), headers=head) as response,
        ):
            assert response.status_code == 200
            async for chunk in response.aiter_text():
                events, rest = parse_events(rest + chunk)
                listener.events.extend(events)
                listener.opened.set()
        listener.ended.set()

    task = asyncio.ensure_future(read())
    try:
        await asyncio.wait_for(listener.opened.wait(), 15)
        yield listener
    finally:
        task.cancel()  # a forced disconnect: the connection is dropped mid-stream
        await asyncio.gather(task, return_exceptions=True)


async def act(server: Server, count: int) -> list[str]:
    """Create ``count`` tickets and start each; returns their ids."""
    made: list[str] = []
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        for n in range(count):
            created = await http.post(
                f"/api/actions/{TICKET}.create", json={"inputs": {"title": f"t{n}"}}, headers=AGENT
            )
            assert created.status_code == 200, created.text
            ticket = created.json()["outputs"]["id"]
            subject = {"entity": TICKET, "tenantId": "live", "identityHandle": ticket}
            started = await http.post(
                f"/api/actions/{TICKET}.start", json={"subject": subject}, headers=AGENT
            )
            assert started.status_code == 200, started.text
            made.append(ticket)
    return made


async def audit_records(server: Server, tickets: list[str]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        for ticket in tickets:
            page = await http.get(
                f"/api/projections/{DETAIL}/history",
                params={"subject": ticket, "pageSize": "500"},
                headers=AGENT,
            )
            assert page.status_code == 200, page.text
            found.extend((ticket, item["versionAfter"]) for item in page.json()["data"]["items"])
    return found


def heard(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.data["id"], e.data["version"]) for e in events]


async def test_a_change_on_one_host_reaches_a_stream_of_the_other(
    tmp_path: Path, tessera_database_url: str
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        run_server(tmp_path / "a", env=FAST, database=tessera_database_url) as one,
        run_server(tmp_path / "b", env=FAST, database=tessera_database_url) as other,
    ):
        async with listening(other, QUEUE) as listener:
            tickets = await act(one, 3)
            events = await listener.wait_for(6)
        assert sorted(heard(events)) == sorted(await audit_records(one, tickets))


async def test_two_workers_resume_after_a_forced_disconnect(
    tmp_path: Path, tessera_database_url: str
) -> None:
    """Across two workers, streams dropped mid-way and resumed with their last id hear every
    record once (counted against the audit log), whichever worker wrote or serves them."""
    with run_server(tmp_path, workers=2, env=FAST, database=tessera_database_url) as server:
        seen: list[Event] = []
        last: str | None = None
        tickets: list[str] = []
        for _ in range(4):
            async with listening(server, QUEUE, last=last) as listener:
                tickets += await act(server, 2)
                await listener.wait_for(len(tickets) * 2 - len(seen))
                await asyncio.sleep(0.3)  # nothing more comes
                seen.extend(listener.changes())
                last = seen[-1].id
            tickets += await act(server, 1)  # while away
        async with listening(server, QUEUE, last=last) as listener:
            await listener.wait_for(2)
            await asyncio.sleep(0.3)
            seen.extend(listener.changes())
        assert len(heard(seen)) == len(set(heard(seen)))
        assert sorted(heard(seen)) == sorted(await audit_records(server, tickets))


@pytest.mark.skipif(not POSTGRES, reason="LISTEN/NOTIFY is PostgreSQL's")
async def test_notify_wakes_the_other_host(tmp_path: Path, tessera_database_url: str) -> None:
    """With a poll interval of a minute, only the NOTIFY sent after the commit can bring the
    change to the other host within seconds."""
    env = {"TESSERA_LIVE_POLL_S": "60", "TESSERA_LIVE_NOTIFY": "1"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        run_server(tmp_path / "a", env=env, database=tessera_database_url) as one,
        run_server(tmp_path / "b", env=env, database=tessera_database_url) as other,
    ):
        async with listening(other, QUEUE) as listener:
            await asyncio.sleep(0.5)  # the hub's first read is behind it
            started = time.monotonic()
            await act(one, 1)
            await listener.wait_for(2, timeout=10)
            assert time.monotonic() - started < 10


async def test_streams_end_cleanly_when_the_server_stops(
    tmp_path: Path, tessera_database_url: str
) -> None:
    with run_server(tmp_path, env=FAST, database=tessera_database_url) as server:
        async with listening(server, QUEUE) as listener:
            stopped: Any = asyncio.get_running_loop().run_in_executor(None, server.stop)
            await asyncio.wait_for(listener.ended.wait(), 10)
            took = await stopped
        assert listener.events[-1].event == "end"
        assert listener.events[-1].data == {"reason": "shutdown"}
        assert took < 5


async def test_metrics_count_streams_messages_and_lag(
    tmp_path: Path, tessera_database_url: str
) -> None:
    from ..server.test_metrics import sample

    env = {**FAST, "TESSERA_METRICS": "1", "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prom")}
    with run_server(tmp_path, env=env, database=tessera_database_url) as server:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
            async with listening(server, QUEUE) as listener:
                await act(server, 2)
                await listener.wait_for(4)
                text = (await http.get("/metrics")).text
                assert sample(text, "tessera_live_streams") == 1
                assert sample(text, "tessera_live_messages_total") == 4
                assert sample(text, "tessera_live_lag_seconds_count") == 4
            for _ in range(100):
                text = (await http.get("/metrics")).text
                if sample(text, "tessera_live_streams") == 0:
                    break
                await asyncio.sleep(0.05)
            assert sample(text, "tessera_live_streams") == 0
