"""Hardening at the edge (issue 20): identity headers, the JSON media type rule, the optional
refusal of anonymous actions and the headers of every response. Through the real app on both
backends; what belongs to Hypercorn is in tests/server/test_server_protocol.py."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from plugin_api.testing import Host, Result, TenantHost

from .test_http_contract import assert_cors, assert_envelope

TICKET = "helpdesk.ticket"
CREATE = f"/api/actions/{TICKET}.create"
BODY = json.dumps({"subject": None, "inputs": {"title": "x"}}).encode()
JSON_TYPE = ("Content-Type", "application/json")
IDENTITY = [("X-Tenant-ID", "t1"), ("X-Actor-Id", "rita"), ("X-Actor-Roles", "requester")]


@pytest.fixture
async def host(samples: TenantHost) -> TenantHost:
    """The sample plugins on the session's shared host, in a tenant of the test's own."""
    return samples


async def post(
    host: Host,
    headers: Sequence[tuple[str, str | bytes]],
    body: bytes = BODY,
    path: str = CREATE,
) -> Result:
    """A POST with exactly these header lines (repeats kept, bytes sent as they are); on a
    shared host, the tenant ``t1`` of the lines is the test's own tenant."""
    client = host.app.test_client()
    own = host.tenant if isinstance(host, TenantHost) else "t1"
    raw = [
        (
            k,
            own
            if (k, v) == ("X-Tenant-ID", "t1")
            else v.decode("latin-1")
            if isinstance(v, bytes)
            else v,
        )
        for k, v in headers
    ]
    response = await client.post(path, headers=raw, data=body)
    data = await response.get_data()
    return Result(
        status=response.status_code,
        json=json.loads(data) if data else None,
        headers=dict(response.headers),
    )


async def tickets(host: Host) -> list[dict[str, Any]]:
    return (await host.client().projection(f"{TICKET}.queue")).items


# -- identity headers ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["X-Tenant-ID", "X-Actor-Id", "X-Actor-Roles"])
@pytest.mark.parametrize("second", ["same", "other"])
async def test_a_repeated_identity_header_is_400_naming_it(
    host: Host, name: str, second: str
) -> None:
    first = dict(IDENTITY)[name]
    value = first if second == "same" else "agent" if name == "X-Actor-Roles" else "other"
    result = await post(host, [*IDENTITY, (name, value), JSON_TYPE])
    assert_envelope(result, 400, "BadRequest")
    assert name in result.json["error"]["message"]
    assert await tickets(host) == []


async def test_a_repeated_tenant_header_is_400_on_projections(host: Host) -> None:
    client = host.app.test_client()
    for values in (["t1", "t1"], ["t1", "t2"]):
        response = await client.get(
            f"/api/projections/{TICKET}.queue", headers=[("X-Tenant-ID", v) for v in values]
        )
        assert response.status_code == 400
        assert "X-Tenant-ID" in json.loads(await response.get_data())["error"]["message"]


@pytest.mark.parametrize(
    "roles",
    [
        "agent\u00a0",  # no-break space (latin-1 byte A0)
        "\u0085agent",  # NEL
        "agent\u00c2\u00a0",  # UTF-8 no-break space as it arrives in latin-1
        "agent\u000b",  # vertical tab
        "agent\x00",
        "requester, ag\tent",
        "requester agent",
        "r\u00e9viseur",
        "agent;requester",
        "r" * 65,
    ],
    ids=["nbsp", "nel", "utf8-nbsp", "vt", "nul", "tab-inside", "space", "non-ascii", "semi", "65"],
)
async def test_a_role_that_is_not_a_role_name_is_400_never_another_role(
    host: Host, roles: str
) -> None:
    headers = [("X-Tenant-ID", "t1"), ("X-Actor-Roles", roles), JSON_TYPE]
    result = await post(host, headers, path=f"/api/actions/{TICKET}.edit")
    assert_envelope(result, 400, "BadRequest")
    assert "X-Actor-Roles" in result.json["error"]["message"]


async def test_role_names_of_the_documented_set_are_accepted(host: Host) -> None:
    """Letters, digits and ``_ . : @ / -`` up to 64 characters; spaces and tabs around a
    role are trimmed and empty entries dropped (spec 2.1)."""
    roles = "\t" + ",".join(["r" * 64, "a_b.c:d@e/f-G9", "requester "]) + ", ,"
    result = await post(host, [("X-Tenant-ID", "t1"), ("X-Actor-Roles", roles), JSON_TYPE])
    assert result.status == 200, result.json


