"""Every row of the billing tables of ``sample-plugins.md``, through the HTTP interface."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any

import pytest
from tessera_billing.plugin import assign_number

from plugin_api import ActionContext, ConcurrencyConflict, TransitionAction, hookimpl
from plugin_api.testing import Host, TenantHost, TesseraHarness

from .conftest import (
    INVOICE,
    INVOICE_PATHS,
    USD,
    as_actor,
    assert_error,
    assert_now,
    invoice_in,
    read,
    tenant_of,
)

REQUIRED = object()
NO_DEFAULT = object()

# name, type, label, typeOptions, nullable, default (REQUIRED: not nullable, no default)
FIELDS = [
    ("customer", "string", "Customer", {"maxLength": 80}, False, REQUIRED),
    ("amount", "money", "Amount", {"currency": "USD"}, False, REQUIRED),
    ("lines", "integer", "Lines", {}, False, 1),
    ("number", "string", "Number", {}, True, NO_DEFAULT),
    ("issued_at", "datetime", "Issued at", {}, True, NO_DEFAULT),
    ("paid", "boolean", "Paid", {}, False, False),
    ("status", "enum", "Status", {"options": ["draft", "issued", "paid", "void"]}, False,
     NO_DEFAULT),
]  # fmt: skip
DETAIL_FIELDS = ["id", *(spec[0] for spec in FIELDS), "created_at", "updated_at", "_version"]
LIST_FIELDS = ["id", "number", "customer", "amount", "status", "issued_at"]

ACTION_ROLES = [
    ("create", None, ("clerk",)),
    ("amend", "draft", ("clerk",)),
    ("issue", "draft", ("clerk",)),
    ("pay", "issued", ("clerk", "accountant")),
    ("void", "issued", ("accountant",)),
]
TRANSITIONS = [("issue", "draft", "issued"), ("pay", "issued", "paid"), ("void", "issued", "void")]


async def test_viewschema_fields_and_create_inputs(host: Host) -> None:
    by_name = {spec[0]: spec for spec in FIELDS}
    viewer = as_actor(host, "viewer", "accountant")  # the invoices' read floor
    detail = await viewer.projection(f"{INVOICE}.detail", subject="none")
    assert [f["name"] for f in detail.json["fields"]] == DETAIL_FIELDS
    for descriptor in detail.json["fields"]:
        if descriptor["name"] in by_name:
            _, type_, label, options, _, _ = by_name[descriptor["name"]]
            assert (descriptor["type"], descriptor["label"]) == (type_, label)
            assert descriptor.get("typeOptions", {}) == options

    listing = await viewer.projection(f"{INVOICE}.list")
    create = listing.json["actions"][0]
    assert [i["name"] for i in create["inputs"]] == ["customer", "amount", "lines"]
    for descriptor in create["inputs"]:
        _, type_, label, options, nullable, default = by_name[descriptor["name"]]
        assert (descriptor["type"], descriptor["label"]) == (type_, label)
        assert descriptor.get("typeOptions", {}) == options
        assert descriptor["nullable"] is nullable
        assert descriptor["required"] is (default is REQUIRED)
        assert descriptor.get("default", NO_DEFAULT) == (
            NO_DEFAULT if default is REQUIRED else default
        )


async def test_create_reads_defaults_and_seeds_draft(host: Host) -> None:
    clerk = as_actor(host, "carl", "clerk")
    created = await clerk.action(
        f"{INVOICE}.create",
        inputs={"customer": "ACME Corp", "amount": {"amount": "10", "currency": "USD"}},
    )
    assert created.outputs == {
        "id": created.outputs["id"],
        "customer": "ACME Corp",
        "amount": {"amount": "10", "currency": "USD"},
        "status": "draft",
    }
    item = await read(host, f"{INVOICE}.detail", created.outputs["id"])
    assert item == {
        **item,
        "lines": 1,
        "number": None,
        "issued_at": None,
        "paid": False,
        "status": "draft",
    }


@pytest.mark.parametrize(
    "inputs",
    [
        {"amount": USD},
        {"customer": "c"},
        {"customer": None, "amount": USD},
        {"customer": "c", "amount": None},
        {"customer": "c", "amount": {"amount": "1", "currency": "EUR"}},
        {"customer": "c", "amount": {"amount": "lots", "currency": "USD"}},
        {"customer": "c", "amount": USD, "lines": None},
        {"customer": "c", "amount": USD, "number": "INV-99999"},
        {"customer": "c", "amount": USD, "status": "paid"},
    ],
)
async def test_create_rejects_misfits(host: Host, inputs: dict[str, Any]) -> None:
    assert_error(
        await as_actor(host, "carl", "clerk").action(f"{INVOICE}.create", inputs=inputs),
        400,
        "BadRequest",
    )


async def test_amend_is_a_partial_patch(host: Host) -> None:
    invoice = await invoice_in(host, "draft")
    clerk = as_actor(host, "carl", "clerk")
    detail = await clerk.projection(f"{INVOICE}.detail", subject=invoice)
    amend = detail.json["actions"][0]
    assert [i["name"] for i in amend["inputs"]] == ["customer", "amount", "lines"]
    assert amend["initialValues"] == {"customer": "ACME Corp", "amount": USD, "lines": 1}
    patched = await clerk.action(f"{INVOICE}.amend", subject=invoice, inputs={"lines": "4"})
    assert patched.outputs == {"lines": 4, "_version": patched.outputs["_version"]}
    item = await read(host, f"{INVOICE}.detail", invoice)
    assert (item["lines"], item["customer"], item["amount"]) == (4, "ACME Corp", USD)
    for bad in ({"number": "INV-1"}, {"paid": True}, {"customer": None}):
        result = await clerk.action(f"{INVOICE}.amend", subject=invoice, inputs=bad)
        assert_error(result, 400, "BadRequest")


@pytest.mark.parametrize(("name", "status", "roles"), ACTION_ROLES)
async def test_action_roles(
    host: Host, name: str, status: str | None, roles: tuple[str, ...]
) -> None:
    fqn = f"{INVOICE}.{name}"
    inputs = {"customer": "c", "amount": USD} if name == "create" else {}
    others = sorted({"clerk", "accountant"} - set(roles))
    denied = [host.client(tenant=tenant_of(host), actor="dan", roles=None)]
    denied += [as_actor(host, "dan", *r) for r in ((), ("agent",), *((o,) for o in others))]
    allowed = [as_actor(host, "dan", role) for role in roles]
    for client in [*denied, *allowed]:
        subject = None if status is None else await invoice_in(host, status)
        result = await client.action(fqn, subject=subject, inputs=inputs)
        if client in allowed:
            assert result.status == 200, (client.roles, result.json)
        else:
            assert_error(result, 403, "PolicyDenied")


@pytest.mark.parametrize(("name", "source", "target"), TRANSITIONS)
async def test_transition_sources_and_target(
    host: Host, name: str, source: str, target: str
) -> None:
    staff = as_actor(host, "carl", "clerk", "accountant")
    for status in INVOICE_PATHS:
        invoice = await invoice_in(host, status)
        result = await staff.action(f"{INVOICE}.{name}", subject=invoice)
        if status == source:
            assert result.outputs["status"] == target
        else:
            assert_error(result, 409, "WorkflowStateMismatch")
        expected = target if status == source else status
        assert (await read(host, f"{INVOICE}.detail", invoice))["status"] == expected


async def test_transition_stamps_and_number(host: Host) -> None:
    clerk = as_actor(host, "carl", "clerk")
    invoice = await invoice_in(host, "draft")
    before = datetime.now(timezone.utc)
    issued = await clerk.action(f"{INVOICE}.issue", subject=invoice)
    assert set(issued.outputs) == {"status", "issued_at", "number", "_version"}
    assert issued.outputs["number"] == "INV-00001"
    assert_now(issued.outputs["issued_at"], before)
    paid = await clerk.action(f"{INVOICE}.pay", subject=invoice)
    assert paid.outputs == {"status": "paid", "paid": True, "_version": paid.outputs["_version"]}
    item = await read(host, f"{INVOICE}.detail", invoice)
    assert item == {
        **item,
        "number": "INV-00001",
        "issued_at": issued.outputs["issued_at"],
        "paid": True,
        "status": "paid",
        "_version": paid.outputs["_version"],
    }
    voided = await as_actor(host, "ada", "accountant").action(
        f"{INVOICE}.void", subject=await invoice_in(host, "issued")
    )
    assert set(voided.outputs) == {"status", "_version"}


async def test_projections(host: Host) -> None:
    invoice = await invoice_in(host, "issued")
    viewer = as_actor(host, "viewer", "accountant")  # the invoices' read floor
    listing = await viewer.projection(f"{INVOICE}.list")
    assert [f["name"] for f in listing.json["fields"]] == LIST_FIELDS
    assert [a["fqn"] for a in listing.json["actions"]] == [
        f"{INVOICE}.create",
        f"{INVOICE}.issue",
    ]
    assert [list(row) for row in listing.items] == [LIST_FIELDS]
    assert listing.items[0]["number"] == "INV-00001"
    detail = await viewer.projection(f"{INVOICE}.detail", subject=invoice)
    assert [a["fqn"] for a in detail.json["actions"]] == [
        f"{INVOICE}.{name}" for name in ("amend", "issue", "pay", "void")
    ]
    assert detail.item is not None and list(detail.item) == DETAIL_FIELDS


async def issue(host: Host, tenant: str | None = None) -> Any:
    clerk = as_actor(host, "carl", "clerk", tenant=tenant)
    return await clerk.action(
        f"{INVOICE}.issue", subject=await invoice_in(host, "draft", tenant=tenant)
    )


async def test_numbers_are_per_tenant_sequences(host: TenantHost) -> None:
    acme, globex, initech = host.tenant, host.new_tenant(), host.new_tenant()
    numbers = [(await issue(host, tenant)).outputs["number"] for tenant in
               (acme, acme, globex, acme, globex, initech)]  # fmt: skip
    assert numbers == ["INV-00001", "INV-00002", "INV-00001", "INV-00003", "INV-00002", "INV-00001"]


async def test_refused_issues_consume_no_number(host: Host) -> None:
    clerk = as_actor(host, "carl", "clerk")
    issued = await invoice_in(host, "issued")  # INV-00001
    assert_error(
        await clerk.action(f"{INVOICE}.issue", subject=issued), 409, "WorkflowStateMismatch"
    )
    assert_error(await as_actor(host, "x", "accountant").action(f"{INVOICE}.issue",
                 subject=await invoice_in(host, "draft")), 403, "PolicyDenied")  # fmt: skip
    assert (await issue(host)).outputs["number"] == "INV-00002"

    # Racing issues of one draft: one wins, the losers are refused and give nothing back.
    draft = await invoice_in(host, "draft")
    race = await asyncio.gather(
        *(clerk.action(f"{INVOICE}.issue", subject=draft) for _ in range(8))
    )
    assert sorted(r.status for r in race) == [200] + [409] * 7
    assert {r.error_kind for r in race} <= {None, "WorkflowStateMismatch", "ConcurrencyConflict"}
    assert [r.outputs["number"] for r in race if r.status == 200] == ["INV-00003"]
    assert (await issue(host)).outputs["number"] == "INV-00004"


class IssueThenFail:
    """A test plugin: issues with the billing effect, then fails (rolling everything back)."""

    def __init__(self) -> None:
        self.drawn: list[str] = []

    @hookimpl
    def tessera_actions(self) -> tuple[TransitionAction, ...]:
        return (
            TransitionAction(
                fqn="e2e.invoice.issue_then_fail",
                entity=INVOICE,
                transition="issue",
                roles=("clerk",),
                effect="e2e.issue_then_fail",
            ),
        )

    @hookimpl
    def tessera_effects(self) -> dict[str, Any]:
        return {"e2e.issue_then_fail": self.effect}

    async def effect(self, ctx: ActionContext) -> None:
        await assign_number(ctx)
        self.drawn.append(ctx.changes["number"])
        raise ConcurrencyConflict("failing after the number was drawn")


async def test_rolled_back_issue_gives_its_number_back(tessera: TesseraHarness) -> None:
    failing = IssueThenFail()
    host = await tessera.start(plugins=["billing"], extra=[("e2e", failing)])
    clerk = as_actor(host, "carl", "clerk")
    invoice = await invoice_in(host, "draft")
    for _ in range(2):
        result = await clerk.action("e2e.invoice.issue_then_fail", subject=invoice, entity=INVOICE)
        assert_error(result, 409, "ConcurrencyConflict")
    assert failing.drawn == ["INV-00001", "INV-00001"]
    item = await read(host, f"{INVOICE}.detail", invoice)
    assert (item["status"], item["number"], item["issued_at"]) == ("draft", None, None)
    assert (await clerk.action(f"{INVOICE}.issue", subject=invoice)).outputs["number"] == (
        "INV-00001"
    )


async def test_a_transition_cannot_overwrite_the_assigned_number(host: Host) -> None:
    await invoice_in(host, "issued")  # INV-00001
    second = await invoice_in(host, "issued")  # INV-00002
    clerk = as_actor(host, "carl", "clerk")
    paid = await clerk.action(
        f"{INVOICE}.pay", subject=second, inputs={"number": "INV-00001", "customer": "Evil"}
    )
    assert paid.status == 200, paid.json
    # Accepted (transitions take arbitrary inputs) but not stamped: pay names no stampable field.
    assert "number" not in paid.outputs and "customer" not in paid.outputs
    after = await read(host, f"{INVOICE}.detail", second)
    assert after["number"] == "INV-00002" and after["customer"] != "Evil"
    assert after["status"] == "paid"
