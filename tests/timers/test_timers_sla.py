"""Time moves tickets (issue 41, docs/timers.md): the helpdesk's overdue escalation, fired by
the system on the session's shared host with its timer loop running, as HTTP clients see it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from host.storage.timers import FAILED
from host.timers.queries import list_timers, make_due
from plugin_api import FieldTimer, SystemActor, Timer, hookimpl
from plugin_api.testing import Client, SharedHarness, TenantHost

TICKET = "helpdesk.ticket"
DETAIL = f"{TICKET}.detail"
AGENT = ("agent",)


def instant(seconds: float) -> str:
    """RFC 3339 text ``seconds`` from now."""
    moment = datetime.now(timezone.utc) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def create(client: Client, **inputs: Any) -> str:
    result = await client.action(f"{TICKET}.create", inputs={"title": "Printer", **inputs})
    assert result.status == 200, result.json
    ticket_id: str = result.outputs["id"]
    return ticket_id


async def detail(client: Client, ticket: str) -> dict[str, Any]:
    item = (await client.projection(DETAIL, subject=ticket)).item
    assert item is not None
    return item


async def history(client: Client, ticket: str) -> list[dict[str, Any]]:
    result = await client.history(DETAIL, ticket)
    assert result.status == 200, result.json
    items: list[dict[str, Any]] = result.json["data"]["items"]
    return items


async def test_an_overdue_ticket_is_escalated_by_the_system_once(samples: TenantHost) -> None:
    agent = samples.client(actor="alice", roles=AGENT)
    ticket = await create(agent, due_at=instant(3))
    assert (await detail(agent, ticket))["priority"] == "normal"
    loop = asyncio.get_running_loop()
    started = loop.time()
    while (await detail(agent, ticket))["priority"] != "urgent":
        assert loop.time() - started < 15, "not escalated 15 s after due_at was 3 s ahead"
        await asyncio.sleep(0.1)
    assert loop.time() - started < 10
    await asyncio.sleep(1.2)  # more passes of the timer loop: it must not fire again
    records = await history(agent, ticket)
    assert [record["action"] for record in records] == [f"{TICKET}.escalate", f"{TICKET}.create"]
    escalation = records[0]
    assert escalation["actor"] == {"id": "system:helpdesk.sla", "roles": ["agent"]}
    assert escalation["via"] == [{"action": "timer:helpdesk.ticket.overdue", "plugin": "helpdesk"}]
    assert escalation["changes"] == {"priority": {"before": "normal", "after": "urgent"}}


async def test_a_due_at_already_past_schedules_nothing(samples: TenantHost) -> None:
    agent = samples.client(actor="alice", roles=AGENT)
    ticket = await create(agent, due_at=instant(-60))
    service = samples.app.extensions["tessera.service"]()
    assert await list_timers(service.storage, tenant=samples.tenant) == []
    await asyncio.sleep(0.8)  # a pass of the loop (0.5 s)
    assert (await detail(agent, ticket))["priority"] == "normal"
    assert len(await history(agent, ticket)) == 1


async def test_leaving_the_states_cancels_and_a_new_value_rearms(samples: TenantHost) -> None:
    agent = samples.client(actor="alice", roles=AGENT)
    service = samples.app.extensions["tessera.service"]()
    ticket = await create(agent, due_at=instant(3600))
    (armed,) = await list_timers(service.storage, tenant=samples.tenant)
    assert (armed.timer, armed.subject_id, armed.action) == (
        f"{TICKET}.overdue",
        ticket,
        f"{TICKET}.escalate",
    )
    later = instant(7200)
    edited = await agent.action(f"{TICKET}.edit", subject=ticket, inputs={"due_at": later})
    assert edited.status == 200, edited.json
    (rearmed,) = await list_timers(service.storage, tenant=samples.tenant)
    assert rearmed.id != armed.id and rearmed.due_at[:19] == later[:19]
    cancelled = await agent.action(f"{TICKET}.cancel", subject=ticket)
    assert cancelled.status == 200, cancelled.json
    assert await list_timers(service.storage, tenant=samples.tenant) == []


class AnyState:
    """A timer on the ticket's due_at in every state: it fires on a closed ticket too."""

    @hookimpl
    def tessera_timers(self) -> Sequence[Timer]:
        return (
            FieldTimer(
                name="anystate.ticket.due",
                entity=TICKET,
                field="due_at",
                action=f"{TICKET}.escalate",
                actor=SystemActor(name="anystate.sla", roles=("agent",)),
            ),
        )


