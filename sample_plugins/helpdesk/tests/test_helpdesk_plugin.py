"""The helpdesk plugin's own tests, written as a third-party author would: only ``plugin_api``
and its pytest harness (the ``tessera_shared`` and ``tessera`` fixtures), nothing from the
host."""

# docs:start harness-imports
from __future__ import annotations

import pytest

from plugin_api.testing import Client, SharedHarness, TenantHost, TesseraHarness

TICKET = "helpdesk.ticket"
# docs:end harness-imports


# docs:start harness-fixtures
@pytest.fixture
async def host(tessera_shared: SharedHarness) -> TenantHost:
    # One host for the whole test session, and a tenant of this test's own.
    return await tessera_shared.start(plugins=["helpdesk"])


@pytest.fixture
def agent(host: TenantHost) -> Client:
    return host.client(actor="alice", roles=["agent"])


@pytest.fixture
def rita(host: TenantHost) -> Client:
    return host.client(actor="rita", roles=["requester"])


async def open_ticket(client: Client, title: str = "Printer on fire") -> str:
    result = await client.action(f"{TICKET}.create", inputs={"title": title})
    return str(result.outputs["id"])


# docs:end harness-fixtures


# docs:start harness-test
async def test_create_stamps_the_requester_and_seeds_the_workflow(rita: Client) -> None:
    ticket = await open_ticket(rita)
    detail = await rita.projection(f"{TICKET}.detail", subject=ticket)
    assert detail.item is not None
    assert detail.item["requester"] == "rita"
    assert detail.item["state"] == "open"
    assert detail.item["priority"] == "normal"


async def test_a_requester_cannot_start_a_ticket(rita: Client) -> None:
    ticket = await open_ticket(rita)
    result = await rita.action(f"{TICKET}.start", subject=ticket)
    assert (result.status, result.error_kind) == (403, "PolicyDenied")


# docs:end harness-test


async def test_workflow_from_open_to_closed(agent: Client, rita: Client) -> None:
    ticket = await open_ticket(rita)
    assert (await agent.action(f"{TICKET}.start", subject=ticket)).outputs["assignee"] == "alice"
    resolved = await agent.action(
        f"{TICKET}.resolve", subject=ticket, inputs={"resolution": "Unplugged it"}
    )
    assert resolved.outputs["state"] == "resolved"
    assert resolved.outputs["resolution"] == "Unplugged it"
    assert (await rita.action(f"{TICKET}.close", subject=ticket)).outputs["state"] == "closed"
    again = await agent.action(f"{TICKET}.start", subject=ticket)
    assert (again.status, again.error_kind) == (409, "WorkflowStateMismatch")


async def test_own_ticket_policy(host: TenantHost, agent: Client, rita: Client) -> None:
    ticket = await open_ticket(rita)
    await agent.action(f"{TICKET}.start", subject=ticket)
    await agent.action(f"{TICKET}.resolve", subject=ticket)
    sam = rita.as_(actor="sam")
    denied = await sam.action(f"{TICKET}.close", subject=ticket)
    assert (denied.status, denied.error_kind) == (403, "PolicyDenied")
    assert (await rita.action(f"{TICKET}.reopen", subject=ticket)).outputs["state"] == "open"


async def test_escalate_effect(agent: Client, rita: Client) -> None:
    ticket = await open_ticket(rita)
    escalated = await agent.action(f"{TICKET}.escalate", subject=ticket)
    assert escalated.outputs["priority"] == "urgent"
    assert set(escalated.outputs) == {"priority", "_version"}
    await agent.action(f"{TICKET}.cancel", subject=ticket)
    closed = await agent.action(f"{TICKET}.escalate", subject=ticket)
    assert (closed.status, closed.error_kind) == (409, "WorkflowStateMismatch")


async def test_queue_lists_the_tenant_tickets(agent: Client, rita: Client) -> None:
    first = await open_ticket(rita, "First")
    second = await open_ticket(rita, "Second")
    await open_ticket(rita.as_(tenant="globex"), "Elsewhere")
    queue = await agent.projection(f"{TICKET}.queue")
    assert [item["id"] for item in queue.items] == [first, second]
    assert [action["name"] for action in queue.json["actions"]] == ["create", "start", "escalate"]


# --- read access: the sample's scoped projection, and a read policy of another plugin ----------

from collections.abc import Mapping, Sequence  # noqa: E402

from tessera_helpdesk.plugin import open_tickets_only  # noqa: E402

from plugin_api import Projection, ReadAccess, ReadPolicyHandler, hookimpl  # noqa: E402


async def test_mine_shows_a_requester_their_tickets_and_an_agent_all(
    agent: Client, rita: Client
) -> None:
    own = await open_ticket(rita)
    other = await open_ticket(rita.as_(actor="sam"), "Monitor flickers")
    mine = await rita.projection(f"{TICKET}.mine")
    assert [item["id"] for item in mine.items] == [own]
    assert (await rita.projection(f"{TICKET}.mine", subject=other)).item is None
    every = await agent.projection(f"{TICKET}.mine")
    assert {item["id"] for item in every.items} == {own, other}


class Board:
    """Another plugin's projection of helpdesk tickets, guarded by a read policy."""

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        access = ReadAccess(policies=("board.open_only",))
        return (
            Projection(fqn="board.tickets", entity=TICKET, fields=("id", "state"), access=access),
        )

    @hookimpl
    def tessera_read_policies(self) -> Mapping[str, ReadPolicyHandler]:
        return {"board.open_only": open_tickets_only}


async def test_a_read_policy_denies_or_restricts_rows(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk"], extra=[("board", Board())])
    agent = host.client(tenant="acme", actor="alice", roles=["agent"])
    first = await open_ticket(agent)
    second = await open_ticket(agent, "Badge reader beeps")
    assert (await agent.action(f"{TICKET}.cancel", subject=second)).status == 200
    every = await agent.projection("board.tickets")
    assert {item["id"] for item in every.items} == {first, second}
    guest = await agent.as_(roles=["guest"]).projection("board.tickets")
    assert [item["id"] for item in guest.items] == [first]
    refused = await agent.as_(roles=["suspended"]).projection("board.tickets")
    assert (refused.status, refused.error_kind) == (403, "PolicyDenied")


# --- a batch policy: asked about a whole page at once ----------------------------------------


from tessera_helpdesk.limits import Limits  # noqa: E402


async def test_a_batch_policy_gives_its_reason_per_row(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk"], extra=[("limits", Limits())])
    agent = host.client(tenant="acme", actor="alice", roles=["agent"])
    rita = agent.as_(actor="rita", roles=["requester"])
    resolved = []
    for n in range(2):
        ticket = await open_ticket(rita, f"Resolved {n}")
        for step in ("start", "resolve"):
            assert (await agent.action(f"{TICKET}.{step}", subject=ticket)).status == 200
        resolved.append(ticket)
    for n in range(3):
        await open_ticket(rita, f"Open {n}")
    page = await agent.projection("limits.tickets", query={"acceptSchemaVersions": "1.2.0"})
    cells = {item["id"]: item["_availability"]["limits.reopen"] for item in page.items}
    refused = {
        "enabled": False,
        "kind": "PolicyDenied",
        "message": "rita already has 3 open tickets",
    }
    assert [cells[ticket] for ticket in resolved] == [refused, refused]
    answer = await agent.action("limits.reopen", subject=resolved[0], entity=TICKET)
    assert (answer.status, answer.json["error"]["message"]) == (403, refused["message"])
