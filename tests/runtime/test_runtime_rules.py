"""The action chain, rule by rule, through the real HTTP surface on a real database:
actor -> role policy -> subject -> custom policies -> workflow gate -> effect -> write -> audit.

Every refusal is also checked to have written nothing (full row snapshots, audit included).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, cast

import pytest

from host.fieldtypes import render_datetime
from plugin_api.testing import Client, Host, Result

from ._support import (
    AUDIT,
    INVOICE,
    ITEM,
    TICKET,
    ULID_RE,
    UTC_RE,
    LabPlugin,
    audit_rows,
    entity_row,
    parse_utc,
    snapshot,
)


@pytest.fixture
def host(own_host: Host) -> Host:
    """A host of the test's own: these tests read the whole database (nothing written anywhere)."""
    return own_host


EVERYTHING = (TICKET, INVOICE, AUDIT)


def agent(host: Host, actor: str = "alice", tenant: str = "t1") -> Client:
    return host.client(tenant=tenant, actor=actor, roles=["agent"])


async def new_ticket(client: Client, **inputs: Any) -> str:
    result = await client.action(TICKET + ".create", inputs={"title": "Printer", **inputs})
    return str(result.outputs["id"])


async def detail(client: Client, ticket: str) -> dict[str, Any]:
    item = (await client.projection(TICKET + ".detail", subject=ticket)).item
    assert item is not None
    return item


async def post_raw(client: Client, fqn: str, payload: object) -> Result:
    return await client.request(
        "POST",
        f"/actions/{fqn}",
        body=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
    )


def assert_error(result: Result, status: int, kind: str) -> str:
    assert result.status == status, result.json
    assert result.json["ok"] is False
    assert result.error_kind == kind, result.json
    message = result.json["error"]["message"]
    assert isinstance(message, str) and message
    return str(message)


# -- actor resolution -------------------------------------------------------------------------


async def test_actor_defaults_to_anon(host: Host) -> None:
    client = host.client(tenant="t1", actor=None, roles=["requester"])
    ticket = await new_ticket(client)
    assert (await detail(client, ticket))["requester"] == "anon"
    (record,) = await audit_rows(host.database_url, subject_id=ticket)
    assert record["actor_id"] == "anon"


async def test_roles_are_trimmed_and_empty_entries_dropped(host: Host) -> None:
    ticket = await new_ticket(agent(host))
    padded = host.client(tenant="t1", actor="bob", roles=[" ", "  agent\t", "", " "])
    assert padded._headers()["X-Actor-Roles"] == " ,  agent\t,, "
    edited = await padded.action(TICKET + ".edit", subject=ticket, inputs={"title": "Trimmed"})
    assert edited.outputs["title"] == "Trimmed"
    records = await audit_rows(host.database_url, action=TICKET + ".edit")
    assert [json.loads(r["roles"]) for r in records] == [["agent"]]
    assert [r["actor_id"] for r in records] == ["bob"]


async def test_roles_are_case_sensitive_and_not_substrings(host: Host) -> None:
    for roles in (["Agent"], ["agents"], ["requester:agent"]):
        result = await host.client(roles=roles).action(TICKET + ".edit", inputs={}, subject="x")
        assert_error(result, 403, "PolicyDenied")
    # Whitespace inside a role is no longer a (never matching) role but a 400.
    result = await host.client(roles=["requester agent"]).action(TICKET + ".edit", subject="x")
    assert_error(result, 400, "BadRequest")


async def test_roleless_actor_is_denied_and_nothing_is_written(host: Host) -> None:
    before = await snapshot(host.database_url, *EVERYTHING)
    for roles in (None, [], [" ", ""], [",,"]):
        client = host.client(tenant="t1", actor="eve", roles=roles)
        result = await client.action(TICKET + ".create", inputs={"title": "No roles"})
        message = assert_error(result, 403, "PolicyDenied")
        assert "requester" in message and "agent" in message
        result = await client.action(INVOICE + ".create", inputs={"customer": "ACME"})
        assert_error(result, 403, "PolicyDenied")
    assert await snapshot(host.database_url, *EVERYTHING) == before
    assert before[AUDIT] == [] and before[TICKET] == []