# -- the JSON media type rule ----------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON",
        "application/vnd.api+json",
        "application/merge-patch+json ; x=1",
    ],
)
async def test_json_media_types_are_accepted(host: Host, content_type: str) -> None:
    result = await post(host, [*IDENTITY, ("Content-Type", content_type)])
    assert result.status == 200, result.json


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain; charset=utf-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=xyz",
        "text/json",
        "application/jsonx",
        "application/json-seq",
        "application/+json",
        "json",
        "*/*",
    ],
)
async def test_other_media_types_are_415_bad_request(host: Host, content_type: str) -> None:
    """A cross-site form (or a simple fetch) cannot run an action: 415, kind ``BadRequest``
    (the taxonomy is closed), ``Accept`` naming what would do, nothing written."""
    result = await post(host, [*IDENTITY, ("Content-Type", content_type)])
    assert_envelope(result, 415, "BadRequest")
    assert {k.lower(): v for k, v in result.headers.items()}["accept"] == "application/json"
    assert await tickets(host) == []


@pytest.mark.parametrize(
    "headers",
    [[], [("Content-Type", " ")], [JSON_TYPE, JSON_TYPE]],
    ids=["missing", "blank", "twice"],
)
async def test_a_missing_or_repeated_content_type_is_400(
    host: Host, headers: list[tuple[str, str]]
) -> None:
    result = await post(host, [*IDENTITY, *headers])
    assert_envelope(result, 400, "BadRequest")
    assert "Content-Type" in result.json["error"]["message"]
    assert await tickets(host) == []


# -- actions without an actor ----------------------------------------------------------------


async def test_anonymous_actions_can_be_refused(tessera) -> None:
    host = await tessera.start(plugins=["helpdesk"], require_actor_id=True)
    for actor in ([], [("X-Actor-Id", "")], [("X-Actor-Id", "anon")]):
        headers = [("X-Tenant-ID", "t1"), *actor, ("X-Actor-Roles", "requester"), JSON_TYPE]
        result = await post(host, headers)
        assert_envelope(result, 403, "PolicyDenied")
        assert "X-Actor-Id" in result.json["error"]["message"]
    assert await tickets(host) == []  # projections need no actor
    named = await host.client(actor="rita", roles=["requester"]).action(
        f"{TICKET}.create", inputs={"title": "x"}
    )
    assert named.status == 200, named.json


async def test_by_default_a_missing_actor_is_anon(host: Host) -> None:
    result = await post(host, [("X-Tenant-ID", "t1"), ("X-Actor-Roles", "requester"), JSON_TYPE])
    assert result.status == 200, result.json
    assert (await tickets(host))[0]["id"] == result.json["outputs"]["id"]


async def test_one_anonymous_requester_cannot_close_another_ones_ticket(host: Host) -> None:
    """``anon`` is shared by every caller without ``X-Actor-Id``: the sample's owner policy
    never counts it as the requester."""
    anonymous = host.client(roles=["requester"])
    agent = host.client(actor="alice", roles=["agent"])
    ticket = (await anonymous.action(f"{TICKET}.create", inputs={"title": "x"})).outputs["id"]
    await agent.action(f"{TICKET}.start", subject=ticket)
    await agent.action(f"{TICKET}.resolve", subject=ticket)
    closed = await anonymous.action(f"{TICKET}.close", subject=ticket)
    assert_envelope(closed, 403, "PolicyDenied")
    reopened = await anonymous.action(f"{TICKET}.reopen", subject=ticket)
    assert_envelope(reopened, 403, "PolicyDenied")


# -- headers of every response ---------------------------------------------------------------


async def test_every_response_carries_the_security_and_cors_headers(host: Host) -> None:
    client = host.client(actor="rita", roles=["requester"])
    answers = [
        await client.health(),
        await client.projection(f"{TICKET}.queue"),
        await client.action(f"{TICKET}.create", inputs={"title": "x"}),
        await client.action(f"{TICKET}.nope"),
        await client.request("OPTIONS", "/anywhere"),
        await client.request("GET", "/nowhere"),
        await client.request("PUT", "/_health"),
    ]
    assert [a.status for a in answers] == [200, 200, 200, 404, 204, 404, 405]
    for answer in answers:
        assert_cors(dict(answer.headers))
