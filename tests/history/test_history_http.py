"""Record history through HTTP, on the backend of the run (docs/history.md): the history of a
row after a create, updates, transitions and a data-API write from another plugin's effect;
paging; the reader's row scope; ``asOf`` against snapshots of the detail taken on the way."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from plugin_api import (
    Action,
    ActionContext,
    CreateAction,
    EffectHandler,
    Entity,
    Field,
    FieldType,
    hookimpl,
)
from plugin_api.testing import Client, Host, Result, TesseraHarness

TICKET = "helpdesk.ticket"
DETAIL = f"{TICKET}.detail"
MINE = f"{TICKET}.mine"
BILLING = f"{TICKET}.billing"


@pytest.fixture
async def host(tessera: TesseraHarness) -> Host:
    return await tessera.start(plugins=["helpdesk", "billing", "billing_helpdesk"])


async def ok(result: Result) -> dict[str, Any]:
    assert result.status == 200, result.json
    return result.outputs


async def detail(client: Client, ticket: str, **query: str) -> Result:
    return await client.projection(DETAIL, subject=ticket, query=query)


async def history(client: Client, ticket: str, projection: str = DETAIL, **query: str) -> Result:
    return await client.request(
        "GET", f"/projections/{projection}/history", query={"subject": ticket, **query}
    )


async def every_item(client: Client, ticket: str, page_size: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = {"pageSize": str(page_size)}
        if cursor is not None:
            query["cursor"] = cursor
        page = await history(client, ticket, **query)
        assert page.status == 200, page.json
        assert len(page.json["data"]["items"]) <= page_size
        items.extend(page.json["data"]["items"])
        cursor = page.json["data"]["pagination"]["nextCursor"]
        if cursor is None:
            return items


async def assert_as_of(
    client: Client, ticket: str, snapshots: list[dict[str, Any]], key: str
) -> None:
    """``asOf`` each snapshot's ``key`` (its version or its instant) renders that snapshot."""
    for snapshot in snapshots:
        result = await detail(client, ticket, asOf=snapshot[key])
        assert result.status == 200, result.json
        assert result.item == snapshot


async def _story(host: Host) -> tuple[str, list[dict[str, Any]]]:
    """A ticket created by alice, edited, started, charged (billing's effect patches the
    ticket through the data API) and resolved; returns its id and the detail after each
    step, oldest first."""
    alice = host.client(actor="alice", roles=["requester"])
    agent = host.client(actor="ann", roles=["agent", "clerk"])
    snapshots: list[dict[str, Any]] = []

    async def snap() -> None:
        item = (await detail(agent, ticket)).item
        assert item is not None
        snapshots.append(item)

    created = await ok(
        await alice.action(f"{TICKET}.create", inputs={"title": "printer jam", "billable": True})
    )
    ticket = created["id"]
    await snap()
    await ok(
        await agent.action(
            f"{TICKET}.edit", subject=ticket, inputs={"priority": "high", "estimate_hours": 3}
        )
    )
    await snap()
    await ok(await agent.action(f"{TICKET}.start", subject=ticket))
    await snap()
    usd = {"amount": "90.00", "currency": "USD"}
    await ok(
        await agent.action(
            "billing.charge.create", inputs={"ticket": ticket, "hours": 2, "amount": usd}
        )
    )
    await snap()
    await ok(
        await agent.action(f"{TICKET}.resolve", subject=ticket, inputs={"resolution": "fixed"})
    )
    await snap()
    return ticket, snapshots


async def test_history_names_every_write_newest_first(host: Host) -> None:
    ticket, snapshots = await _story(host)
    agent = host.client(actor="ann", roles=["agent"])

    page = await history(agent, ticket)

    assert page.status == 200, page.json
    assert page.json["ok"] is True
    items = page.json["data"]["items"]
    assert [item["action"] for item in items] == [
        f"{TICKET}.resolve",
        "billing.charge.create",
        f"{TICKET}.start",
        f"{TICKET}.edit",
        f"{TICKET}.create",
    ]
    assert [item["actor"]["id"] for item in items] == ["ann"] * 4 + ["alice"]
    assert items[-1]["actor"]["roles"] == ["requester"]
    versions = [snapshot["_version"] for snapshot in snapshots]
    assert [item["versionAfter"] for item in reversed(items)] == versions
    assert [item["versionBefore"] for item in reversed(items)] == [None, *versions[:-1]]
    assert [item["at"] for item in reversed(items)] == [s["updated_at"] for s in snapshots]
    assert page.json["data"]["pagination"] == {"pageSize": 50, "nextCursor": None}

    resolve, charge, start, edit, create = (item["changes"] for item in items)
    assert create["title"] == {"before": None, "after": "printer jam"}
    assert create["state"] == {"before": None, "after": "open"}
    assert create["requester"] == {"before": None, "after": "alice"}
    assert create["billable"] == {"before": None, "after": True}
    assert edit == {
        "priority": {"before": "normal", "after": "high"},
        "estimate_hours": {"before": None, "after": 3},
    }
    assert start == {
        "state": {"before": "open", "after": "in_progress"},
        "assignee": {"before": None, "after": "ann"},
    }
    # the data API's patch of `invoice`: a field the detail projection does not show
    assert charge == {}
    assert resolve["state"] == {"before": "in_progress", "after": "resolved"}
    assert resolve["resolution"] == {"before": None, "after": "fixed"}
    assert resolve["resolved_at"]["before"] is None
    assert resolve["resolved_at"]["after"] == snapshots[-1]["resolved_at"]

    billing = await history(agent, ticket, projection=BILLING)
    invoiced = billing.json["data"]["items"][1]
    assert invoiced["action"] == "billing.charge.create"
    assert invoiced["changes"]["invoice"]["before"] is None
    assert invoiced["changes"]["invoice"]["after"] is not None


