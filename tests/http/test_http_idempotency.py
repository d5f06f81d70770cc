"""Idempotent actions (``Idempotency-Key``) through the HTTP surface, on the session's backend."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from host.config import Settings
from host.graph import build_graph
from host.runtime.actor import Actor
from host.runtime.idempotency import IdempotencyStore
from host.storage import Storage, build_schema
from plugin_api.testing import Client, Host


@pytest.fixture
def host(own_host: Host) -> Host:
    """A host of the test's own: these tests read the whole database or act in the tenant ``t1``."""
    return own_host


SPEC_ALLOW = "Content-Type, X-Tenant-ID, X-Actor-Id, X-Actor-Roles"
WITH_KEY = SPEC_ALLOW + ", Idempotency-Key"


@pytest.fixture
def agent(host: Host) -> Client:
    return host.client(tenant="t1", actor="alice", roles=["agent", "requester"])


async def post(
    client: Client, fqn: str, payload: dict[str, Any], key: str | None
) -> tuple[int, Any, dict[str, str]]:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    result = await client.request(
        "POST", f"/actions/{fqn}", body=json.dumps(payload).encode(), headers=headers
    )
    return result.status, result.json, {k.lower(): v for k, v in result.headers.items()}


async def tickets(client: Client) -> list[dict[str, Any]]:
    return (await client.projection("helpdesk.ticket.detail")).items


CREATE = "helpdesk.ticket.create"


async def test_a_retried_create_returns_the_stored_answer_and_creates_once(agent: Client) -> None:
    payload = {"subject": None, "inputs": {"title": "once"}}
    status, first, headers = await post(agent, CREATE, payload, "k-1")
    assert status == 200 and first["ok"] is True
    assert "idempotent-replayed" not in headers
    assert headers["access-control-allow-headers"] == WITH_KEY
    # The same body with its keys in another order is the same request.
    reordered = {"inputs": {"title": "once"}, "subject": None}
    status, again, headers = await post(agent, CREATE, reordered, "k-1")
    assert status == 200 and again == first
    assert headers["idempotent-replayed"] == "true"
    assert [t["id"] for t in await tickets(agent)] == [first["outputs"]["id"]]


async def test_the_same_key_with_another_body_or_action_is_422_and_runs_nothing(
    agent: Client,
) -> None:
    status, first, _ = await post(agent, CREATE, {"inputs": {"title": "a"}}, "k-2")
    assert status == 200
    status, body, headers = await post(agent, CREATE, {"inputs": {"title": "b"}}, "k-2")
    assert status == 422
    assert body["ok"] is False and body["error"]["kind"] == "IdempotencyKeyReused"
    assert "Idempotency-Key 'k-2'" in body["error"]["message"]
    assert headers["content-type"].startswith("application/json")
    subject = {"tenantId": "t1", "entityFqn": "helpdesk.ticket"}
    subject["identityHandle"] = first["outputs"]["id"]
    status, body, _ = await post(agent, "helpdesk.ticket.start", {"subject": subject}, "k-2")
    assert (status, body["error"]["kind"]) == (422, "IdempotencyKeyReused")
    assert [t["title"] for t in await tickets(agent)] == ["a"]


async def test_keys_are_scoped_by_tenant_and_actor(host: Host, agent: Client) -> None:
    payload = {"inputs": {"title": "scoped"}}
    bob = agent.as_(actor="bob")
    other_tenant = agent.as_(tenant="t2")
    ids = set()
    for client in (agent, bob, other_tenant):
        status, body, headers = await post(client, CREATE, payload, "shared-key")
        assert status == 200 and "idempotent-replayed" not in headers
        ids.add(body["outputs"]["id"])
    assert len(ids) == 3
    assert len(await tickets(agent)) == 2  # alice's and bob's, in tenant t1


async def test_a_refused_action_stores_nothing_and_its_retry_runs(agent: Client) -> None:
    status, body, _ = await post(agent, CREATE, {"inputs": {"nope": 1}}, "k-3")
    assert (status, body["error"]["kind"]) == (400, "BadRequest")
    status, body, headers = await post(agent, CREATE, {"inputs": {"title": "fixed"}}, "k-3")
    assert status == 200 and "idempotent-replayed" not in headers


async def test_a_replayed_transition_is_not_a_state_mismatch(agent: Client) -> None:
    created = await agent.action(CREATE, inputs={"title": "T"})
    subject = {"tenantId": "t1", "entityFqn": "helpdesk.ticket"}
    subject["identityHandle"] = created.outputs["id"]
    payload = {"subject": subject, "inputs": {}}
    first = await post(agent, "helpdesk.ticket.start", payload, "k-4")
    again = await post(agent, "helpdesk.ticket.start", payload, "k-4")
    assert first[0] == again[0] == 200 and first[1] == again[1]
    unkeyed = await post(agent, "helpdesk.ticket.start", payload, None)
    assert unkeyed[1]["error"]["kind"] == "WorkflowStateMismatch"


