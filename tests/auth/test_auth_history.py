"""Record history and live changes in token mode: the history route, ``asOf``, the audit routes
and the live stream resolve the reader from the bearer token like every route; identity
headers alone get 401."""

from __future__ import annotations

import json

from plugin_api.testing import Host

from .conftest import JwksServer

DETAIL = "helpdesk.ticket.detail"


async def test_history_and_audit_routes_use_the_token(
    token_host: Host, jwks_server: JwksServer
) -> None:
    token = jwks_server.issuer.token(sub="alice", tenant_id="t1", roles=["requester", "auditor"])
    bearer = {"Authorization": f"Bearer {token}"}
    client = token_host.client(tenant=None)
    created = await client.request(
        "POST",
        "/actions/helpdesk.ticket.create",
        body=json.dumps({"subject": None, "inputs": {"title": "t"}}).encode(),
        headers={"Content-Type": "application/json", **bearer},
    )
    assert created.status == 200, created.json
    ticket = created.json["outputs"]["id"]

    history = await client.request(
        "GET", f"/projections/{DETAIL}/history?subject={ticket}", headers=bearer
    )
    assert history.status == 200, history.json
    (record,) = history.json["data"]["items"]
    assert record["action"] == "helpdesk.ticket.create" and record["actor"]["id"] == "alice"

    as_of = await client.request(
        "GET", f"/projections/{DETAIL}?subject={ticket}&asOf={record['versionAfter']}",
        headers=bearer,
    )  # fmt: skip
    assert as_of.status == 200, as_of.json

    spoofed = {"X-Tenant-ID": "t1", "X-Actor-Id": "alice", "X-Actor-Roles": "auditor"}
    for path in (f"/projections/{DETAIL}/history?subject={ticket}", "/_audit/verify"):
        refused = await client.request("GET", path, headers=spoofed)
        assert refused.status == 401, (path, refused.json)
    verified = await client.request("GET", "/_audit/verify", headers=bearer)
    assert verified.status == 200, verified.json


async def test_live_changes_resolve_the_reader_from_the_token(token_host: Host) -> None:
    """The live stream's identity is the token's: identity headers alone are refused before
    any stream opens."""
    spoofed = {"X-Tenant-ID": "t1", "X-Actor-Id": "alice", "X-Actor-Roles": "agent"}
    refused = await token_host.client(tenant=None).request(
        "GET", "/changes?projection=helpdesk.ticket.queue", headers=spoofed
    )
    assert refused.status == 401, refused.json
    assert refused.json["error"]["kind"] == "Unauthenticated"