async def test_history_pages_follow_the_cursor(host: Host) -> None:
    ticket, _ = await _story(host)
    agent = host.client(actor="ann", roles=["agent"])
    whole = (await history(agent, ticket)).json["data"]["items"]

    for size in (1, 2, 4, 5):
        assert await every_item(agent, ticket, size) == whole


@pytest.mark.parametrize(
    "query", [{"pageSize": "0"}, {"pageSize": "x"}, {"pageSize": "501"}, {"cursor": "abc"}]
)
async def test_bad_paging_parameters_are_400(host: Host, query: dict[str, str]) -> None:
    ticket, _ = await _story(host)
    result = await history(host.client(actor="ann", roles=["agent"]), ticket, **query)
    assert result.status == 400
    assert result.json["error"]["kind"] == "BadRequest"


async def test_a_reader_outside_the_row_scope_gets_what_an_unknown_row_gets(
    host: Host,
) -> None:
    ticket, _ = await _story(host)
    bob = host.client(actor="bob", roles=["requester"])
    alice = host.client(actor="alice", roles=["requester"])
    unknown = "01J00000000000000000000000"

    own = await history(alice, ticket, projection=MINE)
    hidden = await history(bob, ticket, projection=MINE)
    missing = await history(bob, unknown, projection=MINE)
    other_tenant = await history(host.client(tenant="t2", actor="ann", roles=["agent"]), ticket)

    assert own.status == 200 and len(own.json["data"]["items"]) == 5
    for refused, asked in ((hidden, ticket), (missing, unknown), (other_tenant, ticket)):
        assert refused.status == 404, refused.json
        assert refused.json == {
            "ok": False,
            "error": {"kind": "NotFound", "message": f"No {TICKET} with id '{asked}'"},
        }
    lacking_role = await history(host.client(actor="eve", roles=["viewer"]), ticket, MINE)
    assert lacking_role.status == 403
    assert lacking_role.json["error"]["kind"] == "PolicyDenied"


async def test_history_of_an_unknown_projection_or_without_subject(host: Host) -> None:
    agent = host.client(actor="ann", roles=["agent"])
    unknown = await agent.request("GET", "/projections/helpdesk.nope/history?subject=x")
    assert unknown.status == 404
    assert unknown.json["error"]["kind"] == "ProjectionNotFound"
    bare = await agent.request("GET", f"/projections/{DETAIL}/history")
    assert bare.status == 400


async def test_as_of_a_version_renders_the_detail_as_it_was(host: Host) -> None:
    ticket, snapshots = await _story(host)
    agent = host.client(actor="ann", roles=["agent"])

    await assert_as_of(agent, ticket, snapshots, "_version")
    now = (await detail(agent, ticket)).json
    again = (await detail(agent, ticket, asOf=snapshots[-1]["_version"])).json
    for document in (now, again):
        document["metadata"].pop("generatedAt")
    assert again == now  # the latest version: the detail as it is, byte for byte


async def test_as_of_an_instant_renders_the_last_write_at_or_before_it(host: Host) -> None:
    ticket, snapshots = await _story(host)
    agent = host.client(actor="ann", roles=["agent"])

    await assert_as_of(agent, ticket, snapshots, "updated_at")
    before = await detail(agent, ticket, asOf="2000-01-01T00:00:00Z")
    assert before.status == 400
    assert before.json["error"]["kind"] == "BadRequest"
    later = await detail(agent, ticket, asOf="9999-01-01T00:00:00Z")
    assert later.item == snapshots[-1]


async def test_as_of_a_version_that_is_not_this_rows_is_400(host: Host) -> None:
    ticket, _ = await _story(host)
    _, other_snapshots = await _story(host)
    agent = host.client(actor="ann", roles=["agent"])

    for value in (other_snapshots[0]["_version"], "01J00000000000000000000000", "yesterday"):
        result = await detail(agent, ticket, asOf=value)
        assert result.status == 400, result.json
        assert result.json["error"]["kind"] == "BadRequest"