async def test_role_policy_is_any_of(host: Host) -> None:
    clerk = host.client(actor="carl", roles=["clerk"])
    accountant = host.client(actor="ann", roles=["accountant"])
    invoices = []
    for _ in range(3):
        created = await clerk.action(
            INVOICE + ".create",
            inputs={"customer": "ACME", "amount": {"amount": "1", "currency": "USD"}},
        )
        invoices.append(created.outputs["id"])
        issued = (await clerk.action(INVOICE + ".issue", subject=invoices[-1])).outputs
        assert set(issued) == {"status", "issued_at", "number", "_version"}
        assert (issued["status"], issued["number"]) == ("issued", f"INV-{len(invoices):05d}")
    # pay: clerk OR accountant; void: accountant only.
    paid = await clerk.action(INVOICE + ".pay", subject=invoices[0])
    assert paid.outputs == {"status": "paid", "paid": True, "_version": paid.outputs["_version"]}
    assert (await accountant.action(INVOICE + ".pay", subject=invoices[1])).status == 200
    before = await snapshot(host.database_url, *EVERYTHING)
    assert_error(await clerk.action(INVOICE + ".void", subject=invoices[2]), 403, "PolicyDenied")
    assert_error(
        await host.client(roles=["agent", "requester"]).action(
            INVOICE + ".pay", subject=invoices[2]
        ),
        403,
        "PolicyDenied",
    )
    assert await snapshot(host.database_url, *EVERYTHING) == before
    mixed = host.client(actor="mo", roles=["agent", "accountant"])
    assert (await mixed.action(INVOICE + ".void", subject=invoices[2])).outputs["status"] == "void"


async def test_role_policy_runs_before_the_subject_is_looked_up(host: Host) -> None:
    roleless = host.client(roles=None)
    assert_error(
        await roleless.action(TICKET + ".start", subject="01" + "0" * 24), 403, "PolicyDenied"
    )
    assert_error(await roleless.action(TICKET + ".start", subject=None), 403, "PolicyDenied")


# -- subject rules -----------------------------------------------------------------------------


async def test_subject_rules(host: Host) -> None:
    alice = agent(host)
    ticket = await new_ticket(alice)
    other_tenant_ticket = await new_ticket(agent(host, tenant="t2"))
    before = await snapshot(host.database_url, *EVERYTHING)

    for fqn, inputs in ((TICKET + ".start", {}), (TICKET + ".edit", {"title": "x"})):
        # No subject key at all: 400 BadRequest.
        assert_error(await post_raw(alice, fqn, {"inputs": inputs}), 400, "BadRequest")
        # subject null: 400 PolicySubjectRequired.
        assert_error(
            await post_raw(alice, fqn, {"subject": None, "inputs": inputs}),
            400,
            "PolicySubjectRequired",
        )
        # A subject reference naming another tenant: 403, whether or not the row exists there.
        for handle in (ticket, other_tenant_ticket):
            foreign = {"tenantId": "t2", "entityFqn": TICKET, "identityHandle": handle}
            assert_error(
                await alice.action(fqn, subject=foreign, inputs=inputs),
                403,
                "TenantBoundaryViolation",
            )
        # Unknown id, and another tenant's row addressed as our own: the same 404.
        unknown = "01J0000000000000000000000Z"
        missing = assert_error(
            await alice.action(fqn, subject=unknown, inputs=inputs), 404, "NotFound"
        )
        foreign_row = assert_error(
            await alice.action(fqn, subject=other_tenant_ticket, inputs=inputs), 404, "NotFound"
        )
        assert foreign_row.replace(other_tenant_ticket, "<id>") == missing.replace(unknown, "<id>")
        # Odd handles are simply not found (a NUL is not representable in PostgreSQL text).
        for odd in ("a\x00b", "x" * 5000, "' OR '1'='1", ticket.lower()):
            assert_error(await alice.action(fqn, subject=odd, inputs=inputs), 404, "NotFound")

    # Projections: another tenant's row reads exactly like a missing one.
    unknown_view = await alice.projection(TICKET + ".detail", subject="01J0000000000000000000000Z")
    foreign_view = await alice.projection(TICKET + ".detail", subject=other_tenant_ticket)
    assert unknown_view.status == foreign_view.status == 200
    assert unknown_view.item is None and foreign_view.item is None
    assert [item["id"] for item in (await alice.projection(TICKET + ".queue")).items] == [ticket]

    assert await snapshot(host.database_url, *EVERYTHING) == before


