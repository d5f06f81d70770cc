"""Identity limits (docs/http.md, "Identity limits"): a tenant or actor id of at most 255 bytes
of UTF-8 is kept everywhere downstream (the sample's notification subscriber delivers, nothing
goes dead); a longer one is refused at the edge with 400 ``BadRequest``, before anything is
written, in header and token mode, and no refusal logs a traceback."""

from __future__ import annotations

import logging

import pytest

from host.auth.identity import IDENTITY_MAX_BYTES
from plugin_api.testing import Host, Result, SharedHarness, TenantHost

from .conftest import JwksServer
from .test_auth_tokens import act

CREATE = "helpdesk.ticket.create"
QUEUE = "helpdesk.ticket.queue"
INBOX = "helpdesk.notification.inbox"


def _no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    logged = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not logged, [r.getMessage() for r in logged]


def _refused(result: Result, header: str, size: int) -> None:
    assert result.status == 400, result.json
    assert result.error_kind == "BadRequest"
    message = result.json["error"]["message"]
    assert message.startswith(f"{header} is {size} bytes long"), message


async def _samples(tessera_shared: SharedHarness) -> TenantHost:
    return await tessera_shared.start(plugins=["helpdesk", "billing"])


async def test_an_identity_at_the_limit_is_kept_everywhere(
    tessera_shared: SharedHarness, caplog: pytest.LogCaptureFixture
) -> None:
    host = await _samples(tessera_shared)
    tenant = host.new_tenant()
    tenant += "t" * (IDENTITY_MAX_BYTES - len(tenant))
    requester_id = "r" * IDENTITY_MAX_BYTES
    sent = "é" * 63 + "abc"  # 129 bytes sent (UTF-8), read as 129 ISO-8859-1 characters
    agent_id = sent.encode().decode("latin-1")  # 255 bytes once stored as UTF-8
    requester = host.client(tenant=tenant, actor=requester_id, roles=["requester"])
    agent = host.client(tenant=tenant, actor=sent, roles=["agent"])

    created = await requester.action(CREATE, inputs={"title": "Long names"})
    assert created.status == 200, created.json
    ticket = created.outputs["id"]
    started = await agent.action("helpdesk.ticket.start", subject=ticket)
    assert started.status == 200 and started.outputs["assignee"] == agent_id, started.json
    resolved = await agent.action("helpdesk.ticket.resolve", subject=ticket)
    assert resolved.status == 200, resolved.json

    assert await host.deliveries_settled() == {}  # delivered, none dead
    inbox = await requester.projection(INBOX)
    assert [item["recipient"] for item in inbox.items] == [requester_id]
    queue = await agent.projection(QUEUE, query={"filter.assignee": agent_id})
    assert [item["id"] for item in queue.items] == [ticket]
    _no_traceback(caplog)


async def test_a_longer_identity_is_refused_before_anything_is_written(
    tessera_shared: SharedHarness, caplog: pytest.LogCaptureFixture
) -> None:
    host = await _samples(tessera_shared)
    for actor, size in (("a" * 3000, 3000), ("a" * 256, 256), ("é" * 64, 256)):
        client = host.client(actor=actor, roles=["requester"])
        _refused(await client.action(CREATE, inputs={"title": "t"}), "Header X-Actor-Id", size)
        _refused(await client.projection(INBOX), "Header X-Actor-Id", size)  # read access
        assert (await client.projection(QUEUE)).status == 200  # reads no actor: as in v0.1
    long_tenant = host.new_tenant() + "t" * IDENTITY_MAX_BYTES
    size = len(long_tenant)
    client = host.client(tenant=long_tenant, roles=["requester"])
    _refused(await client.action(CREATE, inputs={"title": "t"}), "Header X-Tenant-ID", size)
    _refused(await client.projection(QUEUE), "Header X-Tenant-ID", size)
    nul = await host.client(actor="a\x00b", roles=["requester"]).action(CREATE, inputs={})
    assert nul.status == 400 and "NUL" in nul.json["error"]["message"]

    assert (await host.client().projection(QUEUE)).items == []
    assert await host.deliveries_settled() == {}
    _no_traceback(caplog)


async def test_token_claims_are_held_to_the_same_limit(
    token_host: Host, jwks_server: JwksServer, caplog: pytest.LogCaptureFixture
) -> None:
    issuer = jwks_server.issuer
    at_limit = await act(token_host, issuer.token(sub="s" * IDENTITY_MAX_BYTES, tenant_id="t1"))
    assert at_limit.status == 200, at_limit.json
    longer = await act(token_host, issuer.token(sub="s" * 256, tenant_id="t1"))
    _refused(longer, "The token's actor claim", 256)
    tenant = await act(token_host, issuer.token(sub="alice", tenant_id="t" * 300))
    _refused(tenant, "The token's tenant", 300)
    _no_traceback(caplog)
