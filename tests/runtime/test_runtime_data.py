"""The typed data API of the action context (``ctx.data``), through the real HTTP surface on a
real database: cross-entity reads and writes in the action's tenant and transaction, with
versions, audit records, validation and optimistic locking."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_api import ActionContext, BadRequest, Condition, Operator
from plugin_api.testing import Client, Host

from ._support import (
    AUDIT,
    ITEM,
    TICKET,
    ULID_RE,
    LabPlugin,
    audit_rows,
    break_audit,
    entity_row,
    is_postgres,
    repair_audit,
    snapshot,
    table,
)
from .test_runtime_rules import assert_error, new_ticket


def agent(host: Host, tenant: str = "t1") -> Client:
    return host.client(tenant=tenant, actor="alice", roles=["agent"])


async def add_item(client: Client, **inputs: Any) -> str:
    result = await client.action(f"{ITEM}.add", inputs={"name": "x", **inputs})
    assert result.status == 200, result.json
    return str(result.outputs["id"])


async def test_an_effect_patches_another_entity_with_version_and_audit(
    lab_host: Host, lab: LabPlugin
) -> None:
    client = agent(lab_host)
    ticket = await new_ticket(client, budget={"amount": "10.50", "currency": "EUR"})
    before = await entity_row(lab_host.database_url, TICKET, ticket)
    assert before is not None
    seen: dict[str, Any] = {}

    async def effect(ctx: ActionContext) -> None:
        row = await ctx.data.get(TICKET, ticket)
        assert row is not None
        seen["read"] = dict(row)
        seen["written"] = dict(
            await ctx.data.patch(TICKET, ticket, {"priority": "high", "estimate_hours": "7"})
        )

    lab.effect = effect
    result = await client.action(f"{ITEM}.create", inputs={"name": "n"})
    assert result.status == 200, result.json
    # Read shape, system fields included, exactly as the HTTP detail shows it.
    shown = (await client.projection(f"{TICKET}.detail", subject=ticket)).item
    assert shown is not None
    assert seen["read"]["budget"] == {"amount": "10.50", "currency": "EUR"}
    assert seen["read"]["_version"] == before["_version"]
    assert seen["read"]["tenant_id"] == "t1"
    assert {k: seen["written"][k] for k in shown} == shown
    assert shown["priority"] == "high" and shown["estimate_hours"] == 7
    after = await entity_row(lab_host.database_url, TICKET, ticket)
    assert after is not None
    assert after["_version"] != before["_version"] and ULID_RE.fullmatch(after["_version"])
    assert after["updated_at"] > before["updated_at"]
    assert after["created_at"] == before["created_at"]
    records = await audit_rows(lab_host.database_url, entity=TICKET, subject_id=ticket)
    caused = records[-1]
    assert caused["action"] == f"{ITEM}.create"  # names the action that caused it
    assert caused["tenant_id"] == "t1" and caused["actor_id"] == "alice"
    assert '"priority":"high"' in caused["outputs"]
    assert after["_version"] in caused["outputs"]


async def test_a_later_failure_rolls_the_cross_entity_write_back(
    lab_host: Host, lab: LabPlugin
) -> None:
    client = agent(lab_host)
    ticket = await new_ticket(client)
    before = await snapshot(lab_host.database_url, TICKET, ITEM, AUDIT)

    async def effect(ctx: ActionContext) -> None:
        await ctx.data.patch(TICKET, ticket, {"priority": "urgent"})
        await ctx.data.create(TICKET, {"title": "made"})
        raise BadRequest("changed my mind")

    lab.effect = effect
    result = await client.action(f"{ITEM}.create", inputs={"name": "n"})
    assert "changed my mind" in assert_error(result, 400, "BadRequest")
    assert await snapshot(lab_host.database_url, TICKET, ITEM, AUDIT) == before


async def test_a_row_changed_since_it_was_read_is_a_conflict_for_the_whole_action(
    lab_host: Host, lab: LabPlugin
) -> None:
    client = agent(lab_host)
    ticket = await new_ticket(client)
    before = await snapshot(lab_host.database_url, TICKET, ITEM, AUDIT)

    async def effect(ctx: ActionContext) -> None:
        assert await ctx.data.get(TICKET, ticket) is not None
        # Another writer changes the ticket after this action read it (same database, SQL
        # that bypasses the runtime, as a concurrent transaction would have committed).
        await ctx.db.execute(
            f'UPDATE "{table(TICKET)}" SET _version = :v WHERE id = :id',
            {"v": "0" * 26, "id": ticket},
        )
        await ctx.data.patch(TICKET, ticket, {"priority": "low"})

    lab.effect = effect
    result = await client.action(f"{ITEM}.create", inputs={"name": "n"})
    assert ticket in assert_error(result, 409, "ConcurrencyConflict")
    assert await snapshot(lab_host.database_url, TICKET, ITEM, AUDIT) == before


async def test_a_failed_audit_record_of_a_cross_entity_write_fails_the_action(
    lab_host: Host, lab: LabPlugin
) -> None:
    client = agent(lab_host)
    ticket = await new_ticket(client)
    before = await snapshot(lab_host.database_url, TICKET, ITEM, AUDIT)
    lab.effect = lambda ctx: ctx.data.patch(TICKET, ticket, {"priority": "low"})
    await break_audit(lab_host.database_url)
    try:
        result = await client.action(f"{ITEM}.create", inputs={"name": "n"})
    finally:
        await repair_audit(lab_host.database_url)
    assert_error(result, 500, "AuditEmissionFailed")
    assert await snapshot(lab_host.database_url, TICKET, ITEM, AUDIT) == before


async def test_create_and_transition_through_the_data_api(lab_host: Host, lab: LabPlugin) -> None:
    client = agent(lab_host)
    made: dict[str, Any] = {}

    async def effect(ctx: ActionContext) -> None:
        row = await ctx.data.create(TICKET, {"title": "From an effect", "billable": True})
        made["created"] = dict(row)
        made["started"] = dict(await ctx.data.transition(TICKET, str(row["id"]), "start"))

    lab.effect = effect
    assert (await client.action(f"{ITEM}.create", inputs={"name": "n"})).status == 200
    created, started = made["created"], made["started"]
    assert created["state"] == "open" and created["priority"] == "normal"
    assert created["tenant_id"] == "t1" and ULID_RE.fullmatch(created["id"])
    assert started["state"] == "in_progress" and started["assignee"] == "alice"
    assert started["_version"] != created["_version"]
    shown = (await client.projection(f"{TICKET}.detail", subject=created["id"])).item
    assert shown is not None and shown["state"] == "in_progress"
    assert shown["_version"] == started["_version"]
    records = await audit_rows(lab_host.database_url, entity=TICKET, subject_id=created["id"])
    assert [r["action"] for r in records] == [f"{ITEM}.create"] * 2

    async def restart(ctx: ActionContext) -> None:
        await ctx.data.transition(TICKET, created["id"], "start")

    lab.effect = restart
    result = await client.action(f"{ITEM}.create", inputs={"name": "n"})
    assert "in_progress" in assert_error(result, 409, "WorkflowStateMismatch")


async def test_values_are_validated_like_inputs_and_nothing_is_stored(
    lab_host: Host, lab: LabPlugin
) -> None:
    client = agent(lab_host)
    ticket = await new_ticket(client)
    before = await snapshot(lab_host.database_url, TICKET, ITEM, AUDIT)
    cases = [
        (lambda ctx: ctx.data.patch(TICKET, ticket, {"priority": "whenever"}), "priority"),
        (lambda ctx: ctx.data.create(TICKET, {"description": "no title"}), "title"),
        (lambda ctx: ctx.data.find(TICKET, where={"due_at": "yesterday"}), "due_at"),
    ]
    for call, field in cases:
        lab.effect = call
        result = await client.action(f"{ITEM}.create", inputs={"name": "n"})
        assert field in assert_error(result, 400, "BadRequest")
    lab.effect = lambda ctx: ctx.data.patch(TICKET, "01ARZ3NDEKTSV4RRFFQ69G5FAV", {})
    assert_error(await client.action(f"{ITEM}.create", inputs={"name": "n"}), 404, "NotFound")
    misuse = [
        lambda ctx: ctx.data.patch(TICKET, ticket, {"state": "closed"}),  # only transitions
        lambda ctx: ctx.data.get("no.such", ticket),
        lambda ctx: ctx.data.find(TICKET, Condition(field="billable", op="gt", value=True)),
        lambda ctx: ctx.data.find(TICKET, Condition(field="title", op="like", value="%")),
        lambda ctx: ctx.data.find(TICKET, Condition(field="title", operator="like", value="%")),
        # A condition on _version and null on a never-null field: refused for plugins that
        # require plugin API 1.6 or later (this lab plugin requires nothing, so it gets the
        # answers of 1.3): tests/compat/test_compat_data.py.
    ]
    for call in misuse:
        lab.effect = call
        result = await client.action(f"{ITEM}.create", inputs={"name": "n"})
        assert_error(result, 500, "EffectFailed")
    assert await snapshot(lab_host.database_url, TICKET, ITEM, AUDIT) == before


async def test_the_subject_is_changed_with_set_not_through_the_data_api(
    lab_host: Host, lab: LabPlugin
) -> None:
    client = agent(lab_host)
    item = await add_item(client)
    lab.effect = lambda ctx: ctx.data.patch(ITEM, item, {"note": "x"})
    result = await client.action(f"{ITEM}.patch", subject=item, inputs={})
    assert_error(result, 500, "EffectFailed")


async def test_policies_read_but_never_write(lab_host: Host, lab: LabPlugin) -> None:
    client = agent(lab_host)
    ticket = await new_ticket(client)

    async def reads(ctx: ActionContext) -> bool:
        row = await ctx.data.get(TICKET, ticket)
        return row is not None and row["priority"] == "normal"

    lab.policy = reads
    assert (await client.action(f"{ITEM}.create", inputs={"name": "n"})).status == 200
    before = await snapshot(lab_host.database_url, TICKET, ITEM, AUDIT)

    async def writes(ctx: ActionContext) -> bool:
        await ctx.data.patch(TICKET, ticket, {"priority": "low"})
        return True

    lab.policy = writes
    result = await client.action(f"{ITEM}.create", inputs={"name": "n"})
    assert_error(result, 500, "InternalError")
    assert await snapshot(lab_host.database_url, TICKET, ITEM, AUDIT) == before


async def test_find_operators(lab_host: Host, lab: LabPlugin) -> None:
    client = agent(lab_host)
    ids = [
        await add_item(client, name="apple", qty=1, note="red fruit"),
        await add_item(client, name="banana", qty=5),
        await add_item(client, name="cherry", qty=9, note="red too", flag=True),
    ]
    other = await add_item(agent(lab_host, "t2"), name="apple", qty=1)
    queries: list[tuple[list[Condition], dict[str, Any], list[str]]] = [
        ([], {"name": "apple"}, ids[:1]),
        ([Condition(field="qty", op="gte", value="5")], {}, ids[1:]),
        ([Condition(field="qty", op="lt", value=5)], {}, ids[:1]),
        ([Condition(field="name", op="in", value=["apple", "cherry"])], {}, [ids[0], ids[2]]),
        ([Condition(field="name", op="in", value=[])], {}, []),
        ([Condition(field="note", op="contains", value="red")], {}, [ids[0], ids[2]]),
        ([Condition(field="note", op="contains", value="RED T")], {}, ids[2:]),
        ([Condition(field="note", op="null", value=True)], {}, ids[1:2]),
        ([Condition(field="note", op="ne", value="red too")], {}, ids[:2]),
        ([], {"note": None}, ids[1:2]),
        ([], {"flag": True, "status": "new"}, ids[2:]),
        ([Condition(field="id", op="gt", value=ids[0])], {}, ids[1:]),
    ]
    found: list[list[str]] = []

    async def effect(ctx: ActionContext) -> None:
        for conditions, where, _ in queries:
            rows = await ctx.data.find(ITEM, *conditions, where=where)
            found.append([str(row["id"]) for row in rows if row["id"] != marker])
        rows = await ctx.data.find(ITEM, limit=2)
        found.append([str(row["id"]) for row in rows])

    marker = await add_item(client, name="zzz-marker")  # the subject: left out of the results
    lab.effect = effect
    result = await client.action(f"{ITEM}.patch", subject=marker, inputs={})
    assert result.status == 200, result.json
    assert len(found) == len(queries) + 1
    for (_, _, expected), got in zip(queries, found[:-1], strict=True):
        assert got == expected
    assert found[-1] == ids[:2]
    assert all(other not in ids_found for ids_found in found)


async def test_find_follows_the_list_filters_rules(lab_host: Host, lab: LabPlugin) -> None:
    """One condition language: what ``filter.<field>.<op>=value`` accepts on a list, the data
    API accepts with the same meaning (ordered text, enums by option order, money by amount),
    in the new spelling and the deprecated one."""
    client = agent(lab_host)
    tickets = {
        title: await new_ticket(
            client, title=title, priority=priority, budget={"amount": amount, "currency": "EUR"}
        )
        for title, priority, amount in (
            ("alpha", "low", "10.50"),
            ("mike", "high", "9"),
            ("zulu", "urgent", "100"),
        )
    }
    queries = [
        (Condition(field="title", operator=Operator.LT, value="m"), ["alpha"]),
        (Condition(field="title", op="lt", value="m"), ["alpha"]),
        (Condition(field="title", operator="gte", value="mike"), ["mike", "zulu"]),
        (Condition(field="priority", operator=Operator.GT, value="normal"), ["mike", "zulu"]),
        (Condition(field="budget", operator=Operator.LT, value="10.5"), ["mike"]),
        (Condition(field="budget", value={"amount": "10.5", "currency": "EUR"}), ["alpha"]),
        (Condition(field="budget", operator="in", value=("9.00", 100)), ["mike", "zulu"]),
    ]
    found: list[list[str]] = []

    async def effect(ctx: ActionContext) -> None:
        for condition, _ in queries:
            rows = await ctx.data.find(TICKET, condition)
            found.append(sorted(str(row["title"]) for row in rows))

    lab.effect = effect
    result = await client.action(f"{ITEM}.create", inputs={"name": "n"})
    assert result.status == 200, result.json
    assert found == [expected for _, expected in queries]
    assert set(tickets) == {"alpha", "mike", "zulu"}


# -- a typed find never returns another tenant's rows (property) --------------------------------

TENANTS = ("t1", "t2", "t3")
NAMES = ("a", "b", "c")


@pytest.fixture
async def seeded(lab_host: Host) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {tenant: [] for tenant in TENANTS}
    for n in range(18):
        tenant = TENANTS[n % 3]
        values = {"name": NAMES[n % len(NAMES)], "qty": n % 5, "note": None if n % 4 else "n"}
        item = await add_item(agent(lab_host, tenant), **values)
        rows[tenant].append({"id": item, **values})
    return rows


def _matches(row: dict[str, Any], condition: Condition) -> bool:
    value = row[condition.field]
    if condition.op == "eq":
        return bool(value == condition.value)
    if condition.op == "in":
        return value in condition.value
    if condition.op == "null":
        return (value is None) is condition.value
    assert condition.op in ("lt", "gte")
    return bool(value < condition.value if condition.op == "lt" else value >= condition.value)


conditions = st.one_of(
    st.builds(Condition, field=st.just("name"), op=st.just("eq"), value=st.sampled_from(NAMES)),
    st.builds(
        Condition,
        field=st.just("name"),
        op=st.just("in"),
        value=st.lists(st.sampled_from(NAMES), max_size=3),
    ),
    st.builds(
        Condition,
        field=st.just("qty"),
        op=st.sampled_from(["lt", "gte"]),
        value=st.integers(-1, 6),
    ),
    st.builds(Condition, field=st.just("note"), op=st.just("null"), value=st.booleans()),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    tenant=st.sampled_from(TENANTS),
    where=st.lists(conditions, max_size=3),
    limit=st.integers(1, 20),
)
async def test_a_typed_find_never_returns_another_tenants_rows(
    lab_host: Host,
    lab: LabPlugin,
    seeded: dict[str, list[dict[str, Any]]],
    tenant: str,
    where: list[Condition],
    limit: int,
) -> None:
    found: list[dict[str, Any]] = []

    async def policy(ctx: ActionContext) -> bool:
        found.extend(dict(row) for row in await ctx.data.find(ITEM, *where, limit=limit))
        return False  # read only: deny, so nothing is written

    lab.policy = policy
    subject = seeded[tenant][0]["id"]
    result = await agent(lab_host, tenant).action(f"{ITEM}.finish", subject=subject)
    assert_error(result, 403, "PolicyDenied")
    assert all(row["tenant_id"] == tenant for row in found)
    expected = sorted(row["id"] for row in seeded[tenant] if all(_matches(row, c) for c in where))[
        :limit
    ]
    assert [row["id"] for row in found] == expected


@pytest.mark.skipif(
    not is_postgres(),
    reason="two interleaved writers in one process: SQLite serialises them (one writer lock)",
)
async def test_a_concurrent_commit_between_read_and_write_is_a_conflict(
    lab_host: Host, lab: LabPlugin
) -> None:
    """A real concurrent transaction (an HTTP edit of the ticket) commits after the effect
    read the ticket and before it writes: the action is a 409 and the edit is not lost."""
    client = agent(lab_host)
    ticket = await new_ticket(client)
    read, edited = asyncio.Event(), asyncio.Event()

    async def effect(ctx: ActionContext) -> None:
        assert await ctx.data.get(TICKET, ticket) is not None
        read.set()
        await edited.wait()
        await ctx.data.patch(TICKET, ticket, {"priority": "low"})

    async def edit() -> Any:
        await read.wait()
        result = await client.action(
            f"{TICKET}.edit", subject=ticket, inputs={"priority": "urgent"}
        )
        edited.set()
        return result

    lab.effect = effect
    action, edit_result = await asyncio.gather(
        client.action(f"{ITEM}.create", inputs={"name": "n"}), edit()
    )
    assert edit_result.status == 200, edit_result.json
    assert_error(action, 409, "ConcurrencyConflict")
    row = await entity_row(lab_host.database_url, TICKET, ticket)
    assert row is not None and row["priority"] == "urgent"
    assert row["_version"] == edit_result.outputs["_version"]