async def test_malformed_subject_references_are_bad_requests(host: Host) -> None:
    alice = agent(host)
    ticket = await new_ticket(alice)
    before = await snapshot(host.database_url, *EVERYTHING)
    for subject in (
        "just-a-string",
        ["t1", TICKET, ticket],
        {"entityFqn": TICKET, "identityHandle": ticket},
        {"tenantId": "t1", "entityFqn": TICKET},
        {"tenantId": "t1", "entityFqn": TICKET, "identityHandle": ""},
        {"tenantId": "t1", "entityFqn": INVOICE, "identityHandle": ticket},
    ):
        result = await post_raw(alice, TICKET + ".start", {"subject": subject, "inputs": {}})
        assert_error(result, 400, "BadRequest")
    assert await snapshot(host.database_url, *EVERYTHING) == before


# -- custom policies ----------------------------------------------------------------------------


async def test_custom_policy_allows_and_denies_on_the_subject_row(host: Host) -> None:
    alice = host.client(actor="alice", roles=["requester"])
    bob = host.client(actor="bob", roles=["requester"])
    mine, theirs = await new_ticket(alice), await new_ticket(bob)
    support = agent(host, actor="sam")
    for ticket in (mine, theirs):
        await support.action(TICKET + ".start", subject=ticket)
        await support.action(TICKET + ".resolve", subject=ticket)
    # The resolutions' events reach helpdesk.notify_requester in the background, which writes
    # its audit record: let them settle before the snapshot.
    await host.deliveries_settled()

    before = await snapshot(host.database_url, *EVERYTHING)
    message = assert_error(
        await alice.action(TICKET + ".close", subject=theirs), 403, "PolicyDenied"
    )
    assert "helpdesk.own_ticket" in message
    assert_error(await alice.action(TICKET + ".reopen", subject=theirs), 403, "PolicyDenied")
    assert await snapshot(host.database_url, *EVERYTHING) == before

    assert (await alice.action(TICKET + ".close", subject=mine)).outputs["state"] == "closed"
    assert (await bob.action(TICKET + ".reopen", subject=theirs)).outputs["state"] == "open"
    # An agent passes the policy on anyone's ticket.
    assert (await support.action(TICKET + ".cancel", subject=theirs)).outputs["state"] == "closed"


async def test_custom_policy_sees_the_subject_row_in_read_shape(
    lab_host: Host, lab: LabPlugin
) -> None:
    client = lab_host.client(actor="ida", roles=[])
    created = await client.action(ITEM + ".create", inputs={"name": "n", "qty": 5, "flag": True})
    item = created.outputs["id"]
    assert lab.policy_calls[-1]["subject"] is None  # create: no subject
    await client.action(ITEM + ".patch", subject=item, inputs={"note": "seen"})
    view = (await client.projection(ITEM + ".detail", subject=item)).item
    seen = cast("dict[str, Any]", lab.policy_calls[-1]["subject"])  # narrowed to None above
    assert view is not None
    # The policy saw the row as stored before this action, every column, in read shape.
    assert set(seen) == set(view)
    assert seen["note"] is None and seen["qty"] == 5 and seen["flag"] is True
    assert seen["status"] == "new" and seen["tenant_id"] == "t1" and seen["id"] == item
    assert seen["_version"] != view["_version"]


