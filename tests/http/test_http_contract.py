"""The wire contract of spec parts 2, 4, 7, 8 and 9 through Quart's test client."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from plugin_api.testing import Client, TenantHost

CORS = {
    "access-control-allow-origin": "*",
    "access-control-allow-methods": "GET, POST, OPTIONS",
    "access-control-allow-headers": "Content-Type, X-Tenant-ID, X-Actor-Id, X-Actor-Roles",
    "access-control-max-age": "600",
}


SECURITY = {
    "cache-control": "no-store",
    "vary": "X-Tenant-ID, X-Actor-Id, X-Actor-Roles",
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}


def assert_cors(headers: Mapping[str, str]) -> None:
    """The spec's CORS headers, and the security headers every response carries too."""
    lowered = {k.lower(): v for k, v in headers.items()}
    for name, value in {**CORS, **SECURITY}.items():
        assert lowered.get(name) == value, (name, lowered)
    assert "server" not in lowered


def assert_envelope(result, status: int, kind: str) -> None:
    assert result.status == status, result.json
    assert set(result.json) == {"ok", "error"}
    assert result.json["ok"] is False
    assert set(result.json["error"]) == {"kind", "message"}
    assert result.json["error"]["kind"] == kind
    assert isinstance(result.json["error"]["message"], str) and result.json["error"]["message"]
    assert result.headers["content-type"].startswith("application/json")
    assert_cors(result.headers)


@pytest.fixture
async def host(samples: TenantHost) -> TenantHost:
    """The sample plugins on the session's shared host, in a tenant of the test's own."""
    return samples


@pytest.fixture
def agent(host: TenantHost) -> Client:
    return host.client(actor="alice", roles=["agent", "requester"])


async def create_ticket(client: Client, **inputs) -> str:
    result = await client.action("helpdesk.ticket.create", inputs={"title": "T", **inputs})
    return result.outputs["id"]


# -- health --------------------------------------------------------------------------------


async def test_health_needs_no_identity_and_reports_graph_hash(host: TenantHost) -> None:
    result = await host.client(tenant=None).health()
    assert result.status == 200
    assert set(result.json) == {"ok", "service", "graphHash"}
    assert result.json["ok"] is True
    assert result.json["service"] == "tessera"
    assert len(result.json["graphHash"]) == 64
    int(result.json["graphHash"], 16)
    assert_cors(result.headers)


async def test_service_name_and_prefix_are_configurable(tessera) -> None:
    host = await tessera.start(plugins=["helpdesk"], service_name="desk", api_prefix="/v1")
    result = await host.client().health()
    assert result.json["service"] == "desk"
    missing = await host.client().request("GET", "/../api/_health")
    assert missing.status == 404


# -- OPTIONS and CORS ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/_health", "/actions/helpdesk.ticket.create", "/projections/x.y", "/nowhere/at/all"]
)
async def test_options_on_any_path_is_204_with_cors_and_no_body(
    host: TenantHost, path: str
) -> None:
    result = await host.client(tenant=None).request("OPTIONS", path)
    assert result.status == 204
    assert result.json is None
    assert_cors(result.headers)


async def test_unknown_route_is_404_envelope_with_cors(host: TenantHost) -> None:
    result = await host.client().request("GET", "/nowhere")
    assert_envelope(result, 404, "NotFound")


async def test_wrong_method_is_405_envelope_with_allow_header(host: TenantHost) -> None:
    result = await host.client().request("POST", "/_health", body=b"{}")
    assert_envelope(result, 405, "BadRequest")
    assert result.headers["allow"] == "GET, OPTIONS"
    result = await host.client().request("GET", "/actions/helpdesk.ticket.create")
    assert_envelope(result, 405, "BadRequest")
    assert result.headers["allow"] == "OPTIONS, POST"


# -- tenant and identity headers -------------------------------------------------------------


async def test_missing_tenant_is_400_on_projections_and_actions(host: TenantHost) -> None:
    anonymous = host.client(tenant=None, roles=["agent"])
    assert_envelope(await anonymous.projection("helpdesk.ticket.queue"), 400, "BadRequest")
    result = await anonymous.action("helpdesk.ticket.create", inputs={"title": "x"})
    assert_envelope(result, 400, "BadRequest")
    blank = host.client(tenant="  ")
    assert_envelope(await blank.projection("helpdesk.ticket.queue"), 400, "BadRequest")


