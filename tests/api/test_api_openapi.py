"""The OpenAPI document: valid OpenAPI 3.1, deterministic, served and printed alike, and
describing each operation from the graph (inputs, outputs, statuses and error kinds)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator

from host import cli
from host.config import Settings
from host.graph import build_graph
from host.http.openapi import build_openapi, openapi_text
from plugin_api.errors import ALL_ERRORS, EXTENDED_ERRORS
from plugin_api.testing import Host, TesseraHarness

SAMPLES = Settings(plugins_only=("helpdesk", "billing", "billing_helpdesk"))


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return build_openapi(build_graph(SAMPLES))


def operation(document: dict[str, Any], path: str, method: str = "post") -> dict[str, Any]:
    found: dict[str, Any] = document["paths"][path][method]
    return found


def body_schema(document: dict[str, Any], fqn: str) -> dict[str, Any]:
    op = operation(document, f"/actions/{fqn}")
    schema: dict[str, Any] = op["requestBody"]["content"]["application/json"]["schema"]
    return schema


def kinds(document: dict[str, Any], path: str, method: str = "post") -> dict[int, list[str]]:
    responses = operation(document, path, method)["responses"]
    return {
        int(status): response["content"]["application/json"]["schema"]["allOf"][1]["properties"][
            "error"
        ]["properties"]["kind"]["enum"]
        for status, response in responses.items()
        if status != "200"
    }


def test_the_sample_document_validates(document: dict[str, Any]) -> None:
    OpenAPIV31SpecValidator(document).validate()
    assert document["openapi"] == "3.1.0"
    operations = [(m, p) for p, item in document["paths"].items() for m in item if m != "options"]
    # health, ready, openapi, 9 projections (helpdesk.notification.inbox: issue 16) and their
    # histories (issue 26), 14 actions, availability (issue 27), changes (issue 28), the two
    # audit routes (issue 40: every route)
    assert len(operations) == 39


def test_a_reference_field_is_a_string_naming_its_target(document: dict[str, Any]) -> None:
    text = json.dumps(document)
    assert "The id of a helpdesk.ticket row of the same tenant (checked on write)." in text
    assert "The id of a billing.invoice row." in text


def test_every_projection_and_action_is_an_operation(document: dict[str, Any]) -> None:
    graph = build_graph(SAMPLES)
    paths = set(document["paths"])
    assert {f"/projections/{fqn}" for fqn in graph.projections} <= paths
    assert {f"/actions/{fqn}" for fqn in graph.actions} <= paths
    ids = [op["operationId"] for item in document["paths"].values()
           for m, op in item.items() if m != "options"]  # fmt: skip
    assert len(ids) == len(set(ids))


def test_deterministic_with_the_graph_hash() -> None:
    graph = build_graph(SAMPLES)
    first = openapi_text(graph)
    assert first == openapi_text(build_graph(SAMPLES))
    assert json.loads(first)["info"]["x-graph-hash"] == graph.hash
    assert graph.hash in json.loads(first)["info"]["description"]


def test_create_inputs_carry_types_enums_formats_lengths_nullability(
    document: dict[str, Any],
) -> None:
    inputs = body_schema(document, "helpdesk.ticket.create")["properties"]["inputs"]
    assert inputs["required"] == ["title"] and inputs["additionalProperties"] is False
    fields = inputs["properties"]
    assert list(fields) == [
        "title", "description", "priority", "estimate_hours", "due_at", "billable", "budget"
    ]  # fmt: skip
    # maxLength 120 is advisory (spec 2.6): no rule of the request, an extension keyword
    assert fields["title"]["type"] == "string" and "maxLength" not in fields["title"]
    assert fields["title"]["x-tessera-advisory-max-length"] == 120
    assert fields["description"]["type"] == ["string", "null"]
    assert fields["priority"] == {"enum": ["low", "normal", "high", "urgent"], "default": "normal"}
    assert fields["estimate_hours"]["title"] == "Estimate (h)"
    assert {"type": "null"} in fields["estimate_hours"]["anyOf"]
    assert fields["due_at"]["type"] == ["string", "null"]
    assert fields["due_at"]["format"] == "date-time"
    assert fields["billable"] == {"type": "boolean", "default": False}
    money = fields["budget"]["anyOf"][0]
    assert money["properties"]["currency"] == {"const": "EUR"}
    assert money["required"] == ["amount", "currency"]


def test_subject_and_inputs_per_action_kind(document: dict[str, Any]) -> None:
    create = body_schema(document, "billing.invoice.create")
    assert create["properties"]["subject"]["type"] == "null"
    assert create["required"] == ["inputs"]
    amend = body_schema(document, "billing.invoice.amend")
    assert amend["required"] == ["subject"]
    assert amend["properties"]["subject"]["allOf"][1] == {
        "properties": {"entityFqn": {"const": "billing.invoice"}}
    }
    assert "required" not in amend["properties"]["inputs"]["anyOf"][0]
    escalate = body_schema(document, "helpdesk.ticket.escalate")["properties"]["inputs"]
    assert escalate["anyOf"][0]["properties"] == {}
    resolve = body_schema(document, "helpdesk.ticket.resolve")["properties"]["inputs"]
    assert list(resolve["anyOf"][0]["properties"]) == ["resolution"]
    assert "additionalProperties" not in resolve["anyOf"][0]  # other keys go to the audit


def test_outputs_per_action_kind(document: dict[str, Any]) -> None:
    def outputs(fqn: str) -> dict[str, Any]:
        schema = operation(document, f"/actions/{fqn}")["responses"]["200"]["content"]
        ran, rehearsed = schema["application/json"]["schema"]["oneOf"]
        found: dict[str, Any] = ran["properties"]["outputs"]
        assert rehearsed["properties"]["outputs"] == found  # a dry run's (issue 27)
        return found

    create = outputs("helpdesk.ticket.create")
    assert create["required"] == ["id", "state"]
    assert "requester" not in create["properties"]  # stamped, not echoed
    start = outputs("helpdesk.ticket.start")
    assert start["required"] == ["state", "assignee", "_version"]
    issue = outputs("billing.invoice.issue")  # its effect may set any field
    assert "number" in issue["properties"]


def test_error_kinds_per_operation(document: dict[str, Any]) -> None:
    assert kinds(document, "/actions/billing.invoice.create") == {
        400: ["BadRequest"],
        403: ["PolicyDenied"],
        409: ["ConcurrencyConflict"],
        413: ["BadRequest"],
        415: ["BadRequest"],
        422: ["IdempotencyKeyReused"],
        500: ["AuditEmissionFailed", "InternalError"],
    }
    start = kinds(document, "/actions/helpdesk.ticket.start")
    assert start[400] == ["BadRequest", "PolicySubjectRequired"]
    assert start[403] == ["PolicyDenied", "TenantBoundaryViolation"]
    assert start[404] == ["NotFound"]
    assert start[409] == ["ConcurrencyConflict", "WorkflowStateMismatch"]
    # A custom policy may raise any error of plugin_api.errors.
    close = kinds(document, "/actions/helpdesk.ticket.close")
    assert {kind for listed in close.values() for kind in listed} == {
        *(e.kind for e in (*ALL_ERRORS, *EXTENDED_ERRORS))
    }
    assert kinds(document, "/projections/helpdesk.ticket.queue", "get") == {
        400: ["BadRequest"],
        500: ["InternalError"],
    }


def test_identity_headers_and_cors(document: dict[str, Any]) -> None:
    op = operation(document, "/actions/helpdesk.ticket.start")
    refs = [p["$ref"].rsplit("/", 1)[1] for p in op["parameters"]]
    assert refs == [
        *("X-Tenant-ID", "X-Actor-Id", "X-Actor-Roles", "Idempotency-Key", "dryRun"),
        "dryRunSchemaVersions",
    ]
    assert document["components"]["parameters"]["X-Tenant-ID"]["required"] is True
    headers = op["responses"]["403"]["headers"]
    assert "Access-Control-Allow-Origin" in headers and "X-Request-Id" in headers
    assert "Cache-Control" in headers and "X-Content-Type-Options" in headers
    cors = document["components"]["headers"]["Access-Control-Allow-Methods"]
    assert cors["schema"] == {"const": "GET, POST, OPTIONS"}
    assert "204" in document["paths"]["/actions/helpdesk.ticket.start"]["options"]["responses"]


def test_view_schema_list_and_detail(document: dict[str, Any]) -> None:
    row = document["components"]["schemas"]["helpdesk.ticket.queue.Row"]
    assert row["required"] == ["id", "title", "priority", "state", "assignee", "due_at",
                               "created_at"]  # fmt: skip
    assert row["properties"]["priority"] == {"enum": ["low", "normal", "high", "urgent", None]}
    view = operation(document, "/projections/helpdesk.ticket.queue", "get")
    data = view["responses"]["200"]["content"]["application/json"]["schema"]["allOf"][1]
    shapes = data["properties"]["data"]["oneOf"]
    assert [sorted(s["properties"]) for s in shapes] == [
        ["count", "facets", "items", "pagination"],
        ["item"],
    ]
    assert shapes[0]["required"] == ["items", "pagination"]  # count, facets: when asked
    names = [p["$ref"].rsplit("/", 1)[1] if "$ref" in p else p["name"] for p in view["parameters"]]
    assert names[:7] == [
        "X-Tenant-ID", "subject", "locale", "renderer", "acceptSchemaVersions", "pageSize", "cursor"
    ]  # fmt: skip
    # The queue's list declarations (sample-plugins): sort, q and one parameter per operator.
    assert {"sort", "q", "filter.state", "filter.state.in", "filter.priority.in"} <= set(names)
    facet = next(p for p in view["parameters"] if p.get("name") == "facet")
    buckets = [
        f"{field}.{b}" for field in ("due_at", "created_at") for b in ("year", "month", "day")
    ]
    assert facet["schema"]["enum"] == ["state", "priority", *buckets]
    assert {"count", "format"} <= set(names)
    assert {"text/csv", "application/x-ndjson"} <= set(view["responses"]["200"]["content"])
    page_size = next(p for p in view["parameters"] if p.get("name") == "pageSize")
    assert page_size["schema"] == {"type": "integer", "minimum": 1, "maximum": 1000}
    undeclared = operation(document, "/projections/helpdesk.ticket.detail", "get")
    assert not {"sort", "q"} & {p.get("name") for p in undeclared["parameters"]}


async def test_served_and_printed_alike(
    tessera: TesseraHarness, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    host: Host = await tessera.start(plugins=["helpdesk", "billing"], api_prefix="/v1")
    served = await host.client(tenant=None).request("GET", "/openapi.json")
    assert served.status == 200
    assert served.headers["content-type"] == "application/json"
    assert served.json["servers"] == [{"url": "/v1"}]
    health = await host.client().health()
    assert served.json["info"]["x-graph-hash"] == health.json["graphHash"]
    monkeypatch.setenv("TESSERA_PLUGINS_ONLY", "helpdesk,billing")
    monkeypatch.setenv("TESSERA_API_PREFIX", "/v1")
    assert cli.main(["openapi"]) == 0
    assert json.loads(capsys.readouterr().out) == served.json


def test_availability_and_dry_runs_are_described(document: dict[str, Any]) -> None:
    """Issue 27: the 1.2.0 row's ``_availability``, ``POST /availability`` and ``dryRun``."""
    schemas = document["components"]["schemas"]
    assert "1.2.0" in schemas["ViewSchema"]["properties"]["schemaVersion"]["enum"]
    row = schemas["helpdesk.ticket.queue.Row"]
    assert row["properties"]["_availability"] == {"$ref": "#/components/schemas/RowAvailability"}
    assert "_availability" not in row["required"]
    question = operation(document, "/availability")
    assert kinds(document, "/availability")[400] == ["BadRequest"]
    body = question["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/AvailabilityQuestion"}
    assert schemas["AvailabilityQuestion"]["properties"]["subjects"]["maxItems"] == 100
    assert kinds(document, "/actions/billing.invoice.issue")[422] == [
        "DryRunUnsupported",
        "IdempotencyKeyReused",
    ]
    assert kinds(document, "/actions/helpdesk.ticket.start")[422] == ["IdempotencyKeyReused"]


