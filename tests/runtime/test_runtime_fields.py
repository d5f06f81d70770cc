"""Every field type's write shape and read shape through create, update and the projections,
edge values included; a value that does not fit is a 400 naming the field, and nothing is
written (the list projection stays empty, an updated row stays exactly as it was)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from plugin_api.testing import Client, Host, Result

from ._support import AUDIT, INVOICE, TICKET, snapshot


@pytest.fixture
def host(own_host: Host) -> Host:
    """A host of the test's own: these tests read the whole database (nothing written anywhere)."""
    return own_host


INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def eur(amount: object) -> dict[str, object]:
    return {"amount": amount, "currency": "EUR"}


async def post_raw_json(client: Client, fqn: str, body: str) -> Result:
    """POST a JSON text as is (to send number literals json.dumps would not produce)."""
    return await client.request(
        "POST", f"/actions/{fqn}", body=body.encode(), headers={"Content-Type": "application/json"}
    )


# (field, write value, read value) on helpdesk.ticket.
ACCEPTED: list[tuple[str, Any, Any]] = [
    # string
    ("title", "", ""),
    ("title", "Drucker kaputt — ☃ ü 🖨", "Drucker kaputt — ☃ ü 🖨"),
    ("title", "x" * 500, "x" * 500),  # maxLength is advisory, not enforced by storage
    ("description", None, None),
    ("description", "", ""),
    ("description", "null", "null"),
    ("description", "line1\nline2\t'quoted' \"double\"", "line1\nline2\t'quoted' \"double\""),
    # integer
    ("estimate_hours", 0, 0),
    ("estimate_hours", None, None),
    ("estimate_hours", -1, -1),
    ("estimate_hours", INT64_MAX, INT64_MAX),
    ("estimate_hours", INT64_MIN, INT64_MIN),
    ("estimate_hours", str(INT64_MAX), INT64_MAX),
    ("estimate_hours", str(INT64_MIN), INT64_MIN),
    ("estimate_hours", 3.9, 3),
    ("estimate_hours", -3.9, -3),
    ("estimate_hours", 0.5, 0),
    ("estimate_hours", "4.5", 4),
    ("estimate_hours", "-4.5", -4),
    ("estimate_hours", "0", 0),
    ("estimate_hours", 1e3, 1000),
    ("estimate_hours", "12e2", 1200),
    # datetime
    ("due_at", "2030-01-02T03:04:05Z", "2030-01-02T03:04:05Z"),
    ("due_at", "2030-01-02T03:04:05+05:30", "2030-01-01T21:34:05Z"),
    ("due_at", "2030-01-02T03:04:05-0800", "2030-01-02T11:04:05Z"),
    ("due_at", "2030-01-02T03:04:05+00:00", "2030-01-02T03:04:05Z"),
    ("due_at", "2030-01-02T03:04", "2030-01-02T03:04:00Z"),
    ("due_at", "2030-01-02T03:04:05.250+01:00", "2030-01-02T02:04:05.25Z"),
    ("due_at", "2030-01-02T03:04:05.1234567Z", "2030-01-02T03:04:05.123456Z"),
    ("due_at", "2030-12-31T23:30:00-01:00", "2031-01-01T00:30:00Z"),
    ("due_at", "2028-02-29T00:00:00Z", "2028-02-29T00:00:00Z"),
    ("due_at", None, None),
    # enum
    ("priority", "low", "low"),
    ("priority", "urgent", "urgent"),
    # boolean
    ("billable", True, True),
    ("billable", False, False),
    # money
    ("budget", eur("0.10"), eur("0.10")),
    ("budget", eur("12345678901234567890.123456789"), eur("12345678901234567890.123456789")),
    ("budget", eur("0"), eur("0")),
    ("budget", eur("0.00"), eur("0.00")),
    ("budget", eur("-5.50"), eur("-5.50")),
    ("budget", eur("1E+3"), eur("1000")),
    ("budget", eur(12.5), eur("12.5")),
    ("budget", eur(7), eur("7")),
    ("budget", None, None),
]


ACCEPTED_FIELDS = sorted({field for field, _, _ in ACCEPTED})


