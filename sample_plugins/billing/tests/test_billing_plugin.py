"""The billing plugin's own tests, written as a third-party author would: only ``plugin_api``
and its pytest harness (the ``tessera`` fixture), nothing from the host."""

from __future__ import annotations

import asyncio

import pytest

from plugin_api.testing import Client, Host, TesseraHarness

INVOICE = "billing.invoice"


@pytest.fixture
async def host(tessera: TesseraHarness) -> Host:
    return await tessera.start(plugins=["billing"])


@pytest.fixture
def clerk(host: Host) -> Client:
    return host.client(tenant="acme", actor="carl", roles=["clerk"])


async def draft(clerk: Client, customer: str = "ACME Corp") -> str:
    amount = {"amount": "120.00", "currency": "USD"}
    result = await clerk.action(
        f"{INVOICE}.create", inputs={"customer": customer, "amount": amount}
    )
    assert result.outputs["status"] == "draft"
    return str(result.outputs["id"])


async def test_issue_assigns_numbers_per_tenant(clerk: Client) -> None:
    other = clerk.as_(tenant="globex")
    numbers = [
        (await client.action(f"{INVOICE}.issue", subject=await draft(client))).outputs["number"]
        for client in (clerk, clerk, other, clerk)
    ]
    assert numbers == ["INV-00001", "INV-00002", "INV-00001", "INV-00003"]


async def test_concurrent_issues_get_distinct_gapless_numbers(clerk: Client) -> None:
    drafts = [await draft(clerk) for _ in range(10)]
    results = await asyncio.gather(
        *(clerk.action(f"{INVOICE}.issue", subject=invoice) for invoice in drafts)
    )
    numbers = sorted(result.outputs["number"] for result in results)
    assert numbers == [f"INV-{n:05d}" for n in range(1, 11)]


async def test_refused_issue_consumes_no_number(clerk: Client) -> None:
    invoice = await draft(clerk)
    assert (await clerk.action(f"{INVOICE}.issue", subject=invoice)).outputs["number"] == (
        "INV-00001"
    )
    again = await clerk.action(f"{INVOICE}.issue", subject=invoice)
    assert (again.status, again.error_kind) == (409, "WorkflowStateMismatch")
    nxt = await clerk.action(f"{INVOICE}.issue", subject=await draft(clerk))
    assert nxt.outputs["number"] == "INV-00002"


async def test_pay_and_void(clerk: Client) -> None:
    accountant = clerk.as_(actor="ada", roles=["accountant"])
    paid, voided = await draft(clerk), await draft(clerk)
    for invoice in (paid, voided):
        await clerk.action(f"{INVOICE}.issue", subject=invoice)
    assert (await accountant.action(f"{INVOICE}.pay", subject=paid)).outputs["paid"] is True
    assert (await accountant.action(f"{INVOICE}.void", subject=voided)).outputs["status"] == "void"
    denied = await clerk.action(f"{INVOICE}.void", subject=paid)
    assert (denied.status, denied.error_kind) == (403, "PolicyDenied")
    detail = await clerk.projection(f"{INVOICE}.detail", subject=paid)
    assert detail.item is not None
    assert (detail.item["status"], detail.item["paid"]) == ("paid", True)


async def test_a_charge_invoices_a_helpdesk_ticket_once(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk", "billing", "billing_helpdesk"])
    staff = host.client(tenant="acme", actor="carl", roles=["requester", "clerk"])
    ticket = await staff.action("helpdesk.ticket.create", inputs={"title": "Fix", "billable": True})
    ticket_id = ticket.outputs["id"]
    usd = {"amount": "50.00", "currency": "USD"}
    inputs = {"ticket": ticket_id, "hours": 1, "amount": usd}
    charged = await staff.action("billing.charge.create", inputs=inputs)
    assert charged.status == 200, charged.json
    invoice = charged.outputs["invoice"]
    shown = await staff.projection("helpdesk.ticket.billing", subject=ticket_id)
    assert shown.item is not None and shown.item["invoice"] == invoice
    listed = await staff.projection(f"{INVOICE}.list")
    assert [(i["id"], i["customer"], i["amount"]) for i in listed.items] == [(invoice, "carl", usd)]
    again = await staff.action("billing.charge.create", inputs=inputs)
    assert (again.status, again.error_kind) == (409, "WorkflowStateMismatch")
    elsewhere = await staff.as_(tenant="globex").action("billing.charge.create", inputs=inputs)
    assert (elsewhere.status, elsewhere.error_kind) == (400, "BadRequest")
