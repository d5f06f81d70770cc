"""Crash: ``kill -9`` of a Hypercorn worker in the middle of a sustained stream of actions.

Several client tasks keep creating, editing and moving tickets and creating and issuing
invoices. Mid-stream a worker child is killed with SIGKILL (twice). Hypercorn 0.18 stops the
whole server when a worker dies; the test then restarts it on the same port and
the stream carries on. Afterwards the database must hold no half-written action:

* every row has exactly one create audit record, and replaying each subject's audit records
  in commit order gives the row as stored (``_version`` included): every committed change has
  its audit record and every audit record is a committed change;
* no audit record names a row that does not exist;
* every 200 a client received is reflected in the rows and the audit;
* invoice numbers stay gapless: a killed ``issue`` never consumed a number.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter, defaultdict
from typing import Any

import httpx
import pytest

from .conftest import HostProcess, assert_envelope, audit_rows, identity, list_items, subject

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

TENANT = "crash"
TICKET = "helpdesk.ticket"
INVOICE = "billing.invoice"
ACTOR = identity(TENANT, "bot", ["agent", "requester", "clerk"])
CLIENTS = 6
FAULTS = 2
PHASE_SECONDS = 1.5
MAX_REQUESTS = 4000
TRANSITIONS = ("start", "resolve", "close", "reopen", "cancel")


class Stream:
    """What the clients sent and what they were told."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.tickets: list[str] = []
        self.invoices: list[str] = []
        self.acknowledged: list[tuple[str, str, dict[str, Any]]] = []  # fqn, subject, outputs
        self.statuses: Counter[int] = Counter()
        self.transport_errors = 0
        self.sent = 0

    def pick(self, rng: random.Random) -> tuple[str, str | None, dict[str, Any]]:
        roll = rng.random()
        n = rng.randrange(10**6)
        if roll < 0.25 or not self.tickets:
            return f"{TICKET}.create", None, {"title": f"stream {n}", "estimate_hours": n}
        if roll < 0.50:
            inputs = {"title": f"edit {n}", "estimate_hours": n}
            return f"{TICKET}.edit", rng.choice(self.tickets), inputs
        if roll < 0.70:
            return f"{TICKET}.{rng.choice(TRANSITIONS)}", rng.choice(self.tickets), {}
        if roll < 0.85 or not self.invoices:
            amount = {"amount": f"{n % 1000}.25", "currency": "USD"}
            return f"{INVOICE}.create", None, {"customer": f"customer {n}", "amount": amount}
        return f"{INVOICE}.issue", rng.choice(self.invoices), {}

    async def run_client(self, seed: int, base_url: str) -> None:
        rng = random.Random(seed)
        limits = httpx.Limits(max_connections=4)
        async with httpx.AsyncClient(base_url=base_url, timeout=20, limits=limits) as client:
            while not self.stop.is_set() and self.sent < MAX_REQUESTS:
                fqn, row, inputs = self.pick(rng)
                entity = fqn.rsplit(".", 1)[0]
                body = {"subject": None if row is None else subject(TENANT, entity, row)}
                body["inputs"] = inputs
                self.sent += 1
                try:
                    response = await client.post(f"/actions/{fqn}", json=body, headers=ACTOR)
                except httpx.HTTPError:
                    # The worker died under the request, or the server is restarting: the
                    # outcome is unknown to the client (it may or may not have committed).
                    self.transport_errors += 1
                    await asyncio.sleep(0.05)
                    continue
                self.statuses[response.status_code] += 1
                if response.status_code != 200:
                    assert_envelope(response)
                    assert response.status_code < 500, response.text
                    continue
                outputs = response.json()["outputs"]
                if row is None:
                    row = outputs["id"]
                    (self.tickets if entity == TICKET else self.invoices).append(row)
                self.acknowledged.append((fqn, row, outputs))


async def test_kill_9_of_a_worker_mid_stream_leaves_no_half_written_action(
    start_host: Any, database: str, figures: dict[str, Any]
) -> None:
    host: HostProcess = start_host(workers=2)
    stream = Stream()
    clients = [
        asyncio.create_task(stream.run_client(seed, host.base_url + "/api"))
        for seed in range(CLIENTS)
    ]
    killed: list[int] = []
    server_exited = 0
    restart_seconds: list[float] = []
    try:
        await asyncio.sleep(PHASE_SECONDS)
        for _ in range(FAULTS):
            killed.append(host.kill_worker())
            if await asyncio.to_thread(host.wait_exit, 20):
                server_exited += 1
            else:  # a hypercorn that survives a worker's death would be fine too
                await asyncio.to_thread(host.stop)
            started = time.monotonic()
            await asyncio.to_thread(host.start)
            restart_seconds.append(round(time.monotonic() - started, 2))
            await asyncio.sleep(PHASE_SECONDS)
    finally:
        stream.stop.set()
        await asyncio.gather(*clients)

    async with host.client() as client:
        tickets = {r["id"]: r for r in await list_items(client, f"{TICKET}.detail", TENANT)}
        invoices = {r["id"]: r for r in await list_items(client, f"{INVOICE}.detail", TENANT)}
    rows = {**tickets, **invoices}
    # The notifications the helpdesk's event subscriber writes after each resolve are audited
    # too (their own rows, not the stream's): only the stream's tickets and invoices here.
    audit = [r for r in await audit_rows(database) if r["entity"] in (TICKET, INVOICE)]

    trails: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in audit:
        assert record["tenant_id"] == TENANT
        trails[record["subject_id"]].append(record)

    # No audit record without its row, no row without its audit records.
    assert set(trails) == set(rows), set(trails) ^ set(rows)
    for row_id, trail in trails.items():
        row = rows[row_id]
        actions = [record["action"] for record in trail]
        assert actions[0].endswith(".create") and not any(
            a.endswith(".create") for a in actions[1:]
        ), actions
        replayed: dict[str, Any] = {}
        for record in trail:
            replayed.update(record["outputs"])
        assert {key: row[key] for key in replayed if key in row} == {
            key: value for key, value in replayed.items() if key in row
        }, (row, trail)
        if len(trail) == 1:
            assert row["updated_at"] == row["created_at"], row
        else:
            assert row["_version"] == trail[-1]["outputs"]["_version"], (row, trail)
        versions = [record["outputs"].get("_version") for record in trail[1:]]
        assert len(versions) == len(set(versions)), "one change audited twice"

    # Every acknowledged action is committed and audited.
    lost = 0
    for fqn, row_id, outputs in stream.acknowledged:
        if not any(r["action"] == fqn and r["outputs"] == outputs for r in trails.get(row_id, [])):
            lost += 1
    assert lost == 0, f"{lost} acknowledged actions are missing"

    # Gapless invoice numbers across the crashes.
    numbers = sorted(r["number"] for r in invoices.values() if r["number"] is not None)
    assert numbers == [f"INV-{n:05d}" for n in range(1, len(numbers) + 1)], numbers

    assert server_exited + len(restart_seconds) >= FAULTS
    figures.update(
        client_tasks=CLIENTS,
        requests_sent=stream.sent,
        responses={str(k): v for k, v in sorted(stream.statuses.items())},
        transport_errors=stream.transport_errors,
        faults_injected=len(killed),
        hypercorn_exited_after_kill=server_exited,
        restart_seconds=restart_seconds,
        acknowledged=len(stream.acknowledged),
        audit_records=len(audit),
        committed_without_response=len(audit) - len(stream.acknowledged),
        rows=len(rows),
        invoices_numbered=len(numbers),
        rows_lost=lost,
    )
