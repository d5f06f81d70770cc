"""``tessera timers`` (issue 41): list, fire now, cancel, against the database of a running
shared host whose timer loop fires what the command made due (the command's ``main`` runs in
a thread of the test's process: the same code as the console script, without its start-up)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
from unittest import mock

from host.cli import main
from host.storage.timers import CANCELLED, PENDING
from host.timers import TimerScheduler
from host.timers.queries import list_timers
from plugin_api.testing import TenantHost

TICKET = "helpdesk.ticket"


async def tessera(database_url: str, *args: str) -> tuple[int, str]:
    """Run ``tessera timers ...`` in a thread (the command runs its own event loop), with
    ``TESSERA_DATABASE_URL`` naming the shared host's database; its exit status and output."""
    sink = io.StringIO()
    url = {"TESSERA_DATABASE_URL": database_url}
    with mock.patch.dict(os.environ, url), contextlib.redirect_stdout(sink):
        status = await asyncio.to_thread(main, ["timers", *args])
    return status, sink.getvalue()


async def test_list_fire_now_and_cancel(samples: TenantHost) -> None:
    agent = samples.client(actor="alice", roles=("agent",))
    tickets = []
    for _ in range(2):
        created = await agent.action(
            f"{TICKET}.create", inputs={"title": "Later", "due_at": "2031-01-01T00:00:00Z"}
        )
        assert created.status == 200, created.json
        tickets.append(created.outputs["id"])
    status, out = await tessera(samples.database_url, "list", "--tenant", samples.tenant, "--json")
    assert status == 0, out
    listed = {row["subject_id"]: row for row in map(json.loads, out.splitlines())}
    assert set(listed) == set(tickets)
    first, second = (listed[ticket]["id"] for ticket in tickets)
    assert (await tessera(samples.database_url, "fire", "--tenant", samples.tenant, first))[0] == 0
    status, out = await tessera(samples.database_url, "cancel", "--tenant", samples.tenant, second)
    assert status == 0, out
    status, out = await tessera(samples.database_url, "cancel", "--tenant", samples.tenant, second)
    assert status == 1 and "no such pending timer" in out
    loop = asyncio.get_running_loop()
    started = loop.time()
    while True:
        item = (await agent.projection(f"{TICKET}.detail", subject=tickets[0])).item
        if item is not None and item["priority"] == "urgent":
            break
        assert loop.time() - started < 10, "the timer made due was not fired"
        await asyncio.sleep(0.1)
    detail = (await agent.projection(f"{TICKET}.detail", subject=tickets[1])).item
    assert detail is not None and detail["priority"] == "normal"
    status, out = await tessera(
        samples.database_url, "list", "--tenant", samples.tenant, "--state", "fired"
    )
    assert status == 0 and first in out and "fired" in out


async def test_purge_deletes_settled_timers_older_than_the_retention(samples: TenantHost) -> None:
    agent = samples.client(actor="alice", roles=("agent",))
    tickets = []
    for _ in range(3):
        created = await agent.action(
            f"{TICKET}.create", inputs={"title": "Later", "due_at": "2031-01-01T00:00:00Z"}
        )
        assert created.status == 200, created.json
        tickets.append(created.outputs["id"])
    cancelled = await agent.action(f"{TICKET}.cancel", subject=tickets[0])  # cancels its timer
    assert cancelled.status == 200, cancelled.json
    storage = samples._service().storage
    (settled,) = await list_timers(storage, tenant=samples.tenant, states=(CANCELLED,))
    status, out = await tessera(samples.database_url, "purge", "--older-than", "1d")
    assert (status, out.split()[:2]) == (0, ["purged", "0"]), out
    await asyncio.sleep(0.01)
    status, out = await tessera(samples.database_url, "purge", "--older-than", "0.001")
    assert status == 0 and int(out.split()[1]) >= 1, out
    assert await list_timers(storage, tenant=samples.tenant, states=(CANCELLED,)) == []
    # The timer loop's purge: in small batches, counted for the metrics.
    pending = await list_timers(storage, tenant=samples.tenant)
    assert {row.subject_id for row in pending} == set(tickets[1:])
    status, _ = await tessera(
        samples.database_url, "cancel", "--tenant", samples.tenant, pending[0].id
    )
    assert status == 0
    purged: list[int] = []
    loop = TimerScheduler(samples._service().timers.firing, poll_s=1.0, retention_s=0.001)
    loop.observe(lambda outcome, lag: None, lambda pending, overdue: None, purged.append)
    await asyncio.sleep(0.01)
    assert await loop.purge() >= 1 and purged and purged[0] >= 1
    left = await list_timers(storage, tenant=samples.tenant, states=(PENDING, CANCELLED))
    assert [row.id for row in left] == [pending[1].id]
    assert settled.id not in {row.id for row in left}