async def test_custom_policy_verdicts(lab_host: Host, lab: LabPlugin) -> None:
    client = lab_host.client(actor="ida")
    item = (await client.action(ITEM + ".add", inputs={"name": "n"})).outputs["id"]
    before = await snapshot(lab_host.database_url, ITEM, AUDIT)
    # Only True allows: truthy values, None and False deny with 403.
    for verdict in (False, None, 1, "yes", [True]):
        lab.policy = lambda ctx, v=verdict: v  # type: ignore[misc]
        for fqn, subject in (
            (ITEM + ".create", None),
            (ITEM + ".finish", item),
            (ITEM + ".patch", item),
        ):
            inputs = {"name": "x"} if fqn != ITEM + ".finish" else {}
            result = await client.action(fqn, subject=subject, inputs=inputs)
            assert "lab.policy" in assert_error(result, 403, "PolicyDenied")
    # A policy raising an error of the taxonomy answers with it.
    from plugin_api import WorkflowStateMismatch

    def refuse(ctx: Any) -> bool:
        raise WorkflowStateMismatch("policy says the state is wrong")

    lab.policy = refuse
    result = await client.action(ITEM + ".finish", subject=item)
    assert assert_error(result, 409, "WorkflowStateMismatch") == "policy says the state is wrong"

    # A policy raising anything else is a 500 that does not leak the cause.
    def crash(ctx: Any) -> bool:
        raise LookupError("policy-internal-secret")

    lab.policy = crash
    message = assert_error(
        await client.action(ITEM + ".finish", subject=item), 500, "InternalError"
    )
    assert "secret" not in message and "LookupError" not in message

    # A policy may not change data.
    def meddle(ctx: Any) -> bool:
        ctx.set("note", "written by a policy")
        return True

    lab.policy = meddle
    assert_error(
        await client.action(ITEM + ".patch", subject=item, inputs={}), 500, "InternalError"
    )
    assert await snapshot(lab_host.database_url, ITEM, AUDIT) == before

    lab.policy = lambda ctx: True
    assert (await client.action(ITEM + ".finish", subject=item)).outputs["status"] == "done"


async def test_custom_policy_runs_after_the_subject_is_found(
    lab_host: Host, lab: LabPlugin
) -> None:
    client = lab_host.client()
    lab.policy = lambda ctx: False
    result = await client.action(ITEM + ".finish", subject="01J0000000000000000000000Z")
    assert_error(result, 404, "NotFound")
    assert lab.policy_calls == []


# -- workflow gate -----------------------------------------------------------------------------


async def test_workflow_gate_refuses_a_transition_from_another_state(host: Host) -> None:
    alice = host.client(actor="alice", roles=["agent", "requester"])
    ticket = await new_ticket(alice)
    before = await snapshot(host.database_url, *EVERYTHING)
    for fqn in (".resolve", ".close", ".reopen"):
        message = assert_error(
            await alice.action(TICKET + fqn, subject=ticket), 409, "WorkflowStateMismatch"
        )
        assert "open" in message
    assert await snapshot(host.database_url, *EVERYTHING) == before
    # cancel has two sources.
    assert (await alice.action(TICKET + ".cancel", subject=ticket)).outputs["state"] == "closed"
    other = await new_ticket(alice)
    await alice.action(TICKET + ".start", subject=other)
    assert (await alice.action(TICKET + ".cancel", subject=other)).outputs["state"] == "closed"
    assert_error(
        await alice.action(TICKET + ".cancel", subject=other), 409, "WorkflowStateMismatch"
    )
    # The custom effect of escalate refuses a closed ticket with the taxonomy error it raised.
    before = await snapshot(host.database_url, *EVERYTHING)
    result = await alice.action(TICKET + ".escalate", subject=other)
    assert (
        assert_error(result, 409, "WorkflowStateMismatch") == "A closed ticket cannot be escalated"
    )
    assert await snapshot(host.database_url, *EVERYTHING) == before


# -- create ------------------------------------------------------------------------------------


