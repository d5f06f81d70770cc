"""Long values in fields a list index covers: the same outcome on SQLite and PostgreSQL, never
a 500 (host/storage/textlimits.py). A ``string`` field a list filters or sorts on holds at
most 2,000 bytes of UTF-8 text; a longer value is a 400 naming the field and the limit, up to
the body limit, for every field type, through creates, edits and actor stamps."""

from __future__ import annotations

import json

import pytest

from plugin_api.testing import Host, TesseraHarness

from ._lists_plugin import FIELDS, THING, ListsPlugin

LIMIT = 2000
BODY_LIMIT = 64 * 1024


@pytest.fixture
async def lab(tessera: TesseraHarness) -> Host:
    return await tessera.start(
        plugins=[], extra=[("lab", ListsPlugin())], entry_points=False, max_body_bytes=BODY_LIMIT
    )


def _longest(field: str) -> object:
    """A value of ``field`` as long as a create body under the body limit allows."""
    room = BODY_LIMIT - len(json.dumps({"subject": None, "inputs": {"name": "n", field: ""}}))
    text = "x" * (room - 200)
    if field == "price":
        return {"amount": "1" * (room - 250), "currency": "EUR"}
    return text


@pytest.mark.parametrize("field", FIELDS)
async def test_a_value_up_to_the_body_limit_is_a_400_on_every_indexed_field(
    lab: Host, field: str
) -> None:
    client = lab.client(tenant="t1")
    inputs = {"name": "n", field: _longest(field)}
    made = await client.action(f"{THING}.create", inputs=inputs)
    assert (made.status, made.error_kind) == (400, "BadRequest"), made.json
    if field in ("name", "note"):
        assert f"Field {field!r} is" in made.json["error"]["message"]
        assert f"holds at most {LIMIT} bytes" in made.json["error"]["message"]
    first = await client.action(f"{THING}.create", inputs={"name": "n"})
    edited = await client.action(
        f"{THING}.edit", subject=first.outputs["id"], inputs={field: _longest(field)}
    )
    assert (edited.status, edited.error_kind) == (400, "BadRequest"), edited.json
    listed = await client.projection(f"{THING}.list")
    assert [item["name"] for item in listed.json["data"]["items"]] == ["n"]


@pytest.mark.parametrize(
    "value", ["a" * LIMIT, "é" * (LIMIT // 2), "😀" * (LIMIT // 4), "ab" * (LIMIT // 2)]
)
async def test_a_value_at_the_limit_is_stored_listed_sorted_and_filtered(
    lab: Host, value: str
) -> None:
    client = lab.client(tenant="t1")
    made = await client.action(f"{THING}.create", inputs={"name": value, "note": value})
    assert made.status == 200, made.json
    for query in ({"sort": "-name", "pageSize": "5"}, {"filter.name": value, "filter.note": value}):
        listed = await client.projection(f"{THING}.list", query=query)
        assert listed.status == 200, listed.json
        assert [item["name"] for item in listed.json["data"]["items"]] == [value]
    one_more = await client.action(f"{THING}.create", inputs={"name": value + "a"})
    assert (one_more.status, one_more.error_kind) == (400, "BadRequest"), one_more.json
    assert f"is {LIMIT + 1} bytes long" in one_more.json["error"]["message"]


async def test_helpdesk_long_title_and_long_actor_stamp_are_400(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk"])
    requester = host.client(actor="rita", roles=["requester"])
    title = "t" * 2700
    created = await requester.action("helpdesk.ticket.create", inputs={"title": title})
    assert (created.status, created.error_kind) == (400, "BadRequest"), created.json
    assert "Field 'title'" in created.json["error"]["message"]
    ticket = await requester.action("helpdesk.ticket.create", inputs={"title": "short"})
    assert ticket.status == 200
    ticket_id = ticket.outputs["id"]
    edited = await host.client(actor="al", roles=["agent"]).action(
        "helpdesk.ticket.edit", subject=ticket_id, inputs={"title": "e" * 3000}
    )
    assert (edited.status, edited.error_kind) == (400, "BadRequest"), edited.json
    agent = host.client(actor="a" * 3000, roles=["agent"])
    started = await agent.action("helpdesk.ticket.start", subject=ticket_id)
    assert (started.status, started.error_kind) == (400, "BadRequest"), started.json
    # Refused at the edge since issue 44 (docs/http.md, "Identity limits"), before the stamp.
    assert "Header X-Actor-Id is 3000 bytes long" in started.json["error"]["message"]
    detail = await requester.projection("helpdesk.ticket.detail", subject=ticket_id)
    assert detail.status == 200 and "short" in detail.body.decode()
