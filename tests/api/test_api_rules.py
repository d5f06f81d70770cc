"""Every rule the compiled graph enforces on an input is in the OpenAPI document (issue 40): a
plugin with every declared constraint of every field type (``tests/api/_rules_plugin.py``)
round-trips through the served document. Each value is judged by the document's schema of
the create action's ``inputs`` (JSON Schema 2020-12, formats asserted) and sent to the
action: a value the document says is valid is accepted (200), one it says is invalid is
refused (400). The few values JSON Schema cannot judge are listed and pinned
(:data:`UNDESCRIBED`; docs/openapi.md, "What JSON Schema cannot say")."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest

from plugin_api.testing import Client, SharedHarness

from ._rules_plugin import CREATE, RULES, TARGET_CREATE

MONEY = "EUR"


def _money(amount: object, currency: str = MONEY) -> dict[str, object]:
    return {"amount": amount, "currency": currency}


# fmt: off
CANDIDATES: dict[str, list[Any]] = {
    "short": ["", "abcde", "abcdef", "ab c", 5, None],
    "long": ["", "a", "ab", "a" * 300, "☃☃", None],
    "code": ["AB-123", "ab-123", "AB-1234", "xAB-123", "AB-123 ", "", None],
    "hint": ["abc", "abcdef", "", None],  # advisory max_length: longer text is stored
    "stars": [1, 5, 0, 6, 5.9, 0.9, 1.0, 6.0, -0.5, "3", "9", " 4 ", "5.99", "0.5", "+2",
              "007", "5.", ".5", "", "x", True, [], {}, 1e3, None],
    "below": [-1, -3, -3.9, -4, -0.5, 0, "-2", "-3.5", "-4", "-0.9", "-.5", None],
    "count": [0, -(2**63), 2**63 - 1, 2**63, -(2**63) - 1, 12.7, "-12.7",
              "9223372036854775807", "9223372036854775808", "1.5.1", None],
    "price": [_money("0.01"), _money("0.00"), _money("0"), _money("100.50"), _money("100.5"),
              _money("100.51"), _money(100.5), _money(0.001), _money(50), _money("-1"),
              _money(" 7.5 "), _money("+1"), _money(".5"), _money("5."), _money("abc"),
              _money("5", "USD"), {"amount": "5"}, "5", None],
    "debt": [_money(-10), _money("-10.00"), _money("-10.01"), _money("-0.5"), _money("-0.49"),
             _money(0), _money(-3.25), _money("-.5"), None],
    "amount": [_money("12345678901234567890.123"), _money("-0"), _money("1" * 65), None],
    "level": ["low", "high", "LOW", "", 1, None],
    "flag": [True, False, "true", 1, None],
    "due": ["2030-01-02T03:04:05Z", "2030-01-02T03:04:05.123+05:30", "2030-02-30T00:00:00Z",
            "2030-13-01T00:00:00Z", "not a date", 20300102, None],
    "target": ["", 7],  # an existing row's id is added by the test
    "size": [0, 9, 10, -1, None],  # has a default: null is refused (not nullable)
}
# fmt: on
"""Values of each field; each is sent alone (with a valid ``title``)."""

UNDESCRIBED: dict[str, list[tuple[Any, bool, bool]]] = {
    "stars": [("1e0", False, True), ("0.05e2", False, True)],  # exponent: (document, service)
    "price": [(_money("1e1"), False, True)],
    "due": [
        ("2030-01-02 03:04", False, True),  # the service reads more than RFC 3339
        ("2030-06-30T23:59:60Z", True, False),  # a leap second, said in words
        ("0000-01-01T00:00:00Z", True, False),  # year 0000, said in words
    ],
    "target": [("01J00000000000000000000000", True, False)],  # existence: checked on write
    "long": [("a\x00b", True, False)],  # NUL cannot be stored, said in words
}
"""What JSON Schema cannot judge (docs/openapi.md): (value, the document's verdict, the
service's)."""


async def _inputs_schema(client: Client) -> Any:
    document = (await client.request("GET", "/openapi.json")).json
    operation = document["paths"][f"/actions/{CREATE}"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    return jsonschema_rs.validator_for(body["properties"]["inputs"], validate_formats=True)


async def _accepted(client: Client, inputs: dict[str, Any]) -> bool:
    answer = await client.action(CREATE, inputs=inputs)
    assert answer.status in (200, 400), (inputs, answer.status, answer.json)
    return answer.status == 200


@pytest.fixture
async def client(tessera_shared: SharedHarness) -> Client:
    host = await tessera_shared.start(plugins=[], extra=[("rules", RULES)])
    return host.client(actor="ann")


async def test_every_constraint_round_trips_through_the_document(client: Client) -> None:
    validator = await _inputs_schema(client)
    target = await client.action(TARGET_CREATE, inputs={"name": "one"})
    candidates = {**CANDIDATES, "target": [*CANDIDATES["target"], target.json["outputs"]["id"]]}
    disagreements = []
    checked = 0
    for name, values in candidates.items():
        for value in values:
            inputs = {"title": "ok", name: value}
            said = validator.is_valid(inputs)
            if said != await _accepted(client, inputs):
                disagreements.append((name, value, "document says valid" if said else "invalid"))
            checked += 1
    assert disagreements == []
    assert checked >= 120


async def test_required_fields_and_unknown_inputs(client: Client) -> None:
    validator = await _inputs_schema(client)
    for inputs in ({}, {"title": None}, {"title": "ok", "nope": 1}, {"title": "ok"}):
        assert validator.is_valid(inputs) == await _accepted(client, inputs), inputs


async def test_what_json_schema_cannot_judge_is_pinned(client: Client) -> None:
    validator = await _inputs_schema(client)
    for name, cases in UNDESCRIBED.items():
        for value, document, service in cases:
            inputs = {"title": "ok", name: value}
            assert validator.is_valid(inputs) is document, (name, value)
            assert await _accepted(client, inputs) is service, (name, value)