IN_CANDIDATES = [
    "1,-2",
    "low,high",
    "true,false",
    "1.50,2",
    "2030-01-01T00:00:00Z,1999-12-28T23:59:59.5+02:00",
    "x,y",
]


def _samples(schema: dict[str, Any]) -> list[str]:
    """Values a generator may draw from a filter parameter's schema (its bounds, each option,
    date-times with and without a fraction and an offset, decimals with an exponent, lists
    matching an ``in`` pattern)."""
    if "enum" in schema:
        return [str(option) for option in schema["enum"]]
    if schema["type"] == "integer":
        return [str(schema["minimum"]), str(schema["maximum"]), "0"]
    if schema.get("format") == "date-time":
        return ["2030-01-01T00:00:00Z", "1999-12-31T23:59:59.123456+02:00"]
    if "pattern" in schema and "," in schema["pattern"]:
        found = [c for c in IN_CANDIDATES if re.search(schema["pattern"], c)]
        assert found, schema
        return found
    if "pattern" in schema:
        return ["1.50", "-0", "1E+2", "123456789012345678901234567890.5"]
    return ["x", "with space"]


async def test_filter_values_are_described_with_their_types(tessera: TesseraHarness) -> None:
    """Every value a filter parameter's schema allows is accepted (200), so a generator working
    from the document gets no 400 for a plain misdescribed string."""
    from tests.http._lists_plugin import ListsPlugin

    host = await tessera.start(plugins=[], extra=[("lab", ListsPlugin())], entry_points=False)
    client = host.client(tenant="t1")
    document = (await client.request("GET", "/openapi.json")).json
    view = operation(document, "/projections/lab.thing.list", "get")
    filters = {p["name"]: p["schema"] for p in view["parameters"] if "name" in p}
    filters = {k: v for k, v in filters.items() if k.startswith("filter.")}
    assert filters["filter.count"] == {
        "type": "integer",
        "minimum": -(2**63),
        "maximum": 2**63 - 1,
    }
    assert filters["filter.level.gt"] == {"type": "string", "enum": ["low", "mid", "high"]}
    assert filters["filter.flag"] == {"type": "string", "enum": ["true", "false"]}
    assert filters["filter.due.lt"]["format"] == "date-time"
    assert filters["filter.created_at.gte"]["format"] == "date-time"
    assert "pattern" in filters["filter.price.lte"]
    for name, schema in filters.items():
        for value in _samples(schema):
            answer = await client.projection("lab.thing.list", query={name: value})
            assert answer.status == 200, (name, value, answer.json)