@pytest.mark.parametrize("field", ACCEPTED_FIELDS)
async def test_write_and_read_shapes(host: Host, field: str) -> None:
    """One host per field; every value of ACCEPTED for it through create and update."""
    client = host.client(actor="alice", roles=["agent"])
    for written, read in [(w, r) for f, w, r in ACCEPTED if f == field]:
        case = (field, written, read)
        created = await client.action(TICKET + ".create", inputs={"title": "T", field: written})
        assert created.outputs[field] == read, case
        ticket = created.outputs["id"]
        item = (await client.projection(TICKET + ".detail", subject=ticket)).item
        assert item is not None
        assert item[field] == read, case
        assert type(item[field]) is type(read), case  # 0 a number, false a boolean, "" a string
        if field in ("title", "priority", "due_at"):
            rows = (await client.projection(TICKET + ".queue")).items
            assert [row[field] for row in rows if row["id"] == ticket] == [read], case

        # The same value written by an update reads back the same way.
        other = (await client.action(TICKET + ".create", inputs={"title": "U"})).outputs["id"]
        edited = await client.action(TICKET + ".edit", subject=other, inputs={field: written})
        assert edited.outputs[field] == read, case
        item = (await client.projection(TICKET + ".detail", subject=other)).item
        assert item is not None and item[field] == read, case
        assert type(item[field]) is type(read), case


async def test_money_read_shapes_keep_amounts_exactly(host: Host) -> None:
    clerk = host.client(actor="carl", roles=["clerk"])
    amounts = ["0.10", "12345678901234567890.123456789", "100", "-0.01", "0.000000001"]
    for amount in amounts:
        money = {"amount": amount, "currency": "USD"}
        created = await clerk.action(INVOICE + ".create", inputs={"customer": "c", "amount": money})
        assert created.outputs["amount"] == money
    items = (await clerk.projection(INVOICE + ".list")).items
    assert sorted(item["amount"]["amount"] for item in items) == sorted(amounts)
    assert {item["amount"]["currency"] for item in items} == {"USD"}


async def test_money_and_integers_as_json_number_literals(host: Host) -> None:
    client = host.client(actor="alice", roles=["agent"])
    # JSON number literals are read exactly: the scale of 0.10 survives, no float rounding.
    body = (
        '{"subject": null, "inputs": {"title": "n", "budget": {"amount": 0.10, "currency": "EUR"},'
        ' "estimate_hours": 9223372036854775807.9}}'
    )
    created = await post_raw_json(client, TICKET + ".create", body)
    assert created.outputs["budget"] == eur("0.10")
    assert created.outputs["estimate_hours"] == INT64_MAX
    body = (
        '{"subject": null, "inputs": {"title": "n", '
        '"budget": {"amount": 12345678901234567890.123456789, "currency": "EUR"}}}'
    )
    created = await post_raw_json(client, TICKET + ".create", body)
    item = (await client.projection(TICKET + ".detail", subject=created.outputs["id"])).item
    assert item is not None and item["budget"] == eur("12345678901234567890.123456789")