@pytest.mark.parametrize("key", ["", "x" * 256, "has space", "caf\u00e9"])
async def test_a_malformed_key_is_400(agent: Client, key: str) -> None:
    headers = {"Content-Type": "application/json", "Idempotency-Key": key}
    body = json.dumps({"inputs": {"title": "t"}}).encode("utf-8")
    result = await agent.request(
        "POST", f"/actions/{CREATE}", body=body, headers={k: v for k, v in headers.items()}
    )
    assert result.status == 400, result.json
    assert result.json["error"]["kind"] == "BadRequest"
    assert await tickets(agent) == []


async def test_a_key_of_255_characters_is_accepted(agent: Client) -> None:
    status, _, _ = await post(agent, CREATE, {"inputs": {"title": "long"}}, "k" * 255)
    assert status == 200


async def test_concurrent_duplicates_in_process_have_one_effect(agent: Client) -> None:
    payload = {"inputs": {"title": "race"}}
    answers = await asyncio.gather(*(post(agent, CREATE, payload, "k-race") for _ in range(8)))
    assert {status for status, _, _ in answers} == {200}
    assert len({body["outputs"]["id"] for _, body, _ in answers}) == 1
    assert sum("idempotent-replayed" not in h for _, _, h in answers) == 1
    assert len(await tickets(agent)) == 1


async def test_an_expired_key_runs_as_a_new_request(tessera: Any) -> None:
    host = await tessera.start(plugins=["helpdesk"], idempotency_retention_s=1)
    agent = host.client(tenant="t1", actor="alice", roles=["requester"])
    status, _, _ = await post(agent, CREATE, {"inputs": {"title": "old"}}, "k-exp")
    assert status == 200
    await asyncio.sleep(1.2)
    status, _, headers = await post(agent, CREATE, {"inputs": {"title": "new"}}, "k-exp")
    assert status == 200 and "idempotent-replayed" not in headers
    assert sorted(t["title"] for t in await tickets(agent)) == ["new", "old"]


# -- CORS: the spec's bytes unless the new header is used ----------------------------------------


async def test_cors_allow_headers_keep_the_spec_value_without_the_new_header(
    agent: Client,
) -> None:
    status, _, headers = await post(agent, CREATE, {"inputs": {"title": "t"}}, None)
    assert status == 200 and headers["access-control-allow-headers"] == SPEC_ALLOW
    preflight = await agent.request(
        "OPTIONS", f"/actions/{CREATE}", headers={"Access-Control-Request-Headers": "content-type"}
    )
    assert preflight.headers["access-control-allow-headers"] == SPEC_ALLOW


async def test_a_preflight_asking_for_the_key_is_allowed_it(agent: Client) -> None:
    asked = "content-type,x-tenant-id,Idempotency-Key"
    preflight = await agent.request(
        "OPTIONS", f"/actions/{CREATE}", headers={"Access-Control-Request-Headers": asked}
    )
    assert preflight.status == 204
    assert preflight.headers["access-control-allow-headers"] == WITH_KEY


# -- expiry: the purge ---------------------------------------------------------------------------


@pytest.fixture
async def store(tessera_database_url: str) -> AsyncIterator[tuple[Storage, IdempotencyStore]]:
    settings = Settings(database_url=tessera_database_url, plugins_only=("helpdesk",))
    storage = Storage(settings)
    schema = build_schema(build_graph(settings), storage.dialect)
    await storage.connect()
    try:
        await storage.prepare(schema)
        yield storage, IdempotencyStore(storage, schema, retention_s=60)
    finally:
        await storage.disconnect()


async def test_the_purge_deletes_expired_keys_in_batches(
    store: tuple[Storage, IdempotencyStore],
) -> None:
    storage, keys = store
    actor = Actor(tenant_id="t", actor_id="a", roles=frozenset())

    async def write(count: int) -> None:
        async def work(tx: Any) -> None:
            await tx.batch(
                [keys.record(actor, f"k{n}", "f" * 64)({"id": str(n)}) for n in range(count)]
            )

        await storage.transaction(work)

    await write(7)
    assert await keys.purge() == 0  # nothing has expired yet
    assert (await keys.lookup(actor, "k3")) is not None
    later = datetime.now(timezone.utc) + timedelta(seconds=61)
    assert await keys.purge(now=later, batch=3) == 7
    assert await keys.purge(now=later, batch=3) == 0
    assert (await keys.lookup(actor, "k3")) is None