async def test_as_of_a_row_the_reader_may_not_see_is_the_detail_of_no_row(host: Host) -> None:
    ticket, snapshots = await _story(host)
    bob = host.client(actor="bob", roles=["requester"])

    result = await bob.projection(MINE, subject=ticket, query={"asOf": snapshots[0]["_version"]})

    assert result.status == 200
    assert result.item is None


async def test_records_written_before_history_was_kept_show_what_they_have(
    tessera: TesseraHarness,
) -> None:
    """A database whose audit table predates issue 26 gets the new columns at start; its
    records show no changes (and the version an update reported), and asOf cannot go back
    across them."""
    import sqlalchemy as sa
    from databases import Database
    from sqlalchemy.schema import CreateTable

    old = sa.MetaData()
    sa.Table(
        "tessera_audit",
        old,
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        *(
            sa.Column(name, sa.Text, nullable=False)
            for name in ("id", "tenant_id", "actor_id", "roles", "action", "entity")
        ),
        *(
            sa.Column(name, sa.Text, nullable=False)
            for name in ("subject_id", "inputs", "outputs", "graph_hash", "created_at")
        ),
    )
    async with Database(tessera.database_url) as db:
        for table in old.sorted_tables:
            await db.execute(CreateTable(table))
    host = await tessera.start(plugins=["helpdesk"])
    agent = host.client(actor="ann", roles=["agent"])
    ticket = (await ok(await agent.action(f"{TICKET}.create", inputs={"title": "old"})))["id"]
    edited = await ok(await agent.action(f"{TICKET}.edit", subject=ticket, inputs={"title": "x"}))
    first = (await detail(agent, ticket)).item
    assert first is not None
    async with Database(tessera.database_url) as db:  # as an older host wrote them
        await db.execute("UPDATE tessera_audit SET version = NULL, changes = NULL")
    await ok(await agent.action(f"{TICKET}.edit", subject=ticket, inputs={"title": "new"}))

    items = (await history(agent, ticket)).json["data"]["items"]

    assert [item["changes"] for item in items] == [
        {"title": {"before": "x", "after": "new"}},
        None,
        None,
    ]
    assert [item["versionAfter"] for item in items][1:] == [edited["_version"], None]
    assert items[0]["versionBefore"] == edited["_version"]
    back = await detail(agent, ticket, asOf=edited["_version"])
    assert back.item == first
    too_far = await detail(agent, ticket, asOf=items[2]["at"])
    assert too_far.status == 400
    assert "does not hold the values" in too_far.json["error"]["message"]


class HistoryReader:
    """A plugin whose create action records what ``ctx.data.history`` says of a ticket."""

    note = Entity(
        fqn="lab.note",
        fields=(
            Field(name="ticket", type=FieldType.REFERENCE, target=TICKET),
            Field(name="seen", type=FieldType.STRING, nullable=True),
        ),
    )

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (self.note,)

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(
                fqn="lab.note.create", entity="lab.note", inputs=("ticket",), effect="lab.look"
            ),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        async def look(ctx: ActionContext) -> None:
            ticket = ctx.changes["ticket"]
            newest = await ctx.data.history(TICKET, ticket, limit=2)
            older = await ctx.data.history(TICKET, ticket, before=newest[-1].seq)
            records = [*newest, *older]
            with pytest.raises(ValueError):
                await ctx.data.history(TICKET, ticket, limit=0)
            summary = [
                [r.action, r.actor_id, r.version_before, r.version_after, r.changes]
                for r in records
            ]
            ctx.set("seen", json.dumps(summary))

        return {"lab.look": look}


async def test_the_data_api_reads_a_rows_history(tessera: TesseraHarness) -> None:
    host = await tessera.start(
        plugins=["helpdesk", "billing", "billing_helpdesk"], extra=[("lab", HistoryReader())]
    )
    ticket, snapshots = await _story(host)
    agent = host.client(actor="ann", roles=["agent"])

    created = await ok(await agent.action("lab.note.create", inputs={"ticket": ticket}))

    seen = json.loads(created["seen"])
    assert [row[0] for row in seen] == [
        f"{TICKET}.resolve",
        "billing.charge.create",
        f"{TICKET}.start",
        f"{TICKET}.edit",
        f"{TICKET}.create",
    ]
    versions = [s["_version"] for s in snapshots]
    assert [row[3] for row in reversed(seen)] == versions
    assert [row[2] for row in reversed(seen)] == [None, *versions[:-1]]
    assert seen[1][4]["invoice"][0] is None and seen[1][4]["invoice"][1] is not None
    assert seen[3][4] == {"priority": ["normal", "high"], "estimate_hours": [None, 3]}
