"""Tenant isolation under random action sequences (hypothesis) against one real server.

Each example gets three fresh tenants whose names differ only by case and by a SQL wildcard
(``iso7``, ``ISO7``, ``iso7%``) and runs up to 30 random steps: creates, edits, transitions
and invoice issues, list and detail reads, often aimed at another tenant's row (with the
subject's ``tenantId`` set to the acting tenant, or to the owner). After every step:

* no response to tenant A carries a row id or a value of another tenant (other than an id A
  itself sent in that request);
* an action aimed at another tenant's row fails (404 ``NotFound``, or 403
  ``TenantBoundaryViolation`` when the subject names the other tenant);
* after every write by A, the rows of the two other tenants are unchanged (per-tenant
  snapshots through the detail projections).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import HostProcess, identity, subject

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

TICKET = "helpdesk.ticket"
INVOICE = "billing.invoice"
OPS = ("create_ticket", "edit", "transition", "create_invoice", "issue", "list", "detail")
TRANSITIONS = ("start", "resolve", "close", "reopen", "cancel")
WRITES = {"create_ticket", "edit", "transition", "create_invoice", "issue"}

step = st.fixed_dictionaries(
    {
        "actor": st.integers(0, 2),
        "op": st.sampled_from(OPS),
        "owner": st.integers(0, 2),
        "row": st.integers(0, 50),
        "claim": st.sampled_from(("own", "owner")),
        "transition": st.sampled_from(TRANSITIONS),
        "entity": st.sampled_from((TICKET, INVOICE)),
    }
)
_examples = itertools.count()


class Model:
    def __init__(self, tenants: list[str]) -> None:
        self.tenants = tenants
        self.rows: dict[str, dict[str, list[str]]] = {t: {TICKET: [], INVOICE: []} for t in tenants}
        self.markers: dict[str, list[str]] = {t: [] for t in tenants}
        self.snapshots: dict[str, Any] = {}
        self.counter = itertools.count()

    def secrets_of_others(self, tenant: str) -> list[str]:
        found: list[str] = []
        for other in self.tenants:
            if other != tenant:
                found.extend(self.markers[other])
                for ids in self.rows[other].values():
                    found.extend(ids)
        return found


async def snapshot(client: httpx.AsyncClient, tenant: str) -> Any:
    answers = await asyncio.gather(
        *(
            # An accountant: the invoices have a read floor (clerks, accountants).
            client.get(f"/projections/{fqn}.detail", headers=identity(tenant, roles=["accountant"]))
            for fqn in (TICKET, INVOICE)
        )
    )
    for answer in answers:
        assert answer.status_code == 200, answer.text
    return [answer.json()["data"]["items"] for answer in answers]


async def run_sequence(base_url: str, steps: list[dict[str, Any]], tally: dict[str, int]) -> None:
    n = next(_examples)
    model = Model([f"iso{n}", f"ISO{n}", f"iso{n}%"])
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        # One ticket and one invoice per tenant to start with, so that a step aimed at
        # another tenant's row has a row to aim at from the first step on.
        for tenant in model.tenants:
            headers = identity(tenant, "iso", ["agent", "requester", "clerk"])
            marker = f"<{tenant}>#seed"
            amount = {"amount": "10.00", "currency": "USD"}
            for entity, inputs in (
                (TICKET, {"title": marker}),
                (INVOICE, {"customer": marker, "amount": amount}),
            ):
                response = await client.post(
                    f"/actions/{entity}.create",
                    json={"subject": None, "inputs": inputs},
                    headers=headers,
                )
                assert response.status_code == 200, response.text
                model.rows[tenant][entity].append(response.json()["outputs"]["id"])
                tally["requests"] += 1
            model.markers[tenant].append(marker)
        for tenant in model.tenants:
            model.snapshots[tenant] = await snapshot(client, tenant)
        for s in steps:
            await run_step(client, model, s, tally)


async def run_step(
    client: httpx.AsyncClient, model: Model, s: dict[str, Any], tally: dict[str, int]
) -> None:
    actor = model.tenants[s["actor"]]
    owner = model.tenants[s["owner"]]
    headers = identity(actor, "iso", ["agent", "requester", "clerk"])
    op = s["op"]
    entity = INVOICE if op in {"create_invoice", "issue"} else s["entity"]
    if op in {"edit", "transition"}:
        entity = TICKET
    candidates = model.rows[owner][entity]
    target = candidates[s["row"] % len(candidates)] if candidates else None
    if op in {"edit", "transition", "issue", "detail"} and target is None:
        op = "create_invoice" if entity == INVOICE else "create_ticket"
    sent_ids: set[str] = set()
    marker = f"<{actor}>#{next(model.counter)}"
    expected: set[int] | None = None
    if op in {"create_ticket", "create_invoice"}:
        inputs: dict[str, Any]
        if op == "create_ticket":
            fqn, inputs = f"{TICKET}.create", {"title": marker}
        else:
            amount = {"amount": "10.00", "currency": "USD"}
            fqn, inputs = f"{INVOICE}.create", {"customer": marker, "amount": amount}
        response = await client.post(
            f"/actions/{fqn}", json={"subject": None, "inputs": inputs}, headers=headers
        )
        assert response.status_code == 200, response.text
        model.markers[actor].append(marker)
        model.rows[actor][fqn.rsplit(".", 1)[0]].append(response.json()["outputs"]["id"])
    elif op in {"edit", "transition", "issue"}:
        assert target is not None
        sent_ids.add(target)
        claimed = actor if s["claim"] == "own" else owner
        if op == "edit":
            fqn, inputs = f"{TICKET}.edit", {"title": marker}
        elif op == "transition":
            fqn, inputs = f"{TICKET}.{s['transition']}", {}
        else:
            fqn, inputs = f"{INVOICE}.issue", {}
        body = {"subject": subject(claimed, entity, target), "inputs": inputs}
        response = await client.post(f"/actions/{fqn}", json=body, headers=headers)
        if owner != actor:
            tally["cross_tenant_attempts"] += 1
            expected_kind = "NotFound" if claimed == actor else "TenantBoundaryViolation"
            assert response.status_code in {403, 404}, response.text
            assert response.json()["error"]["kind"] == expected_kind, response.text
        else:
            expected = {200, 409}
            assert response.status_code in expected, response.text
            if op == "edit" and response.status_code == 200:
                model.markers[actor].append(marker)
    elif op == "list":
        response = await client.get(f"/projections/{entity}.detail", headers=headers)
        assert response.status_code == 200, response.text
        ids = [item["id"] for item in response.json()["data"]["items"]]
        assert sorted(ids) == sorted(model.rows[actor][entity])
    else:
        assert target is not None
        sent_ids.add(target)
        response = await client.get(
            f"/projections/{entity}.detail", params={"subject": target}, headers=headers
        )
        assert response.status_code == 200, response.text
        item = response.json()["data"]["item"]
        if owner == actor:
            assert item is not None and item["id"] == target
        else:
            tally["cross_tenant_attempts"] += 1
            assert item is None, item
    tally["steps"] += 1
    tally["requests"] += 1
    status = f"status_{response.status_code}"
    tally[status] = tally.get(status, 0) + 1
    text = response.text
    for secret in model.secrets_of_others(actor):
        if secret not in sent_ids:
            assert secret not in text, f"tenant {actor!r} saw {secret!r}: {text[:500]}"
    if op in WRITES:
        fresh = await asyncio.gather(*(snapshot(client, t) for t in model.tenants))
        tally["requests"] += 2 * len(model.tenants)
        for tenant, now in zip(model.tenants, fresh, strict=True):
            if tenant != actor:
                assert now == model.snapshots[tenant], f"{actor!r} changed rows of {tenant!r}"
            model.snapshots[tenant] = now


def test_random_action_sequences_never_cross_tenants(
    start_host: Any, figures: dict[str, Any]
) -> None:
    host: HostProcess = start_host(workers=2)
    tally = {"examples": 0, "steps": 0, "requests": 0, "cross_tenant_attempts": 0}

    @settings(
        max_examples=25,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(steps=st.lists(step, min_size=3, max_size=30))
    def check(steps: list[dict[str, Any]]) -> None:
        tally["examples"] += 1
        asyncio.run(run_sequence(host.base_url + "/api", steps, tally))

    check()
    assert tally["cross_tenant_attempts"] > 0
    statuses = {k[7:]: tally.pop(k) for k in sorted(tally) if k.startswith("status_")}
    figures.update(tally, step_statuses=statuses, leaks=0, foreign_rows_changed=0)


# -- scoped reads under concurrent writes ------------------------------------------------------

MINE = f"{TICKET}.mine"
SCOPED_TENANTS = ("scope", "SCOPE", "scope%")
REQUESTERS = ("rita", "sam", "tom")


async def _scoped_pages(
    client: httpx.AsyncClient, tenant: str, actor: str, roles: list[str], size: int
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    params = {"pageSize": str(size), "sort": "-created_at"}
    while True:
        response = await client.get(
            f"/projections/{MINE}", params=params, headers=identity(tenant, actor, roles)
        )
        assert response.status_code == 200, response.text
        data = response.json()["data"]
        items.extend(data["items"])
        if data["pagination"]["nextCursor"] is None:
            return items
        params["cursor"] = data["pagination"]["nextCursor"]


def test_scoped_reads_under_concurrent_writes(start_host: Any, figures: dict[str, Any]) -> None:
    """Requesters page through ``helpdesk.ticket.mine`` while tickets of every requester of
    three look-alike tenants are being created: no page ever holds a ticket of another
    requester or another tenant, and at the end each reader sees exactly their tickets."""
    host: HostProcess = start_host(workers=2)
    created: dict[tuple[str, str], set[str]] = {
        (tenant, actor): set() for tenant in SCOPED_TENANTS for actor in REQUESTERS
    }
    tally = {"writes": 0, "scoped_reads": 0, "rows_checked": 0}

    async def writer(client: httpx.AsyncClient, tenant: str, actor: str) -> None:
        for n in range(12):
            response = await client.post(
                f"/actions/{TICKET}.create",
                json={"subject": None, "inputs": {"title": f"{tenant}/{actor}/{n}"}},
                headers=identity(tenant, actor, ["requester"]),
            )
            assert response.status_code == 200, response.text
            created[(tenant, actor)].add(response.json()["outputs"]["id"])
            tally["writes"] += 1

    async def reader(client: httpx.AsyncClient, tenant: str, actor: str, size: int) -> None:
        for _ in range(8):
            items = await _scoped_pages(client, tenant, actor, ["requester"], size)
            tally["scoped_reads"] += 1
            foreign = set().union(*(ids for key, ids in created.items() if key != (tenant, actor)))
            for item in items:
                assert item["requester"] == actor, item
                assert item["title"].startswith(f"{tenant}/{actor}/"), item
                assert item["id"] not in foreign, item
                tally["rows_checked"] += 1

    async def run() -> None:
        async with httpx.AsyncClient(base_url=host.base_url + "/api", timeout=30) as client:
            await asyncio.gather(
                *(writer(client, t, a) for t in SCOPED_TENANTS for a in REQUESTERS),
                *(
                    reader(client, t, a, size)
                    for t in SCOPED_TENANTS
                    for a, size in zip(REQUESTERS, (1, 3, 50), strict=True)
                ),
            )
            for (tenant, actor), ids in created.items():
                final = await _scoped_pages(client, tenant, actor, ["requester"], 5)
                assert {item["id"] for item in final} == ids
                agent = await _scoped_pages(client, tenant, "ann", ["agent"], 50)
                everyone = {i for (t, _), s in created.items() if t == tenant for i in s}
                assert {item["id"] for item in agent} == everyone

    asyncio.run(run())
    assert tally["rows_checked"] > 0
    figures.update(tally, leaks=0)