async def test_create_assigns_ids_seeds_state_applies_defaults_and_stamps(host: Host) -> None:
    client = host.client(actor="rita", roles=["requester"])
    started = datetime.now(timezone.utc)
    created = await client.action(TICKET + ".create", inputs={"title": "Printer"})
    # Outputs: the new id, every field the payload included, the seeded state. Nothing else.
    assert set(created.outputs) == {"id", "title", "state"}
    assert created.outputs["title"] == "Printer" and created.outputs["state"] == "open"
    ticket = created.outputs["id"]
    assert ULID_RE.fullmatch(ticket)
    item = await detail(client, ticket)
    assert item["priority"] == "normal" and item["billable"] is False  # defaults
    assert item["requester"] == "rita"  # stamp
    assert item["state"] == "open"  # seeded by the workflow
    for name in ("description", "estimate_hours", "due_at", "budget", "assignee", "resolution"):
        assert item[name] is None
    assert ULID_RE.fullmatch(item["_version"]) and item["_version"] != ticket
    assert UTC_RE.fullmatch(item["created_at"]) and item["created_at"] == item["updated_at"]
    created_at = parse_utc(item["created_at"])
    assert started <= created_at <= datetime.now(timezone.utc)

    clerk = host.client(actor="carl", roles=["clerk"])
    amount = {"amount": "19.99", "currency": "USD"}
    invoice = await clerk.action(INVOICE + ".create", inputs={"customer": "ACME", "amount": amount})
    assert invoice.outputs == {
        "id": invoice.outputs["id"],
        "customer": "ACME",
        "amount": amount,
        "status": "draft",
    }
    row = (await clerk.projection(INVOICE + ".detail", subject=invoice.outputs["id"])).item
    assert row is not None
    assert (row["lines"], row["paid"], row["number"], row["issued_at"]) == (1, False, None, None)

    # An explicit value beats the default and is echoed.
    full = await client.action(
        TICKET + ".create",
        inputs={"title": "T", "priority": "high", "billable": True, "description": None},
    )
    assert set(full.outputs) == {"id", "title", "priority", "billable", "description", "state"}
    assert (full.outputs["priority"], full.outputs["billable"], full.outputs["description"]) == (
        "high",
        True,
        None,
    )
    # Every create gets a fresh id.
    ids = {ticket, full.outputs["id"]}
    assert len(ids) == 2


async def test_create_rejects_missing_required_and_undeclared_inputs(host: Host) -> None:
    client = host.client(roles=["requester"])
    before = await snapshot(host.database_url, *EVERYTHING)
    assert "title" in assert_error(
        await client.action(TICKET + ".create", inputs={}), 400, "BadRequest"
    )
    for key, value in (
        ("state", "closed"),
        ("requester", "mallory"),
        ("id", "x"),
        ("_version", "x"),
        ("nope", 1),
    ):
        message = assert_error(
            await client.action(TICKET + ".create", inputs={"title": "x", key: value}),
            400,
            "BadRequest",
        )
        assert repr(key) in message
    assert await snapshot(host.database_url, *EVERYTHING) == before


# -- transition --------------------------------------------------------------------------------


async def test_transition_moves_state_stamps_and_keeps_unknown_inputs_only_in_audit(
    host: Host,
) -> None:
    url = host.database_url
    alice = agent(host, actor="alice")
    ticket = await new_ticket(alice)

    # A stamp wins over an input naming the same field.
    started = await agent(host, actor="sam").action(
        TICKET + ".start", subject=ticket, inputs={"assignee": "mallory"}
    )
    assert set(started.outputs) == {"state", "assignee", "_version"}
    assert started.outputs["state"] == "in_progress" and started.outputs["assignee"] == "sam"

    before_resolve = datetime.now(timezone.utc)
    resolved = await alice.action(
        TICKET + ".resolve",
        subject=ticket,
        inputs={"resolution": "Replaced toner", "customer_mood": "happy", "state": "closed"},
    )
    outputs = resolved.outputs
    assert set(outputs) == {"resolution", "state", "resolved_at", "_version"}
    assert outputs["state"] == "resolved"  # the state field is never taken from the inputs
    assert outputs["resolution"] == "Replaced toner"
    assert UTC_RE.fullmatch(outputs["resolved_at"])
    resolved_at = parse_utc(outputs["resolved_at"])
    assert before_resolve <= resolved_at <= datetime.now(timezone.utc)

    item = await detail(alice, ticket)
    assert item["state"] == "resolved" and item["resolution"] == "Replaced toner"
    assert item["resolved_at"] == outputs["resolved_at"] and item["assignee"] == "sam"
    assert item["_version"] == outputs["_version"]
    row = await entity_row(url, TICKET, ticket)
    assert row is not None and "customer_mood" not in row

    record = (await audit_rows(url, action=TICKET + ".resolve"))[0]
    assert json.loads(record["inputs"]) == {
        "resolution": "Replaced toner",
        "customer_mood": "happy",
        "state": "closed",
    }
    assert json.loads(record["outputs"]) == outputs

    reopened = await host.client(actor="alice", roles=["requester"]).action(
        TICKET + ".reopen", subject=ticket
    )
    assert reopened.outputs == {
        "state": "open",
        "resolved_at": None,
        "_version": reopened.outputs["_version"],
    }
    assert (await detail(alice, ticket))["resolved_at"] is None