async def test_roleless_actor_is_denied_every_role_requiring_action(host: TenantHost) -> None:
    for roles in (None, [], [" ", ""]):
        client = host.client(roles=roles)
        result = await client.action("helpdesk.ticket.create", inputs={"title": "x"})
        assert_envelope(result, 403, "PolicyDenied")


async def test_roles_are_trimmed_and_empty_entries_dropped(host: TenantHost) -> None:
    client = host.client()
    result = await client.request(
        "POST",
        "/actions/helpdesk.ticket.create",
        body=b'{"inputs": {"title": "x"}}',
        headers={"X-Actor-Roles": " ,  requester\t ,,", "Content-Type": "application/json"},
    )
    assert result.status == 200, result.json


async def test_actor_defaults_to_anon(host: TenantHost) -> None:
    client = host.client(roles=["requester"])
    ticket = await client.action("helpdesk.ticket.create", inputs={"title": "x"})
    detail = await client.projection("helpdesk.ticket.detail", subject=ticket.outputs["id"])
    assert detail.json["data"]["item"]["requester"] == "anon"


async def test_conflicting_duplicate_tenant_headers_are_rejected(host: TenantHost) -> None:
    client = host.client(tenant=None)
    result = await client._client.get(
        "/api/projections/helpdesk.ticket.queue",
        headers=[("X-Tenant-ID", "a"), ("X-Tenant-ID", "b")],
    )
    assert result.status_code == 400
    assert json.loads(await result.get_data())["error"]["kind"] == "BadRequest"


# -- request bodies ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'"a string"',
        b"null",
        b'{"inputs": {"title": "x"}',
        b"\xff\xfe\x00garbage",
        b'{"inputs": {"title": NaN}}',
        b'{"inputs": {"estimate_hours": Infinity}}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
    ],
    ids=[
        "empty",
        "garbage",
        "array",
        "string",
        "null",
        "truncated",
        "invalid-utf8",
        "nan",
        "infinity",
        "deep-array",
        "deep-object",
    ],
)
async def test_bodies_that_are_not_a_json_object_are_400(agent: Client, body: bytes) -> None:
    result = await agent.request(
        "POST",
        "/actions/helpdesk.ticket.create",
        body=body,
        headers={"Content-Type": "application/json"},
    )
    assert_envelope(result, 400, "BadRequest")
    queue = await agent.projection("helpdesk.ticket.queue")
    assert queue.json["data"]["items"] == []


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
async def test_other_content_types_are_parsed_best_effort_when_lenient(
    tessera, content_type
) -> None:
    """``TESSERA_REQUIRE_JSON_CONTENT_TYPE=false`` restores v0.1 (spec 2.1's best effort);
    the default refuses them (tests/http/test_http_edge.py)."""
    host = await tessera.start(plugins=["helpdesk"], require_json_content_type=False)
    agent = host.client(tenant="t1", actor="alice", roles=["agent"])
    headers = {"Content-Type": content_type} if content_type else {}
    result = await agent.request(
        "POST",
        "/actions/helpdesk.ticket.create",
        body=b'{"inputs": {"title": "plain"}}',
        headers=headers,
    )
    assert result.status == 200, result.json


async def test_oversized_body_is_413_envelope(tessera) -> None:
    host = await tessera.start(plugins=["helpdesk"], max_body_bytes=1000)
    client = host.client(roles=["agent"])
    big = json.dumps({"inputs": {"title": "x" * 2000}}).encode()
    result = await client.request("POST", "/actions/helpdesk.ticket.create", body=big)
    assert_envelope(result, 413, "BadRequest")
    # Also when the route never reads the body.
    result = await client.request("GET", "/_health", body=big)
    assert_envelope(result, 413, "BadRequest")
    assert (await client.projection("helpdesk.ticket.queue")).json["data"]["items"] == []


# -- errors of the taxonomy ------------------------------------------------------------------


async def test_unknown_action_and_projection(agent: Client) -> None:
    assert_envelope(await agent.action("helpdesk.ticket.fly"), 404, "UnknownAction")
    assert_envelope(await agent.projection("helpdesk.ticket.nope"), 404, "ProjectionNotFound")


