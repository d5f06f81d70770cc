"""Events under crashes: two host instances (one Hypercorn worker each) share one database
while clients run actions against both and both dispatchers deliver every event to a webhook
receiver (the sample receiver, a real process, slowed down so deliveries are in flight) and
to the helpdesk's transactional subscriber. Mid-stream the worker of each instance is killed
with SIGKILL in turn (Hypercorn then stops; the instance is restarted on its port).

Afterwards, with every delivery drained:

* every committed action's event reached the receiver at least once (0 lost), and nothing
  else did (no event of an action that did not commit); duplicates are counted;
* per subject, the events first arrived in commit order;
* the transactional subscriber wrote exactly one notification per committed resolve.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import HostProcess, audit_rows, free_port, identity, query, subject

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

RECEIVER = (
    Path(__file__).resolve().parents[2] / "sample_plugins/billing/examples/webhook_receiver.py"
)
SECRET = "reliability-secret-0123456789"
TENANT = "events"
TICKET = "helpdesk.ticket"
INVOICE = "billing.invoice"
ACTOR = identity(TENANT, "bot", ["agent", "requester", "clerk"])
CLIENTS = 4
PHASE_SECONDS = 2.0
LEASE_S = 3
TRANSITIONS = ("start", "resolve", "reopen")


class Stream:
    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.tickets: list[str] = []
        self.invoices: list[str] = []
        self.acknowledged = 0
        self.transport_errors = 0

    def pick(self, rng: random.Random) -> tuple[str, str | None, dict[str, Any]]:
        roll = rng.random()
        if roll < 0.2 or not self.tickets:
            return f"{TICKET}.create", None, {"title": f"t{rng.randrange(10**6)}"}
        if roll < 0.4:
            return f"{TICKET}.edit", rng.choice(self.tickets[-20:]), {"estimate_hours": 1}
        if roll < 0.8:
            return f"{TICKET}.{rng.choice(TRANSITIONS)}", rng.choice(self.tickets[-20:]), {}
        if roll < 0.9 or not self.invoices:
            amount = {"amount": "1.00", "currency": "USD"}
            return f"{INVOICE}.create", None, {"customer": "c", "amount": amount}
        return f"{INVOICE}.issue", rng.choice(self.invoices), {}

    async def run_client(self, seed: int, host: HostProcess) -> None:
        rng = random.Random(seed)
        async with httpx.AsyncClient(base_url=host.base_url + "/api", timeout=20) as client:
            while not self.stop.is_set():
                fqn, row, inputs = self.pick(rng)
                entity = fqn.rsplit(".", 1)[0]
                body = {"subject": None if row is None else subject(TENANT, entity, row)}
                body["inputs"] = inputs
                try:
                    response = await client.post(f"/actions/{fqn}", json=body, headers=ACTOR)
                except httpx.HTTPError:
                    self.transport_errors += 1
                    await asyncio.sleep(0.1)
                    continue
                assert response.status_code < 500, response.text
                if response.status_code == 200:
                    self.acknowledged += 1
                    if row is None:
                        created = response.json()["outputs"]["id"]
                        (self.tickets if entity == TICKET else self.invoices).append(created)


async def test_kill_9_while_two_instances_deliver_loses_no_event(
    tmp_path: Path, database: str, hosts: list[HostProcess], figures: dict[str, Any]
) -> None:
    port = free_port()
    log = tmp_path / "received.jsonl"
    receiver = subprocess.Popen(
        [sys.executable, str(RECEIVER), "--port", str(port), "--log", str(log), "--delay", "0.02"],
        env={**os.environ, "WEBHOOK_SECRET": SECRET},
        stderr=subprocess.DEVNULL,
    )
    hook = {"url": f"http://127.0.0.1:{port}/", "secret": SECRET, "events": ["*"], "timeout_s": 2}
    env = {
        "TESSERA_WEBHOOKS": json.dumps([hook]),
        "TESSERA_EVENTS_LEASE_S": str(LEASE_S),
        "TESSERA_EVENTS_POLL_S": "0.1",
        "TESSERA_EVENTS_BACKOFF_S": "0.1",
        "TESSERA_EVENTS_BACKOFF_MAX_S": "1",
        "TESSERA_EVENTS_MAX_ATTEMPTS": "1000",
    }
    pair = [HostProcess(tmp_path, database, workers=1, env=env) for _ in range(2)]
    hosts.extend(pair)
    started = time.monotonic()
    try:
        for host in pair:
            host.start()
        stream = Stream()
        clients = [
            asyncio.create_task(stream.run_client(seed, pair[seed % 2])) for seed in range(CLIENTS)
        ]
        kills = 0
        try:
            await asyncio.sleep(PHASE_SECONDS)
            for host in (*pair, *pair):
                host.kill_worker()
                kills += 1
                if not await asyncio.to_thread(host.wait_exit, 20):
                    await asyncio.to_thread(host.stop)
                await asyncio.to_thread(host.start)
                await asyncio.sleep(PHASE_SECONDS)
        finally:
            stream.stop.set()
            await asyncio.gather(*clients)
        streamed = time.monotonic() - started

        deadline = time.monotonic() + 60
        while await query(database, "SELECT seq FROM tessera_deliveries"):
            assert time.monotonic() < deadline, "deliveries did not drain"
            await asyncio.sleep(0.2)
        drained = time.monotonic() - started - streamed
    finally:
        receiver.terminate()
        receiver.wait(10)

    audit = await audit_rows(database)
    # Events are the actions' own records (not the notifications the subscriber wrote).
    events = [r for r in audit if r["action"].rsplit(".", 1)[0] == r["entity"]]
    received = [json.loads(line)["id"] for line in log.read_text().splitlines()]
    committed = {r["id"] for r in events}
    lost = committed - set(received)
    phantom = set(received) - committed
    assert not lost, f"{len(lost)} committed events never delivered"
    assert not phantom, f"{len(phantom)} events of actions that did not commit"
    duplicates = len(received) - len(set(received))

    first_arrival: dict[str, int] = {}
    for position, event_id in enumerate(received):
        first_arrival.setdefault(event_id, position)
    by_subject: dict[str, list[str]] = defaultdict(list)
    for record in events:  # commit order
        by_subject[record["subject_id"]].append(record["id"])
    out_of_order = sum(
        1
        for ids in by_subject.values()
        for a, b in pairwise(ids)
        if first_arrival[a] > first_arrival[b]
    )
    assert out_of_order == 0

    notes = await query(database, "SELECT event_id FROM helpdesk__notification")
    resolves = [r["id"] for r in events if r["action"] == f"{TICKET}.resolve"]
    notified = Counter(n["event_id"] for n in notes)
    assert sorted(notified) == sorted(resolves) and set(notified.values()) <= {1}

    figures.update(
        instances=2,
        kills=kills,
        lease_s=LEASE_S,
        acknowledged=stream.acknowledged,
        transport_errors=stream.transport_errors,
        events=len(committed),
        deliveries_received=len(received),
        duplicates=duplicates,
        lost=len(lost),
        out_of_order=out_of_order,
        resolves_notified_once=len(resolves),
        stream_seconds=round(streamed, 1),
        drain_seconds=round(drained, 1),
    )