async def test_transition_validates_and_stamps_only_stampable_inputs(host: Host) -> None:
    alice = agent(host)
    ticket = await new_ticket(alice)
    await alice.action(TICKET + ".start", subject=ticket)
    before = await snapshot(host.database_url, *EVERYTHING)
    for inputs in ({"resolution": 42}, {"resolution": ["Fixed"]}, {"resolution": {"a": 1}}):
        result = await alice.action(TICKET + ".resolve", subject=ticket, inputs=inputs)
        assert "resolution" in assert_error(result, 400, "BadRequest")
    assert await snapshot(host.database_url, *EVERYTHING) == before


async def test_transition_inputs_outside_stampable_are_audit_only(host: Host) -> None:
    alice = agent(host)
    ticket = await new_ticket(alice)
    # start names no stampable field: a wrong type is not even looked at, nothing is stamped.
    started = await alice.action(
        TICKET + ".start", subject=ticket, inputs={"estimate_hours": "lots", "requester": "mallory"}
    )
    assert set(started.outputs) == {"state", "assignee", "_version"}, started.outputs
    resolved = await alice.action(
        TICKET + ".resolve", subject=ticket, inputs={"resolution": "Fixed", "title": "Other"}
    )
    assert resolved.outputs["resolution"] == "Fixed" and "title" not in resolved.outputs
    item = await detail(alice, ticket)
    assert (item["requester"], item["estimate_hours"], item["title"]) == ("alice", None, "Printer")
    assert item["resolution"] == "Fixed"
    audited = [row["inputs"] for row in await audit_rows(host.database_url)]
    assert {"estimate_hours": "lots", "requester": "mallory"} in [json.loads(i) for i in audited]


async def test_transition_without_stampable_stamps_any_declared_field(
    lab_host: Host, lab: LabPlugin
) -> None:
    client = lab_host.client(roles=["any"])
    item = (await client.action(ITEM + ".add", inputs={"name": "n"})).outputs["id"]
    before = await snapshot(lab_host.database_url, ITEM, AUDIT)
    for inputs in ({"qty": "lots"}, {"flag": "yes"}, {"name": None}):
        result = await client.action(ITEM + ".finish", subject=item, inputs=inputs)
        assert next(iter(inputs)) in assert_error(result, 400, "BadRequest")
    assert await snapshot(lab_host.database_url, ITEM, AUDIT) == before
    # A well-typed declared field is stamped and echoed; the state field is never an input.
    done = await client.action(ITEM + ".finish", subject=item, inputs={"qty": 8, "status": "new"})
    assert done.outputs["qty"] == 8 and done.outputs["status"] == "done"
    view = (await client.projection(ITEM + ".detail", subject=item)).item
    assert view is not None and (view["qty"], view["status"]) == (8, "done")


# -- update ------------------------------------------------------------------------------------


async def test_update_patches_only_the_given_fields(host: Host) -> None:
    alice = agent(host)
    ticket = await new_ticket(alice, description="Paper jam", estimate_hours=3)
    before = await detail(alice, ticket)

    edited = await alice.action(TICKET + ".edit", subject=ticket, inputs={"priority": "high"})
    assert edited.outputs == {"priority": "high", "_version": edited.outputs["_version"]}
    after = await detail(alice, ticket)
    changed = {k for k in after if after[k] != before[k]}
    assert changed == {"priority", "_version", "updated_at"}

    nulled = await alice.action(
        TICKET + ".edit", subject=ticket, inputs={"description": None, "estimate_hours": 0}
    )
    assert set(nulled.outputs) == {"description", "estimate_hours", "_version"}
    after = await detail(alice, ticket)
    assert after["description"] is None and after["estimate_hours"] == 0
    assert after["priority"] == "high" and after["title"] == "Printer"

    # An empty patch still writes: a new version and an audit record.
    empty = await alice.action(TICKET + ".edit", subject=ticket, inputs={})
    assert set(empty.outputs) == {"_version"}
    assert (await detail(alice, ticket))["_version"] == empty.outputs["_version"]

    escalated = await alice.action(TICKET + ".escalate", subject=ticket)
    assert escalated.outputs == {"priority": "urgent", "_version": escalated.outputs["_version"]}