async def test_fqn_is_url_decoded(agent: Client) -> None:
    result = await agent.request("GET", "/projections/helpdesk%2Eticket%2Equeue")
    assert result.status == 200


async def test_subject_rules(agent: Client) -> None:
    ticket = await create_ticket(agent)
    json_type = {"Content-Type": "application/json"}
    missing = await agent.request(
        "POST", "/actions/helpdesk.ticket.start", body=b'{"inputs": {}}', headers=json_type
    )
    assert_envelope(missing, 400, "BadRequest")
    null = await agent.request(
        "POST",
        "/actions/helpdesk.ticket.start",
        body=b'{"subject": null, "inputs": {}}',
        headers=json_type,
    )
    assert_envelope(null, 400, "PolicySubjectRequired")
    other = {
        "tenantId": f"{agent.tenant}-other",
        "entityFqn": "helpdesk.ticket",
        "identityHandle": ticket,
    }
    assert_envelope(
        await agent.action("helpdesk.ticket.start", subject=other), 403, "TenantBoundaryViolation"
    )
    assert_envelope(
        await agent.action("helpdesk.ticket.start", subject="01J00000000000000000000000"),
        404,
        "NotFound",
    )


async def test_another_tenants_row_is_indistinguishable_from_a_missing_one(
    host: TenantHost,
) -> None:
    t1 = host.client(roles=["agent"])
    t2 = host.client(tenant=host.new_tenant(), roles=["agent"])
    ticket = await create_ticket(t1)
    result = await t2.action("helpdesk.ticket.start", subject=ticket)
    assert_envelope(result, 404, "NotFound")
    detail = await t2.projection("helpdesk.ticket.detail", subject=ticket)
    assert detail.status == 200 and detail.json["data"] == {"item": None}


async def test_workflow_state_mismatch_is_409(agent: Client) -> None:
    ticket = await create_ticket(agent)
    result = await agent.action("helpdesk.ticket.resolve", subject=ticket)
    assert_envelope(result, 409, "WorkflowStateMismatch")


async def test_value_that_does_not_fit_names_the_field(agent: Client) -> None:
    result = await agent.action(
        "helpdesk.ticket.create", inputs={"title": "x", "estimate_hours": "many"}
    )
    assert_envelope(result, 400, "BadRequest")
    assert "estimate_hours" in result.json["error"]["message"]
    result = await agent.action("helpdesk.ticket.create", inputs={"title": "x", "colour": "red"})
    assert_envelope(result, 400, "BadRequest")
    assert "colour" in result.json["error"]["message"]


# -- ViewSchema ------------------------------------------------------------------------------


async def test_list_viewschema_shape(agent: Client) -> None:
    first = await create_ticket(agent, priority="high")
    second = await create_ticket(agent)
    result = await agent.projection(
        "helpdesk.ticket.queue",
    )
    assert result.status == 200
    doc = result.json
    assert list(doc) == [
        "schemaVersion",
        "targetProfile",
        "metadata",
        "fields",
        "actions",
        "filters",
        "data",
    ]
    assert doc["schemaVersion"] == "1.0.0"
    assert doc["targetProfile"] == "react.web.v1"
    meta = doc["metadata"]
    assert set(meta) == {"projection", "entity", "tenant", "locale", "generatedAt"}
    assert meta["projection"] == "helpdesk.ticket.queue"
    assert meta["entity"] == "helpdesk.ticket"
    assert meta["tenant"] == agent.tenant
    assert meta["locale"] == "en-US"
    assert meta["generatedAt"].endswith("Z")
    assert doc["filters"] == []
    assert [f["name"] for f in doc["fields"]] == [
        "id",
        "title",
        "priority",
        "state",
        "assignee",
        "due_at",
        "created_at",
    ]
    for field in doc["fields"]:
        assert not {"required", "nullable", "default"} & set(field)
    by_name = {f["name"]: f for f in doc["fields"]}
    assert by_name["id"] == {"name": "id", "type": "identity", "label": "Id"}
    assert by_name["created_at"]["type"] == "system_string"
    assert by_name["title"]["typeOptions"] == {"maxLength": 120}
    assert by_name["due_at"]["label"] == "Due at"
    assert by_name["priority"]["typeOptions"] == {"options": ["low", "normal", "high", "urgent"]}
    assert [a["fqn"] for a in doc["actions"]] == [
        "helpdesk.ticket.create",
        "helpdesk.ticket.start",
        "helpdesk.ticket.escalate",
    ]
    for action in doc["actions"]:
        assert "initialValues" not in action
        assert "confirmation" not in action
    create, start, escalate = doc["actions"]
    assert create["name"] == "create" and create["label"] == "Create"
    assert create["subjectRequired"] is False
    assert start["subjectRequired"] is True and start["inputs"] == []
    assert escalate["inputs"] == []
    inputs = {i["name"]: i for i in create["inputs"]}
    assert list(inputs) == [
        "title",
        "description",
        "priority",
        "estimate_hours",
        "due_at",
        "billable",
        "budget",
    ]
    assert inputs["title"]["required"] is True and inputs["title"]["nullable"] is False
    assert "default" not in inputs["title"]
    assert inputs["priority"]["default"] == "normal" and inputs["priority"]["required"] is False
    assert inputs["billable"]["default"] is False
    assert inputs["estimate_hours"]["label"] == "Estimate (h)"
    assert inputs["budget"]["typeOptions"] == {"currency": "EUR"}
    data = doc["data"]
    assert data["pagination"] == {"pageSize": 2, "nextCursor": None}
    assert [item["id"] for item in data["items"]] == sorted([first, second])
    assert list(data["items"][0]) == [f["name"] for f in doc["fields"]]


