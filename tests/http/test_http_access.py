"""Read access control through HTTP, on the backend of the run: projection roles (403),
row scope (lists, pages, filters, search, cursors, details), read policies with typed row
conditions, actions offered at 1.1.0, and the compiler's checks.

The ground truth of every scoped read is the unscoped detail projection of the same tenant
(every row, as stored)."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host.graph import GraphError
from plugin_api import (
    CreateAction,
    Entity,
    Field,
    FieldType,
    Projection,
    ReadAccess,
    ReadContext,
    ReadPolicyHandler,
    ReadPolicyResult,
    RowCondition,
    RowScope,
    hookimpl,
)
from plugin_api.testing import Client, Host, TesseraHarness

from .test_http_contract import assert_envelope

MINE = "helpdesk.ticket.mine"
DESK = "billing.invoice.desk"
TENANTS = ("t1", "t2")
ACTORS = ("alice", "bob", "carol")
PRIORITIES = ("low", "normal", "high", "urgent")
V11 = {"acceptSchemaVersions": "1.1.0"}


async def _seed(host: Host) -> dict[str, list[dict[str, Any]]]:
    """Tickets of several requesters in two tenants; returns every row per tenant."""
    titles = itertools.count()
    for tenant in TENANTS:
        for i, actor in enumerate(ACTORS * 3):
            client = host.client(tenant=tenant, actor=actor, roles=["requester"])
            title = f"{tenant}-{actor}-{'printer' if i % 2 else 'mail'}-{next(titles)}"
            inputs = {"title": title, "priority": PRIORITIES[i % 4]}
            result = await client.action("helpdesk.ticket.create", inputs=inputs)
            assert result.status == 200, result.json
    truth: dict[str, list[dict[str, Any]]] = {}
    for tenant in TENANTS:
        result = await host.client(tenant=tenant).projection("helpdesk.ticket.detail")
        truth[tenant] = result.items
    return truth


async def _all_pages(client: Client, query: Mapping[str, str]) -> list[dict[str, Any]] | int:
    """Every item of a paged list (following nextCursor), or the status of a refusal."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = dict(query)
        if cursor is not None:
            params["cursor"] = cursor
        result = await client.projection(MINE, query=params)
        if result.status != 200:
            return result.status
        items.extend(result.items)
        cursor = result.json["data"]["pagination"]["nextCursor"]
        if cursor is None:
            return items


def _visible(rows: Sequence[dict[str, Any]], actor: str, roles: set[str]) -> set[str]:
    if "agent" in roles:
        return {row["id"] for row in rows}
    return {row["id"] for row in rows if row["requester"] == actor}