async def test_update_rejects_keys_outside_patchable_and_writes_nothing(host: Host) -> None:
    alice = agent(host)
    ticket = await new_ticket(alice)
    before = await snapshot(host.database_url, *EVERYTHING)
    for key, value in (
        ("state", "closed"),
        ("requester", "mallory"),
        ("assignee", "mallory"),
        ("resolved_at", "2030-01-01T00:00:00Z"),
        ("id", "01J0000000000000000000000Z"),
        ("_version", "01J0000000000000000000000Z"),
        ("tenant_id", "t2"),
        ("updated_at", "2030-01-01T00:00:00Z"),
        ("no_such_field", 1),
    ):
        # Alone and together with a valid key: either way nothing is written.
        for inputs in ({key: value}, {"title": "Changed", key: value}):
            result = await alice.action(TICKET + ".edit", subject=ticket, inputs=inputs)
            assert repr(key) in assert_error(result, 400, "BadRequest")
    result = await alice.action(TICKET + ".escalate", subject=ticket, inputs={"priority": "low"})
    assert_error(result, 400, "BadRequest")
    assert_error(
        await post_raw(
            alice,
            TICKET + ".edit",
            {
                "subject": {"tenantId": "t1", "entityFqn": TICKET, "identityHandle": ticket},
                "inputs": ["title"],
            },
        ),
        400,
        "BadRequest",
    )
    assert await snapshot(host.database_url, *EVERYTHING) == before


# -- versions, stamps and audit on every write ------------------------------------------------


async def test_every_write_sets_a_new_version_and_updated_at_and_one_audit_record(
    host: Host,
) -> None:
    url = host.database_url
    alice = agent(host, actor="alice")
    health = await alice.health()
    created = await alice.action(TICKET + ".create", inputs={"title": "Lifecycle"})
    ticket = created.outputs["id"]
    item = await detail(alice, ticket)
    versions = [item["_version"]]
    stamps = [item["updated_at"]]
    created_at = item["created_at"]
    steps: list[tuple[str, dict[str, Any]]] = [
        (".edit", {"title": "Lifecycle 2"}),
        (".start", {}),
        (".escalate", {}),
        (".edit", {}),
        (".resolve", {"resolution": "done"}),
        (".close", {}),
    ]
    responses = [created]
    for suffix, inputs in steps:
        result = await alice.action(TICKET + suffix, subject=ticket, inputs=inputs)
        responses.append(result)
        item = await detail(alice, ticket)
        assert result.outputs["_version"] == item["_version"]
        assert item["_version"] not in versions
        assert ULID_RE.fullmatch(item["_version"])
        assert item["updated_at"] > stamps[-1]
        assert item["created_at"] == created_at
        versions.append(item["_version"])
        stamps.append(item["updated_at"])

    records = await audit_rows(url, subject_id=ticket)
    assert [r["action"] for r in records] == [TICKET + ".create"] + [TICKET + s for s, _ in steps]
    assert [json.loads(r["outputs"]) for r in records] == [r.outputs for r in responses]
    assert [json.loads(r["inputs"]) for r in records] == [{"title": "Lifecycle"}] + [
        i for _, i in steps
    ]
    for record, stamp in zip(records, stamps, strict=True):
        assert record["tenant_id"] == "t1" and record["actor_id"] == "alice"
        assert record["entity"] == TICKET and json.loads(record["roles"]) == ["agent"]
        assert record["graph_hash"] == health.json["graphHash"]
        assert render_datetime(record["created_at"]) == stamp  # the write's own timestamp
        assert ULID_RE.fullmatch(record["id"])
    assert len({r["id"] for r in records}) == len(records)
