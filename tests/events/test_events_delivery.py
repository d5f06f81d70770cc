"""Events through the real HTTP surface on the session's backend: one event per committed
action and none otherwise, order per subject, retries, dead letters and ``tessera events``."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from typing import Any

from plugin_api.testing import Client, Host, TesseraHarness

from ._support import Recorder, rows, until

TICKET = "helpdesk.ticket"
INVOICE = "billing.invoice"


def clients(host: Host) -> tuple[Client, Client, Client]:
    agent = host.client(actor="alice", roles=["agent"])
    requester = host.client(actor="rita", roles=["requester"])
    clerk = host.client(actor="carl", roles=["clerk", "accountant"])
    return agent, requester, clerk


async def deliveries(host: Host, where: str = "1 = 1") -> list[dict[str, Any]]:
    return await rows(host.database_url, f"SELECT * FROM tessera_deliveries WHERE {where}")


async def test_one_event_per_committed_action_and_none_for_a_refused_one(
    events_host: Host, recorder: Recorder
) -> None:
    agent, requester, clerk = clients(events_host)
    committed: list[tuple[str, str]] = []

    async def act(client: Client, fqn: str, subject: str | None = None, **inputs: Any) -> Any:
        result = await client.action(fqn, subject=subject, inputs=inputs)
        if result.status == 200:
            committed.append((fqn, subject or result.outputs["id"]))
        return result

    ticket = (await act(requester, f"{TICKET}.create", title="printer")).outputs["id"]
    other = (await act(requester, f"{TICKET}.create", title="screen")).outputs["id"]
    refused = [
        await act(requester, f"{TICKET}.start", ticket),  # 403: role
        await act(agent, f"{TICKET}.resolve", ticket),  # 409: workflow gate
        await act(agent, f"{TICKET}.edit", ticket, priority="bogus"),  # 400: input
        await act(requester, f"{TICKET}.create"),  # 400: missing title
    ]
    await act(agent, f"{TICKET}.start", ticket)
    await act(agent, f"{TICKET}.resolve", ticket, resolution="replaced toner")
    await act(agent, f"{TICKET}.close", ticket)
    # The escalate effect raises on a closed ticket: its transaction is rolled back.
    refused.append(await act(agent, f"{TICKET}.escalate", ticket))
    await act(agent, f"{TICKET}.escalate", other)
    invoice = (
        await act(
            clerk,
            f"{INVOICE}.create",
            customer="ACME",
            amount={"amount": "10.00", "currency": "USD"},
        )
    ).outputs
    await act(clerk, f"{INVOICE}.issue", invoice["id"])
    refused.append(await act(clerk, f"{INVOICE}.issue", invoice["id"]))  # 409: gate
    assert [r.status for r in refused] == [403, 409, 400, 400, 409, 409]

    async def all_delivered() -> bool:
        return len(recorder.seen["lab.all"]) >= len(committed)

    await until(all_delivered)
    await asyncio.sleep(0.2)  # nothing more arrives
    seen = recorder.seen["lab.all"]
    assert Counter((e.action, e.subject_id) for e in seen) == Counter(committed)
    assert len({e.id for e in seen}) == len(seen)
    # Each event is the action's audit record, with its outputs.
    audit = {
        r["id"]: r for r in await rows(events_host.database_url, "SELECT * FROM tessera_audit")
    }
    for event in seen:
        record = audit[event.id]
        assert (record["action"], record["subject_id"]) == (event.action, event.subject_id)
        assert json.loads(record["outputs"]) == event.outputs
        assert (event.tenant_id, event.occurred_at) == ("t1", record["created_at"])
        assert event.graph_hash == record["graph_hash"]
    # The notification the helpdesk's subscriber wrote is audited but is not an event.
    assert not [e for e in seen if e.entity == "helpdesk.notification"]
    assert any(r["entity"] == "helpdesk.notification" for r in audit.values())
    # lab.tickets only got ticket events; the delivered rows are gone.
    assert {e.entity for e in recorder.seen["lab.tickets"]} == {TICKET}
    assert await deliveries(events_host, "subscriber = 'lab.all'") == []


async def test_events_of_one_subject_arrive_in_commit_order_despite_retries(
    events_host: Host, recorder: Recorder
) -> None:
    random.seed(16)
    recorder.fail_first = 0.5
    agent, requester, _ = clients(events_host)
    ids = [
        (await requester.action(f"{TICKET}.create", inputs={"title": f"t{i}"})).outputs["id"]
        for i in range(4)
    ]

    async def edits(ticket: str) -> None:
        for n in range(6):
            result = await agent.action(
                f"{TICKET}.edit", subject=ticket, inputs={"title": f"edit {n}"}
            )
            assert result.status == 200, result.json

    await asyncio.gather(*(edits(ticket) for ticket in ids))
    total = 4 * 7

    async def all_delivered() -> bool:
        return len(recorder.seen["lab.tickets"]) >= total

    await until(all_delivered)
    retried = [attempt for _, attempt in recorder.attempts["lab.tickets"] if attempt > 1]
    assert retried, "some first attempts failed and were retried"
    audit = await rows(
        events_host.database_url,
        f"SELECT id, subject_id FROM tessera_audit WHERE entity = '{TICKET}' ORDER BY seq",
    )
    for ticket in ids:
        committed = [r["id"] for r in audit if r["subject_id"] == ticket]
        delivered = [e.id for e in recorder.seen["lab.tickets"] if e.subject_id == ticket]
        assert delivered == committed


async def test_a_failing_subscriber_goes_dead_without_holding_up_others(
    events_host: Host, recorder: Recorder
) -> None:
    _, _, clerk = clients(events_host)
    created = [
        (
            await clerk.action(
                f"{INVOICE}.create",
                inputs={"customer": c, "amount": {"amount": "1.00", "currency": "USD"}},
            )
        ).outputs["id"]
        for c in ("a", "b")
    ]

    async def dead() -> bool:
        found = await deliveries(events_host, "subscriber = 'lab.broken' AND state = 'dead'")
        return len(found) == 2

    await until(dead)
    broken = await deliveries(events_host, "subscriber = 'lab.broken'")
    assert {(r["state"], r["attempts"]) for r in broken} == {("dead", 3)}
    assert all("broken subscriber" in r["last_error"] for r in broken)
    assert Counter(a for _, a in recorder.attempts["lab.broken"]) == {1: 2, 2: 2, 3: 2}
    # Other subscribers got both events; a dead delivery holds back nothing of its subject.
    assert {e.subject_id for e in recorder.seen["lab.all"]} >= set(created)
    await clerk.action(f"{INVOICE}.issue", subject=created[0])

    async def issued() -> bool:
        return any(e.action == f"{INVOICE}.issue" for e in recorder.seen["lab.all"])

    await until(issued)

    env = {**os.environ, "TESSERA_DATABASE_URL": events_host.database_url}

    async def tessera(*args: str) -> subprocess.CompletedProcess[str]:
        # In a thread: the host runs on this test's event loop, and a write of its own
        # (the dispatcher's) may hold SQLite's write lock across an await; a blocked loop
        # would keep it held while the command waits for it, until its busy timeout.
        return await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "host", "events", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    stats = await tessera("stats", "--json")
    assert stats.returncode == 0, stats.stderr
    by_name = {s["subscriber"]: s for s in map(json.loads, stats.stdout.splitlines())}
    assert (by_name["lab.broken"]["dead"], by_name["lab.broken"]["pending"]) == (2, 0)
    assert by_name["lab.broken"]["lag_s"] is None
    listed = await tessera("list", "--state", "dead", "--json")
    assert {json.loads(line)["subject_id"] for line in listed.stdout.splitlines()} == set(created)
    assert "lab.broken" in (await tessera("stats")).stdout
    missing = await tessera("retry", "01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert (missing.returncode, missing.stdout) == (1, "0 dead deliveries pending again\n"), (
        missing.stderr
    )

    recorder.broken = False
    retried = await tessera("retry", "--all-dead")
    assert (retried.returncode, retried.stdout) == (0, "2 dead deliveries pending again\n"), (
        retried.stderr
    )

    async def delivered() -> bool:
        # The handler ran for both, and the dispatcher committed both deliveries (it records
        # a delivery after its handler returns: a moment later on a loaded machine).
        return len(recorder.seen["lab.broken"]) == 2 and not await deliveries(
            events_host, "subscriber = 'lab.broken'"
        )

    await until(delivered)
    assert await deliveries(events_host, "subscriber = 'lab.broken'") == []
    after = (await tessera("stats")).stdout
    assert after.strip() in {"no deliveries waiting", ""} or "lab.broken" not in after


async def test_a_handler_over_its_timeout_is_retried(events_host: Host, recorder: Recorder) -> None:
    recorder.slow_s = 5.0  # lab.tickets' timeout is 1 s
    _, requester, _ = clients(events_host)
    await requester.action(f"{TICKET}.create", inputs={"title": "slow"})

    async def first_attempt() -> bool:
        return bool(recorder.attempts["lab.tickets"])

    await until(first_attempt)
    recorder.slow_s = 0.0

    async def delivered() -> bool:
        return bool(recorder.seen["lab.tickets"])

    await until(delivered)
    assert [a for _, a in recorder.attempts["lab.tickets"]] == [1, 2]


async def test_the_requester_is_notified_once_per_resolution(events_host: Host) -> None:
    agent, requester, _ = clients(events_host)
    other = events_host.client(actor="otto", roles=["requester"])
    ticket = (await requester.action(f"{TICKET}.create", inputs={"title": "vpn"})).outputs["id"]
    await agent.action(f"{TICKET}.start", subject=ticket)
    await agent.action(f"{TICKET}.resolve", subject=ticket, inputs={"resolution": "new key"})

    async def inbox(client: Client, count: int) -> bool:
        return len((await client.projection("helpdesk.notification.inbox")).items) == count

    await until(lambda: inbox(requester, 1))
    [note] = (await requester.projection("helpdesk.notification.inbox")).items
    assert note["recipient"] == "rita" and note["ticket"] == ticket
    assert note["message"] == "Your ticket 'vpn' was resolved: new key"
    assert (await requester.action(f"{TICKET}.reopen", subject=ticket)).status == 200
    assert (await agent.action(f"{TICKET}.start", subject=ticket)).status == 200
    again = await agent.action(f"{TICKET}.resolve", subject=ticket, inputs={"resolution": "again"})
    assert again.status == 200
    await until(lambda: inbox(requester, 2))
    assert await inbox(other, 0)
    await asyncio.sleep(0.2)
    assert await inbox(agent, 2)  # agents read every notification; none was written twice


async def test_tessera_events_run_delivers_for_web_workers_that_do_not(
    tessera: TesseraHarness,
) -> None:
    host = await tessera.start(plugins=["helpdesk", "billing"], events_dispatch=False)
    agent, requester, _ = clients(host)
    ticket = (await requester.action(f"{TICKET}.create", inputs={"title": "x"})).outputs["id"]
    await agent.action(f"{TICKET}.start", subject=ticket)
    await agent.action(f"{TICKET}.resolve", subject=ticket, inputs={"resolution": "done"})
    assert len(await deliveries(host)) == 1  # written by the action, delivered by nobody yet
    env = {
        **os.environ,
        "TESSERA_DATABASE_URL": host.database_url,
        "TESSERA_PLUGINS_ONLY": "helpdesk,billing",
        "TESSERA_EVENTS_POLL_S": "0.05",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "host", "events", "run"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:

        async def delivered() -> bool:
            return not await deliveries(host)

        await until(delivered)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert b"delivering events" in out
    [note] = (await requester.projection("helpdesk.notification.inbox")).items
    assert note["message"] == "Your ticket 'x' was resolved: done"