async def test_projection_roles_refuse_with_policy_denied_and_cors(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk", "billing"])
    clerk = host.client(actor="cleo", roles=["clerk"])
    amount = {"amount": "12.00", "currency": "USD"}
    created = await clerk.action(
        "billing.invoice.create", inputs={"customer": "A", "amount": amount}
    )
    assert created.status == 200
    invoice = created.outputs["id"]
    for subject in (None, invoice):
        allowed = await clerk.projection(DESK, subject=subject)
        assert allowed.status == 200
        for roles in ([], ["accountant"], ["requester", "agent"]):
            denied = await clerk.as_(roles=roles).projection(DESK, subject=subject)
            assert_envelope(denied, 403, "PolicyDenied")
            assert "clerk" in denied.json["error"]["message"]
            assert invoice not in denied.body.decode()
    assert [i["id"] for i in (await clerk.projection(DESK)).items] == [invoice]
    # Unscoped projections read as in v0.1, whoever asks: the sample plugins' contract
    # (sample-plugins.md) keeps every listed projection's behaviour, so the invoices take no
    # entity read floor (docs/writing-plugins.md, "Read floor"; the compiler warns about it).
    anyone = await host.client().projection("billing.invoice.list")
    assert anyone.status == 200 and [i["id"] for i in anyone.items] == [invoice]
    # A requester or an agent may read the scoped ticket list; nobody else.
    for roles in ([], ["clerk"]):
        refused = await host.client(actor="x", roles=roles).projection(MINE)
        assert refused.status == 403 and refused.error_kind == "PolicyDenied"


async def test_scoped_lists_and_details(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk"])
    truth = await _seed(host)
    for tenant in TENANTS:
        every = {row["id"] for row in truth[tenant]}
        agent = host.client(tenant=tenant, actor="zed", roles=["agent"])
        listed = await agent.projection(MINE)
        assert listed.status == 200
        assert [i["id"] for i in listed.items] == sorted(every)  # id order, as in v0.1
        assert listed.json["schemaVersion"] == "1.0.0"
        for actor in ACTORS:
            requester = host.client(tenant=tenant, actor=actor, roles=["requester"])
            mine = _visible(truth[tenant], actor, {"requester"})
            assert len(mine) == 3
            result = await requester.projection(MINE)
            assert [i["id"] for i in result.items] == sorted(mine)
            assert all(i["requester"] == actor for i in result.items)
            # Pages, filter and search apply inside the scope.
            paged = await _all_pages(requester, {"pageSize": "1", "sort": "title"})
            assert isinstance(paged, list) and {i["id"] for i in paged} == mine
            high = await requester.projection(MINE, query={"filter.priority": "high"})
            expected = {
                r["id"] for r in truth[tenant] if r["id"] in mine and r["priority"] == "high"
            }
            assert {i["id"] for i in high.items} == expected
            found = await requester.projection(MINE, query={"q": "PRINTER"})
            expected = {
                r["id"] for r in truth[tenant] if r["id"] in mine and "printer" in r["title"]
            }
            assert {i["id"] for i in found.items} == expected
            # A detail out of scope answers exactly like an unknown subject.
            for row in truth[tenant]:
                detail = await requester.projection(MINE, subject=row["id"])
                assert detail.status == 200
                if row["id"] in mine:
                    assert detail.item is not None and detail.item["id"] == row["id"]
                    assert (await agent.projection(MINE, subject=row["id"])).item == detail.item
                else:
                    unknown = await requester.projection(MINE, subject="no-such-row")
                    assert detail.item is None
                    assert _without_time(detail.json) == _without_time(unknown.json)
        # Nothing of the other tenant, whoever reads.
        other = next(t for t in TENANTS if t != tenant)
        for row in truth[other]:
            assert (await agent.projection(MINE, subject=row["id"])).item is None


def _without_time(document: dict[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in document["metadata"].items() if k != "generatedAt"}
    return {**document, "metadata": metadata}


async def test_cursor_cannot_be_replayed_by_another_reader(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk"])
    await _seed(host)
    alice = host.client(tenant="t1", actor="alice", roles=["requester"])
    first = await alice.projection(MINE, query={"pageSize": "1"})
    cursor = first.json["data"]["pagination"]["nextCursor"]
    assert cursor is not None
    assert (await alice.projection(MINE, query={"pageSize": "1", "cursor": cursor})).status == 200
    for other in (
        alice.as_(actor="bob"),
        alice.as_(roles=["agent"]),
        alice.as_(roles=["requester", "agent"]),
    ):
        replay = await other.projection(MINE, query={"pageSize": "1", "cursor": cursor})
        assert replay.status == 400 and replay.error_kind == "BadRequest"


async def test_actions_offered_by_role_at_1_1_0(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk"])
    requester = host.client(actor="alice", roles=["requester"])
    created = await requester.action("helpdesk.ticket.create", inputs={"title": "T"})
    ticket = created.outputs["id"]
    agent = requester.as_(roles=["agent"])
    declared = ["create", "start", "close", "reopen"]
    expected = {
        requester: ["create", "close", "reopen"],
        agent: ["create", "start", "close"],
    }
    for client, names in expected.items():
        for subject in (None, ticket):
            old = await client.projection(MINE, subject=subject)
            assert [a["name"] for a in old.json["actions"]] == declared  # 1.0.0: as declared
            new = await client.projection(MINE, subject=subject, query=V11)
            assert new.json["schemaVersion"] == "1.1.0"
            assert [a["name"] for a in new.json["actions"]] == names
    # An unscoped projection offers every declared action at 1.1.0, whoever reads.
    queue = await requester.projection("helpdesk.ticket.queue", query=V11)
    assert [a["name"] for a in queue.json["actions"]] == ["create", "start", "escalate"]


# --- read policies with typed row conditions -------------------------------------------------

NOTE = "acme.note"


class NotesPlugin:
    """Notes with a read policy: auditors see public notes only, ``banned`` is refused,
    anyone else sees every note."""

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=NOTE,
                fields=(
                    Field(name="body", type=FieldType.STRING),
                    Field(name="public", type=FieldType.BOOLEAN, default=False),
                    Field(name="level", type=FieldType.INTEGER, nullable=True),
                ),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[CreateAction]:
        return (
            CreateAction(fqn=f"{NOTE}.create", entity=NOTE, inputs=("body", "public", "level")),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(
                fqn=f"{NOTE}.list",
                entity=NOTE,
                fields=("id", "body", "public", "level"),
                access=ReadAccess(policies=("acme.notes",)),
            ),
        )

    @hookimpl
    def tessera_read_policies(self) -> Mapping[str, ReadPolicyHandler]:
        async def notes(ctx: ReadContext) -> ReadPolicyResult:
            await asyncio.sleep(0)
            if "banned" in ctx.roles:
                return False
            if "auditor" in ctx.roles:
                return (
                    RowCondition(field="public", value=True),
                    RowCondition(field="level", operator="in", value=(1, 2)),
                )
            return True

        return {"acme.notes": notes}


async def test_read_policy_allows_denies_and_restricts_rows(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=[], extra=[("notes", NotesPlugin())])
    writer = host.client(actor="w")
    rows = [("a", True, 1), ("b", False, 1), ("c", True, 3), ("d", True, None), ("e", True, 2)]
    ids = {}
    for body, public, level in rows:
        inputs = {"body": body, "public": public, "level": level}
        result = await writer.action(f"{NOTE}.create", inputs=inputs)
        assert result.status == 200, result.json
        ids[body] = result.outputs["id"]
    listing = f"{NOTE}.list"
    everyone = await writer.projection(listing)
    assert sorted(i["body"] for i in everyone.items) == ["a", "b", "c", "d", "e"]
    auditor = writer.as_(roles=["auditor"])
    seen = await auditor.projection(listing)
    assert sorted(i["body"] for i in seen.items) == ["a", "e"]
    paged = await auditor.projection(listing, query={"pageSize": "1"})
    assert len(paged.items) == 1 and paged.json["data"]["pagination"]["nextCursor"]
    assert (await auditor.projection(listing, subject=ids["b"])).item is None
    assert (await auditor.projection(listing, subject=ids["a"])).item is not None
    banned = await writer.as_(roles=["banned"]).projection(listing, subject=ids["a"])
    assert banned.status == 403 and banned.error_kind == "PolicyDenied"
    assert "acme.notes" in banned.json["error"]["message"]


class _Broken(NotesPlugin):
    def __init__(self, access: ReadAccess) -> None:
        self.access = access

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (Projection(fqn=f"{NOTE}.bad", entity=NOTE, fields=("id",), access=self.access),)


@pytest.mark.parametrize(
    ("access", "message"),
    [
        (ReadAccess(scope=RowScope(field="nope")), "'nope' is not a declared field"),
        (ReadAccess(scope=RowScope(field="level")), "must be a string field"),
        (ReadAccess(policies=("acme.missing",)), "read policy 'acme.missing'"),
        (ReadAccess(roles=("a,b",)), "role 'a,b'"),
        (ReadAccess(scope=RowScope(field="body", exempt=(" x",))), "role ' x'"),
    ],
)
async def test_compiler_reports_bad_access(
    tessera: TesseraHarness, access: ReadAccess, message: str
) -> None:
    with pytest.raises(GraphError) as raised:
        await tessera.start(plugins=[], extra=[("broken", _Broken(access))])
    assert message in str(raised.value)
    assert "acme.note.bad" in str(raised.value)


# --- property: no reader ever gets a row outside its scope or tenant -------------------------

reads = st.fixed_dictionaries(
    {
        "tenant": st.sampled_from(TENANTS),
        "actor": st.sampled_from((*ACTORS, "nobody")),
        "roles": st.sets(st.sampled_from(("requester", "agent", "clerk"))),
        "priority": st.none() | st.sampled_from(PRIORITIES),
        "q": st.none() | st.sampled_from(("printer", "MAIL", "t2-", "zzz")),
        "sort": st.sampled_from(("title", "-title", "priority", "-created_at", None)),
        "page": st.integers(1, 7),
    }
)


async def test_property_no_row_outside_scope_or_tenant(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk"])
    truth = await _seed(host)
    loop = asyncio.get_running_loop()
    checked = {"reads": 0, "refused": 0}

    async def check_one(read: dict[str, Any]) -> None:
        client = host.client(tenant=read["tenant"], actor=read["actor"], roles=read["roles"])
        query = {"pageSize": str(read["page"])}
        if read["priority"] is not None:
            query["filter.priority"] = read["priority"]
        if read["q"] is not None:
            query["q"] = read["q"]
        if read["sort"] is not None:
            query["sort"] = read["sort"]
        got = await _all_pages(client, query)
        if not read["roles"] & {"requester", "agent"}:
            assert got == 403
            for asked in ({"count": "true"}, {"format": "csv"}):
                refused = await client.projection(MINE, query=asked)
                assert refused.status == 403 and refused.error_kind == "PolicyDenied"
            checked["refused"] += 1
            return
        assert isinstance(got, list)
        rows = truth[read["tenant"]]
        visible = _visible(rows, read["actor"], read["roles"])
        expected = {
            row["id"]
            for row in rows
            if row["id"] in visible
            and (read["priority"] is None or row["priority"] == read["priority"])
            and (read["q"] is None or read["q"].lower() in row["title"].lower())
        }
        ids = [item["id"] for item in got]
        assert len(ids) == len(set(ids))
        assert set(ids) == expected
        # Counts, facets and the export see exactly the same rows (never one out of scope).
        counted = await client.projection(
            MINE, query=[*query.items(), ("count", "true"), ("facet", "priority")]
        )
        assert counted.json["data"]["count"] == {"value": len(expected), "exact": True}
        per_priority = Counter(row["priority"] for row in rows if row["id"] in expected)
        facet = counted.json["data"]["facets"]["priority"]["values"]
        assert {v["value"]: v["count"] for v in facet} == dict(per_priority)
        export = {k: v for k, v in query.items() if k != "pageSize"}
        exported = await client.projection(MINE, query={**export, "format": "ndjson"})
        lines = exported.body.decode().splitlines()
        assert sorted(json.loads(line)["id"] for line in lines) == sorted(expected)
        checked["reads"] += 1

    @settings(
        max_examples=40,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(read=reads)
    def prop(read: dict[str, Any]) -> None:
        asyncio.run_coroutine_threadsafe(check_one(read), loop).result(timeout=120)

    await asyncio.to_thread(prop)
    assert checked["reads"] > 0 and checked["refused"] > 0


async def test_a_long_scoped_list_is_streamed_in_scope(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk"], list_chunk_rows=2)
    truth = await _seed(host)
    for actor in ACTORS:
        requester = host.client(tenant="t1", actor=actor, roles=["requester"])
        result = await requester.projection(MINE)
        assert result.status == 200
        assert [i["id"] for i in result.items] == sorted(_visible(truth["t1"], actor, set()))
        assert result.json["data"]["pagination"] == {"pageSize": 3, "nextCursor": None}
