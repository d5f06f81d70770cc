"""Concurrent actions through the HTTP surface on one real database file (or PostgreSQL).

SQLite refuses a deferred transaction's read -> write lock upgrade at once under concurrency
("database is locked"); the storage answers with one writer connection, an asyncio
lock and ``BEGIN IMMEDIATE``. Lost races (PostgreSQL, or another process) are caught by the
guarded ``UPDATE ... RETURNING`` and answered 409 ``ConcurrencyConflict``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from typing import Any

import pytest

from plugin_api.testing import Host, Result

from ._support import INVOICE, ITEM, TICKET, LabPlugin, audit_rows, is_postgres, snapshot


@pytest.fixture
def host(own_host: Host) -> Host:
    """A host of the test's own: these tests act in the tenant ``t1``."""
    return own_host


def assert_no_lock_errors(results: list[Result]) -> None:
    for result in results:
        text = json.dumps(result.json).lower()
        assert "locked" not in text and "busy" not in text, result.json
        assert result.status in (200, 409), result.json


async def test_50_concurrent_transitions_of_one_row_give_exactly_one_success(host: Host) -> None:
    url = host.database_url
    ticket = (
        await host.client(roles=["agent"]).action(TICKET + ".create", inputs={"title": "Race"})
    ).outputs["id"]
    clients = [host.client(actor=f"agent-{i}", roles=["agent"]) for i in range(50)]
    results = await asyncio.gather(
        *(client.action(TICKET + ".start", subject=ticket) for client in clients)
    )
    assert_no_lock_errors(results)
    winners = [i for i, result in enumerate(results) if result.status == 200]
    assert len(winners) == 1, Counter(r.status for r in results)
    kinds = Counter(result.error_kind for result in results if result.status == 409)
    assert sum(kinds.values()) == 49
    if is_postgres():
        assert set(kinds) <= {"WorkflowStateMismatch", "ConcurrencyConflict"}, kinds
    else:  # writers are serialised: every loser reads the winner's committed state
        assert kinds == {"WorkflowStateMismatch": 49}, kinds

    winner = results[winners[0]].outputs
    item = (await host.client().projection(TICKET + ".detail", subject=ticket)).item
    assert item is not None
    assert (item["state"], item["assignee"]) == ("in_progress", f"agent-{winners[0]}")
    assert item["_version"] == winner["_version"]
    (record,) = await audit_rows(url, action=TICKET + ".start")
    assert json.loads(record["outputs"]) == winner
    assert record["actor_id"] == f"agent-{winners[0]}"


async def test_200_concurrent_updates_over_10_rows(host: Host) -> None:
    url = host.database_url
    agent = host.client(actor="alice", roles=["agent"])
    tickets = [
        (await agent.action(TICKET + ".create", inputs={"title": f"row {n}"})).outputs["id"]
        for n in range(10)
    ]
    initial = {row["id"]: row["_version"] for row in (await snapshot(url, TICKET))[TICKET]}

    def request(i: int) -> Any:
        inputs = {"estimate_hours": i, "description": f"write {i}"}
        return agent.action(TICKET + ".edit", subject=tickets[i % 10], inputs=inputs)

    started = time.monotonic()
    results = await asyncio.gather(*(request(i) for i in range(200)))
    elapsed = time.monotonic() - started
    assert_no_lock_errors(results)
    for result in results:
        assert result.status == 200 or result.error_kind == "ConcurrencyConflict", result.json
    successes = {i: result.outputs for i, result in enumerate(results) if result.status == 200}
    conflicts = 200 - len(successes)
    print(f"200 concurrent updates: {len(successes)} ok, {conflicts} conflicts, {elapsed:.2f}s")
    if not is_postgres():
        assert conflicts == 0  # serialised writers never read a stale row

    versions = [outputs["_version"] for outputs in successes.values()]
    assert len(set(versions)) == len(versions)
    assert not set(versions) & set(initial.values())
    for i, outputs in successes.items():
        assert outputs == {
            "estimate_hours": i,
            "description": f"write {i}",
            "_version": outputs["_version"],
        }

    records = await audit_rows(url, action=TICKET + ".edit")
    assert len(records) == len(successes)
    by_version = {json.loads(r["outputs"])["_version"]: r for r in records}
    assert set(by_version) == set(versions)
    final = {row["id"]: row for row in (await snapshot(url, TICKET))[TICKET]}
    for ticket in tickets:
        committed = [r for r in records if r["subject_id"] == ticket]  # in commit order
        if not committed:
            assert final[ticket]["_version"] == initial[ticket]
            continue
        last = json.loads(committed[-1]["outputs"])
        row = final[ticket]
        assert (row["_version"], row["estimate_hours"], row["description"]) == (
            last["_version"],
            last["estimate_hours"],
            last["description"],
        )


async def test_concurrent_invoice_numbers_are_unique_and_gapless_per_tenant(host: Host) -> None:
    invoices: dict[str, list[str]] = {}
    money = {"amount": "1.00", "currency": "USD"}
    for tenant in ("t1", "t2"):
        clerk = host.client(tenant=tenant, roles=["clerk"])
        invoices[tenant] = [
            (
                await clerk.action(INVOICE + ".create", inputs={"customer": "c", "amount": money})
            ).outputs["id"]
            for _ in range(20)
        ]
    results = await asyncio.gather(
        *(
            host.client(tenant=tenant, roles=["clerk"]).action(INVOICE + ".issue", subject=invoice)
            for tenant, ids in invoices.items()
            for invoice in ids
        )
    )
    assert_no_lock_errors(results)
    assert {result.status for result in results} == {200}
    for n, _tenant in enumerate(("t1", "t2")):
        numbers = sorted(r.outputs["number"] for r in results[n * 20 : (n + 1) * 20])
        assert numbers == [f"INV-{k:05d}" for k in range(1, 21)]


async def test_reads_and_other_writes_during_a_long_write(lab_host: Host, lab: LabPlugin) -> None:
    """A write holding its transaction open neither blocks projection reads (which see the
    last committed state) nor loses a write queued behind it."""
    client = lab_host.client(actor="ida")
    slow_item = (await client.action(ITEM + ".add", inputs={"name": "before"})).outputs["id"]
    other_item = (await client.action(ITEM + ".add", inputs={"name": "other"})).outputs["id"]
    entered, release = asyncio.Event(), asyncio.Event()

    async def hold(ctx: Any) -> None:
        entered.set()
        await release.wait()

    lab.effect = hold
    slow = asyncio.ensure_future(
        client.action(ITEM + ".patch", subject=slow_item, inputs={"name": "after"})
    )
    await asyncio.wait_for(entered.wait(), 10)
    started = time.monotonic()
    view = await asyncio.wait_for(client.projection(ITEM + ".detail", subject=slow_item), 5)
    assert view.item is not None and view.item["name"] == "before"  # uncommitted: not visible
    assert time.monotonic() - started < 2
    queued = asyncio.ensure_future(
        client.action(ITEM + ".plain", subject=other_item, inputs={"name": "queued"})
    )
    await asyncio.sleep(0.05)
    release.set()
    first, second = await asyncio.wait_for(asyncio.gather(slow, queued), 10)
    assert first.outputs["name"] == "after" and second.outputs["name"] == "queued"
    view = await client.projection(ITEM + ".detail", subject=slow_item)
    assert view.item is not None and view.item["name"] == "after"
