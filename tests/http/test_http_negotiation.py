"""ViewSchema 1.0.0 / 1.1.0 negotiation (``acceptSchemaVersions``) and the v0.1 documents of
the sample projections, byte for byte."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from plugin_api import hookimpl
from plugin_api.testing import Client, Host, TesseraHarness

from ._lists_plugin import THING, ListsPlugin

QUEUE = "helpdesk.ticket.queue"
INVOICES = "billing.invoice.list"
GENERATED = re.compile(rb'"generatedAt":"[^"]*"')


def _without_listing(module: Any) -> object:
    """A plugin with exactly the definitions and handlers of a sample plugin module, its
    projections stripped of their list declarations (the sample plugin as it was in v0.1)."""
    projections = tuple(dataclasses.replace(p, listing=None) for p in module.PROJECTIONS)
    hooks = {
        name: hookimpl(getattr(module, name))
        for name in ("tessera_entities", "tessera_actions", "tessera_policies", "tessera_effects")
        if hasattr(module, name)
    }
    return SimpleNamespace(**hooks, tessera_projections=hookimpl(lambda: projections))


async def _fill(host: Host) -> tuple[str, str]:
    agent = host.client(tenant="acme", actor="alice", roles=["agent", "requester"])
    clerk = host.client(tenant="acme", actor="carl", roles=["clerk"])
    ticket = ""
    for n in range(5):
        inputs = {"title": f"Ticket {n}", "priority": ("low", "high")[n % 2]}
        ticket = (await agent.action("helpdesk.ticket.create", inputs=inputs)).outputs["id"]
    await agent.action("helpdesk.ticket.start", subject=ticket)
    invoice = ""
    for n in range(4):
        amount = {"amount": f"{n}.5", "currency": "USD"}
        invoice_inputs: dict[str, object] = {"customer": f"C{n}", "amount": amount}
        invoice = (await clerk.action("billing.invoice.create", inputs=invoice_inputs)).outputs[
            "id"
        ]
    await clerk.action("billing.invoice.issue", subject=invoice)
    return ticket, invoice


async def _documents(client: Client, ticket: str, invoice: str) -> list[bytes]:
    requests: list[tuple[str, Mapping[str, str] | Sequence[tuple[str, str]] | None]] = [
        (QUEUE, None),
        (INVOICES, None),
        (QUEUE, {"acceptSchemaVersions": "1.0.0"}),
        (QUEUE, {"acceptSchemaVersions": "2.0.0,1.0.1"}),
        (QUEUE, {"locale": "fr-FR", "renderer": "x", "unknown": "1"}),
        ("helpdesk.ticket.detail", {"subject": ticket}),
        ("billing.invoice.detail", {"subject": invoice}),
        (QUEUE, {"subject": ticket, "acceptSchemaVersions": "1.0.0"}),
    ]
    bodies = []
    for fqn, query in requests:
        result = await client.projection(fqn, query=query)
        assert result.status == 200, result.json
        assert result.json["schemaVersion"] == "1.0.0"
        bodies.append(GENERATED.sub(b'"generatedAt":""', result.body))
    return bodies


@pytest.mark.parametrize("chunk_rows", [1000, 2])
async def test_sample_projections_answer_v01_requests_byte_for_byte(
    tessera: TesseraHarness, chunk_rows: int
) -> None:
    """The sample projections, with their list declarations, give a v0.1 request the bytes
    the same projections without declarations (v0.1) give, whole or streamed."""
    from tessera_billing import plugin as billing
    from tessera_helpdesk import plugin as helpdesk

    current = await tessera.start(plugins=["helpdesk", "billing"], list_chunk_rows=chunk_rows)
    ticket, invoice = await _fill(current)
    viewer = current.client(tenant="acme")  # a v0.1 client: a tenant, nothing else
    today = await _documents(viewer, ticket, invoice)
    before = await tessera.start(
        plugins=[],
        entry_points=False,
        extra=[("helpdesk", _without_listing(helpdesk)), ("billing", _without_listing(billing))],
        list_chunk_rows=chunk_rows,
    )
    assert today == await _documents(before.client(tenant="acme"), ticket, invoice)
    queue = (await viewer.projection(QUEUE)).json
    assert queue["filters"] == []
    assert queue["data"]["pagination"] == {"pageSize": 5, "nextCursor": None}
    assert [item["id"] for item in queue["data"]["items"]] == sorted(
        item["id"] for item in queue["data"]["items"]
    )


def _instant(rendered: str) -> tuple[str, str]:
    """A rendered datetime's sort key: trailing zeros of the fraction are not rendered, so
    the strings alone do not sort as the instants do (``...00.1Z`` is after ``...00.15Z``)."""
    fraction = rendered[20:-1] if rendered[19:20] == "." else ""
    return rendered[:19], fraction.ljust(6, "0")


async def test_v11_document_of_the_queue(host: Host) -> None:
    agent = host.client(tenant="acme", actor="alice", roles=["agent", "requester"])
    for n in range(3):
        await agent.action("helpdesk.ticket.create", inputs={"title": f"T{n}"})
    v10 = (await agent.projection(QUEUE)).json
    result = await agent.projection(QUEUE, query={"acceptSchemaVersions": "1.0.0, 1.1.0"})
    document = result.json
    assert document["schemaVersion"] == "1.1.0"
    assert list(document) == [
        "schemaVersion",
        "targetProfile",
        "metadata",
        "fields",
        "actions",
        "filters",
        "sort",
        "search",
        "data",
    ]
    for key in ("targetProfile", "fields", "actions"):
        assert document[key] == v10[key]
    assert document["filters"][0] == {
        "field": "state",
        "label": "State",
        "type": "enum",
        "operators": ["eq", "ne", "in", "lt", "lte", "gt", "gte", "null"],
        "options": ["open", "in_progress", "resolved", "closed"],
    }
    assert [f["field"] for f in document["filters"]] == [
        "state",
        "priority",
        "assignee",
        "due_at",
        "created_at",
    ]
    assert document["filters"][2] == {
        "field": "assignee",
        "label": "Assignee",
        "type": "string",
        "operators": ["eq", "in", "null"],
    }
    assert document["filters"][4]["type"] == "system_string"
    assert document["sort"] == {
        "fields": ["created_at", "due_at", "priority", "title"],
        "default": ["-created_at"],
        "active": ["-created_at"],
    }
    assert document["search"] == {"fields": ["title"], "active": None}
    items = document["data"]["items"]
    assert [i["created_at"] for i in items] == sorted(
        (i["created_at"] for i in items), key=_instant, reverse=True
    )
    # the declared default page size (50) applies to 1.1.0 requests only
    assert document["data"]["pagination"] == {
        "pageSize": 50,
        "nextCursor": None,
        "maxPageSize": 1000,
    }
    active = await agent.projection(
        QUEUE, query={"acceptSchemaVersions": "1.1.0", "sort": "priority,-title", "q": "t"}
    )
    assert active.json["sort"]["active"] == ["priority", "-title"]
    assert active.json["search"]["active"] == "t"


async def test_v11_detail_and_projection_without_declarations(lab_host: Host) -> None:
    client = lab_host.client(tenant="t1")
    thing = (await client.action(f"{THING}.create", inputs={"name": "x"})).outputs["id"]
    detail = await client.projection(
        f"{THING}.list", query={"subject": thing, "acceptSchemaVersions": "1.1.0"}
    )
    assert detail.json["schemaVersion"] == "1.1.0"
    assert detail.json["data"] == {"item": detail.item}
    assert detail.json["sort"]["active"] == []
    assert detail.json["search"] == {"fields": ["name", "note"], "active": None}
    bare = await client.projection(f"{THING}.bare", query={"acceptSchemaVersions": "1.1.0"})
    assert bare.json["schemaVersion"] == "1.1.0"
    assert bare.json["filters"] == []
    assert bare.json["sort"] == {"fields": [], "default": [], "active": []}
    assert "search" not in bare.json
    assert bare.json["data"]["pagination"] == {
        "pageSize": 1,
        "nextCursor": None,
        "maxPageSize": 1000,
    }


async def test_default_page_size_and_sort_only_for_v11_or_list_parameters(lab_host: Host) -> None:
    client = lab_host.client(tenant="t1")
    for name in ("b", "a", "c"):
        await client.action(f"{THING}.create", inputs={"name": name})
    paged = f"{THING}.paged"
    v10 = await client.projection(paged)
    assert len(v10.items) == 3 and v10.json["data"]["pagination"]["pageSize"] == 3
    v11 = await client.projection(paged, query={"acceptSchemaVersions": "1.1.0"})
    assert [i["name"] for i in v11.items] == ["c", "b"]
    cursor = v11.json["data"]["pagination"]["nextCursor"]
    assert cursor is not None
    # a cursor without pageSize continues with the default page size, at any version
    rest = await client.projection(paged, query={"cursor": cursor})
    assert [i["name"] for i in rest.items] == ["a"]
    assert rest.json["data"]["pagination"] == {"pageSize": 2, "nextCursor": None}
    # any list parameter at 1.0.0 brings the default sort, but no page size
    filtered = await client.projection(paged, query={"sort": "name"})
    assert [i["name"] for i in filtered.items] == ["a", "b", "c"]


@pytest.fixture
async def lab_host(tessera: TesseraHarness) -> Host:
    return await tessera.start(plugins=[], extra=[("lab", ListsPlugin())], entry_points=False)