async def test_detail_viewschema_has_initial_values_only_on_update_actions(agent: Client) -> None:
    ticket = await create_ticket(agent, description=None, estimate_hours=3)
    doc = (await agent.projection("helpdesk.ticket.detail", subject=ticket)).json
    item = doc["data"]["item"]
    assert item["id"] == ticket and item["estimate_hours"] == 3 and item["description"] is None
    actions = {a["name"]: a for a in doc["actions"]}
    assert actions["edit"]["initialValues"] == {
        "title": "T",
        "description": None,
        "priority": "normal",
        "estimate_hours": 3,
        "due_at": None,
        "billable": False,
        "budget": None,
    }
    assert actions["escalate"]["initialValues"] == {}
    for name in ("start", "resolve", "close", "reopen", "cancel"):
        assert "initialValues" not in actions[name]


async def test_unknown_subject_renders_item_null_with_200(agent: Client) -> None:
    result = await agent.projection("helpdesk.ticket.detail", subject="nope")
    assert result.status == 200
    assert result.json["data"] == {"item": None}


async def test_reserved_query_parameters_are_ignored(agent: Client) -> None:
    await create_ticket(agent)
    result = await agent.request(
        "GET",
        "/projections/helpdesk.ticket.queue",
        query={"locale": "fr-FR", "renderer": "vue", "acceptSchemaVersions": "9.9.9"},
    )
    assert result.status == 200
    assert result.json["metadata"]["locale"] == "en-US"
    assert result.json["schemaVersion"] == "1.0.0"
    assert result.json["targetProfile"] == "react.web.v1"


# -- action outputs ------------------------------------------------------------------------


async def test_outputs_of_each_action_kind(agent: Client) -> None:
    created = await agent.action(
        "helpdesk.ticket.create", inputs={"title": "Printer", "estimate_hours": "4.9"}
    )
    outputs = created.outputs
    assert set(outputs) == {"id", "title", "estimate_hours", "state"}
    assert outputs["estimate_hours"] == 4 and outputs["state"] == "open"
    ticket = outputs["id"]
    started = (await agent.action("helpdesk.ticket.start", subject=ticket)).outputs
    assert set(started) == {"state", "assignee", "_version"}
    assert started["state"] == "in_progress" and started["assignee"] == "alice"
    edited = (
        await agent.action("helpdesk.ticket.edit", subject=ticket, inputs={"priority": "low"})
    ).outputs
    assert set(edited) == {"priority", "_version"}
    assert edited["_version"] != started["_version"]
    resolved = (
        await agent.action(
            "helpdesk.ticket.resolve", subject=ticket, inputs={"resolution": "fixed", "note": 1}
        )
    ).outputs
    assert set(resolved) == {"state", "resolution", "resolved_at", "_version"}
    assert resolved["resolved_at"].endswith("Z")
