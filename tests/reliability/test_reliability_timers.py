"""Timers under faults (issue 41, docs/timers.md): many timers fall due while two Hypercorn
workers serve a stream of clients editing the same rows, a worker is killed with SIGKILL twice
and the server is restarted with SIGTERM once. Afterwards every timer fired exactly once: each
is ``fired``, none pending, and each seeded ticket has exactly one escalation audit record,
by the system actor, naming the timer.

The tickets and their armed timers are seeded with SQL (arming through writes is tested in
tests/timers): creating them through HTTP would take most of the run. ``TIMERS`` is 3,000 and
``CLIENTS`` 20 in CI; ``TESSERA_RELIABILITY_TIMERS`` and ``TESSERA_RELIABILITY_TIMER_CLIENTS``
set them, and ``TESSERA_RELIABILITY_TIMER_SETTLE_S`` how long they may take to fire (the
issue's full run: 10,000 timers, 200 clients; figures in docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from databases import Database

from host.systemfields import new_ulid

from .conftest import TICKET_TABLE, HostProcess, identity, query, subject

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

TENANT = "timers"
TICKET = "helpdesk.ticket"
TIMER = "helpdesk.ticket.overdue"
ACTOR = identity(TENANT, "editor", ["agent"])
TIMERS = int(os.environ.get("TESSERA_RELIABILITY_TIMERS", "3000"))
CLIENTS = int(os.environ.get("TESSERA_RELIABILITY_TIMER_CLIENTS", "20"))
LEAD_S = 2.0
"""The first timer falls due this long after seeding."""
SPREAD_S = 8.0
"""The timers fall due evenly over this long (the faults happen meanwhile)."""
PHASE_S = 1.5
"""Running time between two faults (a restart takes a few seconds more)."""
SETTLE_S = float(os.environ.get("TESSERA_RELIABILITY_TIMER_SETTLE_S", "600"))
"""How long after the start every timer must have fired at most: a bound on the run, not a
speed target (the figure is ``fired_within_s``; speed is bench/timers.py's)."""
STALL_S = 30.0
"""How long the pending count may stay the same before the run fails as stalled (a lost
timer, a worker that stopped firing): on a loaded CI machine the firings slow down (stop 47's
CI: 1,579 of 3,000 still pending after 90 s, still firing), they must not stop."""


def instant(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def seed(url: str) -> list[str]:
    """``TIMERS`` open tickets, each with its overdue timer armed, due over ``SPREAD_S``."""
    now = datetime.now(timezone.utc)
    created = instant(now)
    tickets, timers = [], []
    for index in range(TIMERS):
        ticket = new_ulid()
        due = instant(now + timedelta(seconds=LEAD_S + SPREAD_S * index / TIMERS))
        tickets.append(
            {
                "t": TENANT,
                "id": ticket,
                "c": created,
                "v": new_ulid(),
                "title": f"t{index}",
                "due": due,
            }
        )
        timers.append(
            {
                "t": TENANT,
                "id": new_ulid(),
                "timer": TIMER,
                "entity": TICKET,
                "s": ticket,
                "a": f"{TICKET}.escalate",
                "key": due,
                "due": due,
                "c": created,
            }
        )
    async with Database(url) as db, db.transaction():
        await db.execute_many(
            f"INSERT INTO {TICKET_TABLE} (tenant_id, id, created_at, updated_at, _version, "
            "title, priority, billable, state, due_at) VALUES (:t, :id, :c, :c, :v, :title, "
            "'normal', false, 'open', :due)",
            tickets,
        )
        await db.execute_many(
            "INSERT INTO tessera_timers (tenant_id, id, timer, entity, subject_id, action, key, "
            "due_at, state, created_at) VALUES (:t, :id, :timer, :entity, :s, :a, :key, :due, "
            "'pending', :c)",
            timers,
        )
    return [ticket["id"] for ticket in tickets]


async def edit_stream(base_url: str, tickets: list[str], stop: asyncio.Event) -> Counter[str]:
    """Clients editing the titles of the timed tickets (their writes race the firings)."""
    seen: Counter[str] = Counter()

    async def client(seed: int) -> None:
        rng = random.Random(seed)
        async with httpx.AsyncClient(base_url=base_url, timeout=20) as http:
            while not stop.is_set():
                row = rng.choice(tickets)
                body = {"subject": subject(TENANT, TICKET, row), "inputs": {"title": "edited"}}
                try:
                    answer = await http.post(f"/actions/{TICKET}.edit", json=body, headers=ACTOR)
                except httpx.HTTPError:
                    seen["transport"] += 1
                    await asyncio.sleep(0.05)
                    continue
                assert answer.status_code in (200, 409), answer.text
                seen[str(answer.status_code)] += 1

    await asyncio.gather(*(client(seed) for seed in range(CLIENTS)))
    return seen


async def restart(host: HostProcess, *, kill: bool) -> None:
    if kill:
        host.kill_worker()
        if not await asyncio.to_thread(host.wait_exit, 20):
            await asyncio.to_thread(host.stop)
    else:
        await asyncio.to_thread(host.stop)  # SIGTERM: a graceful stop mid-firing
    await asyncio.to_thread(host.start)


async def test_every_timer_fires_exactly_once_through_kills_and_a_restart(
    tmp_path: Any, database: str, hosts: list[HostProcess], figures: dict[str, Any]
) -> None:
    host = HostProcess(tmp_path, database, workers=2, env={"TESSERA_TIMERS_POLL": "0.05"})
    hosts.append(host)
    host.start()
    tickets = await seed(database)
    started = time.monotonic()
    stop = asyncio.Event()
    stream = asyncio.create_task(edit_stream(host.base_url + "/api", tickets, stop))
    try:
        for kill in (True, True, False):
            await asyncio.sleep(PHASE_S)
            await restart(host, kill=kill)
    finally:
        stop.set()
        edits = await stream
    pending_sql = "SELECT COUNT(*) AS n FROM tessera_timers WHERE state = 'pending'"
    changed_at, seen = time.monotonic(), -1
    while pending := (await query(database, pending_sql))[0]["n"]:
        now = time.monotonic()
        if pending != seen:
            changed_at, seen = now, pending
        stalled = now - changed_at >= STALL_S
        assert not stalled and now - started < SETTLE_S, (
            f"{pending} timers still pending after {now - started:.0f} s, none fired in the "
            f"last {now - changed_at:.0f} s; the host's log ends:\n{host.log.read_text()[-3000:]}"
        )
        await asyncio.sleep(0.2)
    elapsed = time.monotonic() - started

    states = await query(database, "SELECT state, COUNT(*) AS n FROM tessera_timers GROUP BY state")
    assert {row["state"]: row["n"] for row in states} == {"fired": TIMERS}
    records = await query(
        database,
        "SELECT subject_id, actor_id, via FROM tessera_audit WHERE action = :a",
        {"a": f"{TICKET}.escalate"},
    )
    per_ticket = Counter(record["subject_id"] for record in records)
    assert set(per_ticket) == set(tickets)
    assert max(per_ticket.values()) == 1
    assert {record["actor_id"] for record in records} == {"system:helpdesk.sla"}
    assert {tuple(hop["action"] for hop in json.loads(r["via"])) for r in records} == {
        (f"timer:{TIMER}",)
    }
    urgent = await query(
        database, f"SELECT COUNT(*) AS n FROM {TICKET_TABLE} WHERE priority = 'urgent'"
    )
    assert urgent[0]["n"] == TIMERS
    figures.update(
        timers=TIMERS,
        clients=CLIENTS,
        fired_within_s=round(elapsed, 1),
        edits=dict(edits),
        faults="kill -9 x2, SIGTERM restart x1",
    )
