"""Reference fields and the billing/helpdesk cooperation (``billing.charge``, a plugin of the
billing distribution that works on helpdesk tickets through the typed data API only)."""

from __future__ import annotations

from typing import Any

import pytest

from host.graph.compiler import GraphError
from plugin_api import Entity, Field, FieldType, hookimpl
from plugin_api.testing import Client, Host, TesseraHarness

from ._support import AUDIT, INVOICE, TICKET, audit_rows, entity_row, snapshot
from .test_runtime_rules import assert_error, new_ticket

CHARGE = "billing.charge"
EVERYTHING = (TICKET, INVOICE, CHARGE, AUDIT)
USD = {"amount": "300.00", "currency": "USD"}


@pytest.fixture
async def host(tessera: TesseraHarness) -> Host:
    return await tessera.start()  # every installed plugin, billing_helpdesk included


def staff(host: Host, tenant: str = "t1") -> Client:
    return host.client(tenant=tenant, actor="carl", roles=["agent", "clerk", "requester"])


async def charge(client: Client, ticket: object, **inputs: Any) -> Any:
    return await client.action(
        f"{CHARGE}.create", inputs={"ticket": ticket, "hours": 3, "amount": USD, **inputs}
    )


async def test_a_charge_invoices_the_ticket_and_records_it_on_the_ticket(host: Host) -> None:
    client = staff(host)
    ticket = await new_ticket(client, billable=True)
    before = await entity_row(host.database_url, TICKET, ticket)
    assert before is not None and before["invoice"] is None
    result = await charge(client, ticket)
    assert result.status == 200, result.json
    invoice = result.outputs["invoice"]
    assert result.outputs["ticket"] == ticket
    shown = (await client.projection(f"{INVOICE}.detail", subject=invoice)).item
    assert shown is not None
    assert shown["customer"] == "carl" and shown["amount"] == USD and shown["status"] == "draft"
    after = await entity_row(host.database_url, TICKET, ticket)
    assert after is not None and after["invoice"] == invoice
    assert after["_version"] != before["_version"]
    detail = (await client.projection(f"{TICKET}.detail", subject=ticket)).item
    assert detail is not None and detail["_version"] == after["_version"]
    records = await audit_rows(host.database_url, action=f"{CHARGE}.create")
    assert [(r["entity"], r["subject_id"]) for r in records] == [
        (INVOICE, invoice),
        (TICKET, ticket),
        (CHARGE, result.outputs["id"]),
    ]
    # Once only: the ticket now carries its invoice.
    again = await charge(client, ticket)
    assert "already invoiced" in assert_error(again, 409, "WorkflowStateMismatch")


async def test_a_ticket_that_is_not_billable_is_refused(host: Host) -> None:
    client = staff(host)
    ticket = await new_ticket(client)
    before = await snapshot(host.database_url, *EVERYTHING)
    refused = await charge(client, ticket)
    assert "not billable" in assert_error(refused, 409, "WorkflowStateMismatch")
    assert await snapshot(host.database_url, *EVERYTHING) == before


async def test_a_reference_must_name_a_row_of_the_target_entity_in_the_tenant(
    host: Host,
) -> None:
    client = staff(host)
    elsewhere = await new_ticket(staff(host, "t2"), billable=True)
    invoice = await client.action(f"{INVOICE}.create", inputs={"customer": "c", "amount": USD})
    wrong_entity = str(invoice.outputs["id"])
    before = await snapshot(host.database_url, *EVERYTHING)
    for target in ("01ARZ3NDEKTSV4RRFFQ69G5FAV", elsewhere, wrong_entity):
        message = assert_error(await charge(client, target), 400, "BadRequest")
        assert "'ticket'" in message and target in message
    for bad in (None, 7, ""):
        assert "'ticket'" in assert_error(await charge(client, bad), 400, "BadRequest")
    assert await snapshot(host.database_url, *EVERYTHING) == before


async def test_the_viewschema_names_the_target_entity(host: Host) -> None:
    document = (await staff(host).projection(f"{CHARGE}.list")).json
    fields = {f["name"]: f for f in document["fields"]}
    assert fields["ticket"] == {
        "name": "ticket",
        "type": "reference",
        "label": "Ticket",
        "typeOptions": {"entity": TICKET},
    }
    assert fields["invoice"]["typeOptions"] == {"entity": INVOICE}
    (create,) = document["actions"]
    ticket_input = next(i for i in create["inputs"] if i["name"] == "ticket")
    assert ticket_input["typeOptions"] == {"entity": TICKET} and ticket_input["required"]


class _Dangling:
    @hookimpl
    def tessera_entities(self) -> tuple[Entity, ...]:
        return (
            Entity(
                fqn="dangling.thing",
                fields=(Field(name="owner", type=FieldType.REFERENCE, target="nowhere.person"),),
            ),
        )


class _Untargeted:
    @hookimpl
    def tessera_entities(self) -> tuple[Entity, ...]:
        return (
            Entity(
                fqn="untargeted.thing",
                fields=(
                    Field(name="owner", type=FieldType.REFERENCE),
                    Field(name="note", type=FieldType.STRING, target="helpdesk.ticket"),
                ),
            ),
        )


async def test_the_compiler_names_the_plugin_of_a_dangling_reference(
    tessera: TesseraHarness,
) -> None:
    with pytest.raises(GraphError) as raised:
        await tessera.start(plugins=[], extra=[("dangling", _Dangling())])
    message = str(raised.value)
    assert "dangling" in message and "'nowhere.person'" in message and "'owner'" in message
    with pytest.raises(GraphError) as raised:
        await tessera.start(plugins=["helpdesk"], extra=[("untargeted", _Untargeted())])
    message = str(raised.value)
    assert "needs the FQN of its target entity" in message
    assert "target is only allowed on reference fields" in message


async def test_a_reference_field_filters_a_list(host: Host) -> None:
    client = staff(host)
    first, second = [await new_ticket(client, billable=True) for _ in range(2)]
    for ticket in (first, second):
        assert (await charge(client, ticket)).status == 200
    result = await client.request("GET", f"/projections/{CHARGE}.list?filter.ticket={second}")
    assert result.status == 200, result.json
    assert [item["ticket"] for item in result.json["data"]["items"]] == [second]
    result = await client.request("GET", f"/projections/{CHARGE}.list?filter.invoice.null=true")
    assert result.status == 200, result.json
    assert result.json["data"]["items"] == []
