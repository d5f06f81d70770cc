"""Scale-out: two Hypercorn instances (``--workers 2`` each, different ports) on one database
behave as one service: one graph hash, gapless invoice numbers, no lost update, a complete
audit trail."""

from __future__ import annotations

import asyncio
import random
from collections import Counter, defaultdict
from typing import Any

import httpx
import pytest

from .conftest import (
    PREFIX,
    assert_envelope,
    audit_rows,
    identity,
    list_items,
    subject,
)

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

TENANTS = ("north", "south")
INVOICE = "billing.invoice"
INVOICES_PER_TENANT = 36
DUPLICATE_ISSUES = 12
AMEND_ROWS = 4
AMENDS_PER_FIELD = 8


def clerk(tenant: str) -> dict[str, str]:
    return identity(tenant, "carl", ["clerk", "accountant"])


async def test_two_instances_behave_as_one_service(
    start_host: Any, database: str, figures: dict[str, Any]
) -> None:
    instances = [start_host(workers=2), start_host(workers=2)]
    rng = random.Random(20261122)
    successes: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    sent = 0

    # One graph hash, whichever instance and worker answers (fresh connection per probe).
    hashes = set()
    for instance in instances:
        for _ in range(6):
            health = httpx.get(f"{instance.base_url}{PREFIX}/_health", timeout=10)
            hashes.add(health.json()["graphHash"])
    assert len(hashes) == 1, hashes

    clients = [instance.client() for instance in instances]
    try:

        async def post(n: int, fqn: str, body: dict[str, Any], tenant: str) -> httpx.Response:
            nonlocal sent
            sent += 1
            response = await clients[n % 2].post(
                f"/actions/{fqn}", json=body, headers=clerk(tenant)
            )
            statuses[response.status_code] += 1
            if response.status_code == 200:
                successes[fqn] += 1
            else:
                assert_envelope(response)
            return response

        # Invoices created over both instances.
        invoices: dict[str, list[str]] = {}
        for tenant in TENANTS:
            created = await asyncio.gather(
                *(
                    post(
                        n,
                        f"{INVOICE}.create",
                        {
                            "subject": None,
                            "inputs": {
                                "customer": f"{tenant} customer {n}",
                                "amount": {"amount": f"{n}.50", "currency": "USD"},
                            },
                        },
                        tenant,
                    )
                    for n in range(INVOICES_PER_TENANT)
                )
            )
            assert all(r.status_code == 200 for r in created)
            invoices[tenant] = [r.json()["outputs"]["id"] for r in created]

        # Every invoice of both tenants issued at once, spread over both instances, plus
        # duplicate issues of some of them (each must fail without consuming a number).
        jobs: list[Any] = []
        for tenant in TENANTS:
            targets = [*invoices[tenant], *rng.sample(invoices[tenant], DUPLICATE_ISSUES)]
            rng.shuffle(targets)
            jobs.extend((tenant, invoice) for invoice in targets)
        issued = await asyncio.gather(
            *(
                post(
                    n,
                    f"{INVOICE}.issue",
                    {"subject": subject(tenant, INVOICE, invoice), "inputs": {}},
                    tenant,
                )
                for n, (tenant, invoice) in enumerate(jobs)
            )
        )
        numbers: dict[str, dict[str, str]] = defaultdict(dict)
        for (tenant, invoice), response in zip(jobs, issued, strict=True):
            if response.status_code == 200:
                assert invoice not in numbers[tenant], "an invoice was issued twice"
                numbers[tenant][invoice] = response.json()["outputs"]["number"]
            else:
                assert response.status_code == 409, response.text
                kind = response.json()["error"]["kind"]
                assert kind in {"WorkflowStateMismatch", "ConcurrencyConflict"}, kind
        expected = [f"INV-{n:05d}" for n in range(1, INVOICES_PER_TENANT + 1)]
        for tenant in TENANTS:
            assert sorted(numbers[tenant].values()) == expected, tenant
            rows = await list_items(clients[1], f"{INVOICE}.list", tenant)
            assert {row["id"]: row["number"] for row in rows} == numbers[tenant]

        # No lost update: concurrent partial patches of different fields of the same rows
        # through both instances; each field ends with its last committed write.
        tenant = TENANTS[0]
        amends = [
            (invoice, field, k)
            for invoice in invoices[tenant][:AMEND_ROWS]
            for field in ("customer", "lines")
            for k in range(AMENDS_PER_FIELD)
        ]
        rng.shuffle(amends)

        def patch(field: str, k: int) -> dict[str, Any]:
            return {"customer": f"amended {k}"} if field == "customer" else {"lines": 100 + k}

        amended = await asyncio.gather(
            *(
                post(
                    n,
                    f"{INVOICE}.amend",
                    {"subject": subject(tenant, INVOICE, invoice), "inputs": patch(field, k)},
                    tenant,
                )
                for n, (invoice, field, k) in enumerate(amends)
            )
        )
        amend_conflicts = 0
        committed: dict[str, set[str]] = defaultdict(set)
        for response in amended:
            if response.status_code == 200:
                committed[tenant].add(response.json()["outputs"]["_version"])
            else:
                assert response.status_code == 409, response.text
                assert response.json()["error"]["kind"] == "ConcurrencyConflict"
                amend_conflicts += 1
        detail = {r["id"]: r for r in await list_items(clients[0], f"{INVOICE}.detail", tenant)}
    finally:
        for client in clients:
            await client.aclose()

    audit = await audit_rows(database)
    # Audit complete: one record per successful action, none for a refused one.
    assert Counter(a["action"] for a in audit) == successes
    amend_audit = [a for a in audit if a["action"] == f"{INVOICE}.amend"]
    assert {a["outputs"]["_version"] for a in amend_audit} == committed[tenant]
    for invoice in invoices[tenant][:AMEND_ROWS]:
        row = detail[invoice]
        trail = [a for a in audit if a["subject_id"] == invoice]
        assert row["_version"] == trail[-1]["outputs"]["_version"]
        for field in ("customer", "lines"):
            writes = [a["outputs"][field] for a in trail if field in a["outputs"]]
            assert writes, (invoice, field)
            assert row[field] == writes[-1], (invoice, field, row[field], writes)
    issue_audit = {
        a["subject_id"]: a["outputs"]["number"] for a in audit if "number" in a["outputs"]
    }
    assert issue_audit == {k: v for t in TENANTS for k, v in numbers[t].items()}

    figures.update(
        instances=2,
        workers_per_instance=2,
        requests_sent=sent,
        statuses={str(k): v for k, v in sorted(statuses.items())},
        invoices_issued=sum(len(v) for v in numbers.values()),
        duplicate_issue_attempts=DUPLICATE_ISSUES * len(TENANTS),
        amend_conflicts=amend_conflicts,
        audit_records=len(audit),
        graph_hashes_seen=len(hashes),
        rows_lost=0,
    )