async def test_a_refusal_is_the_timers_outcome_as_a_humans(tessera_shared: SharedHarness) -> None:
    host = await tessera_shared.start(
        plugins=["helpdesk"], extra=[("anystate", AnyState())], timers_poll=0.05
    )
    agent = host.client(actor="alice", roles=AGENT)
    service = host.app.extensions["tessera.service"]()
    ticket = await create(agent, due_at=instant(1.5))
    assert (await agent.action(f"{TICKET}.cancel", subject=ticket)).status == 200
    human = await agent.action(f"{TICKET}.escalate", subject=ticket)
    assert human.status == 409, human.json
    error = human.json["error"]
    loop = asyncio.get_running_loop()
    started = loop.time()
    while not (failed := await list_timers(service.storage, tenant=host.tenant, states=[FAILED])):
        assert loop.time() - started < 10, "the timer was not settled"
        await asyncio.sleep(0.05)
    assert failed[0].outcome == f"{error['kind']}: {error['message']}"
    assert [r["action"] for r in await history(agent, ticket)] == [
        f"{TICKET}.cancel",
        f"{TICKET}.create",
    ]


async def test_a_detail_at_1_5_0_shows_the_rows_pending_timers(samples: TenantHost) -> None:
    agent = samples.client(actor="alice", roles=AGENT)
    ticket = await create(agent, due_at="2031-01-02T03:04:05Z")
    newest = await agent.projection(DETAIL, subject=ticket, query={"acceptSchemaVersions": "1.5.0"})
    assert newest.status == 200, newest.json
    assert newest.json["schemaVersion"] == "1.5.0"
    assert newest.json["data"]["timers"] == [
        {
            "timer": f"{TICKET}.overdue",
            "action": f"{TICKET}.escalate",
            "dueAt": "2031-01-02T03:04:05Z",
            "overdue": False,
        }
    ]
    older = await agent.projection(DETAIL, subject=ticket, query={"acceptSchemaVersions": "1.4.0"})
    assert "timers" not in older.json["data"]


async def test_a_resolved_ticket_is_closed_by_the_autoclose_timer(samples: TenantHost) -> None:
    agent = samples.client(actor="alice", roles=AGENT)
    service = samples.app.extensions["tessera.service"]()
    ticket = await create(agent)
    requester = samples.client(actor="alice", roles=("requester",))
    # Resolved, reopened (cancels that timer), resolved again (arms a new one).
    for move in ("start", "resolve", "reopen", "start", "resolve"):
        actor = requester if move == "reopen" else agent
        answer = await actor.action(f"{TICKET}.{move}", subject=ticket)
        assert answer.status == 200, answer.json
    (armed,) = await list_timers(service.storage, tenant=samples.tenant)
    assert armed.timer == f"{TICKET}.autoclose"
    week = datetime.now(timezone.utc) + timedelta(days=7)
    assert armed.due_at[:13] == week.strftime("%Y-%m-%dT%H")
    assert await make_due(service.storage, samples.tenant, armed.id)
    loop = asyncio.get_running_loop()
    started = loop.time()
    while (await detail(agent, ticket))["state"] != "closed":
        assert loop.time() - started < 10, "the autoclose timer made due did not fire"
        await asyncio.sleep(0.1)
    (closing, *_) = await history(agent, ticket)
    assert closing["action"] == f"{TICKET}.close"
    assert closing["actor"]["id"] == "system:helpdesk.sla"
    assert await list_timers(service.storage, tenant=samples.tenant) == []