# (field, write value) on helpdesk.ticket create that must be refused.
REJECTED: list[tuple[str, Any]] = [
    ("title", None),  # required
    ("title", 5),
    ("title", True),
    ("title", ["a"]),
    ("title", {"text": "a"}),
    ("title", "nul\x00byte"),
    ("estimate_hours", INT64_MAX + 1),
    ("estimate_hours", INT64_MIN - 1),
    ("estimate_hours", str(INT64_MAX + 1)),
    ("estimate_hours", 1e19),
    ("estimate_hours", 10**30),
    ("estimate_hours", "1e400"),
    ("estimate_hours", True),
    ("estimate_hours", False),
    ("estimate_hours", ""),
    ("estimate_hours", "four"),
    ("estimate_hours", "0x10"),
    ("estimate_hours", "NaN"),
    ("estimate_hours", "Infinity"),
    ("estimate_hours", [1]),
    ("billable", 1),
    ("billable", 0),
    ("billable", "true"),
    ("billable", None),  # not nullable
    ("priority", "URGENT"),
    ("priority", "critical"),
    ("priority", ""),
    ("priority", None),  # not nullable
    ("priority", 1),
    ("budget", {"amount": "1.00", "currency": "USD"}),  # wrong currency
    ("budget", {"amount": "1.00", "currency": "eur"}),
    ("budget", {"amount": "1.00"}),
    ("budget", {"currency": "EUR"}),
    ("budget", {"amount": "1.00", "currency": "EUR", "note": "x"}),
    ("budget", eur("abc")),
    ("budget", eur("")),
    ("budget", eur("NaN")),
    ("budget", eur("Infinity")),
    ("budget", eur("1" * 70)),
    ("budget", eur(True)),
    ("budget", eur(None)),
    ("budget", "12.00"),
    ("budget", 12),
    ("due_at", "2030-02-30T00:00:00Z"),
    ("due_at", "2030-01-02T25:00:00Z"),
    ("due_at", "2030-01-02T03:04:05+24:00"),
    ("due_at", "2030-01-02"),
    ("due_at", "tomorrow"),
    ("due_at", ""),
    ("due_at", 1893456000),
    ("due_at", True),
]


async def test_values_that_do_not_fit_are_refused_and_nothing_is_written(host: Host) -> None:
    url = host.database_url
    client = host.client(actor="alice", roles=["agent"])
    for field, value in REJECTED:
        inputs = {"title": "T", field: value}
        result = await client.action(TICKET + ".create", inputs=inputs)
        assert result.status == 400 and result.error_kind == "BadRequest", (
            field,
            value,
            result.json,
        )
        assert repr(field) in result.json["error"]["message"], (field, result.json)
    assert (await client.projection(TICKET + ".queue")).items == []
    assert (await snapshot(url, AUDIT))[AUDIT] == []

    # The same values on update: 400, and the row stays exactly as it was.
    ticket = (await client.action(TICKET + ".create", inputs={"title": "Keep"})).outputs["id"]
    before = await snapshot(url, TICKET, AUDIT)
    for field, value in REJECTED:
        # A valid key next to the bad one is not written either.
        patch = {"description": "changed", field: value}
        result = await client.action(TICKET + ".edit", subject=ticket, inputs=patch)
        assert result.status == 400 and result.error_kind == "BadRequest", (
            field,
            value,
            result.json,
        )
        assert repr(field) in result.json["error"]["message"]
    assert await snapshot(url, TICKET, AUDIT) == before


async def test_invoice_money_is_required_and_currency_bound(host: Host) -> None:
    clerk = host.client(actor="carl", roles=["clerk"])
    for amount in (None, {"amount": "1", "currency": "EUR"}, {"amount": "x", "currency": "USD"}):
        inputs = {"customer": "c", "amount": amount}
        result = await clerk.action(INVOICE + ".create", inputs=inputs)
        assert result.status == 400 and result.error_kind == "BadRequest"
        assert "'amount'" in result.json["error"]["message"]
    result = await clerk.action(INVOICE + ".create", inputs={"customer": "c"})
    assert result.status == 400 and "'amount'" in result.json["error"]["message"]
    assert (await clerk.projection(INVOICE + ".list")).items == []


async def test_nullable_fields_set_to_null_read_back_as_json_null(host: Host) -> None:
    client = host.client(actor="alice", roles=["agent"])
    full = {
        "title": "All set",
        "description": "d",
        "estimate_hours": 4,
        "due_at": "2030-01-02T03:04:05Z",
        "budget": eur("1.00"),
    }
    ticket = (await client.action(TICKET + ".create", inputs=full)).outputs["id"]
    nulls = {name: None for name in ("description", "estimate_hours", "due_at", "budget")}
    edited = await client.action(TICKET + ".edit", subject=ticket, inputs=nulls)
    assert {k: edited.outputs[k] for k in nulls} == nulls
    result = await client.projection(TICKET + ".detail", subject=ticket)
    raw = json.dumps(result.json)
    assert '"null"' not in raw
    item = result.item
    assert item is not None
    assert {k: item[k] for k in nulls} == nulls
