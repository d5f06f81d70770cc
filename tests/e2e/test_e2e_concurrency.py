"""30 concurrent ``billing.invoice.issue`` calls on 30 drafts of one tenant get exactly
INV-00001..INV-00030: in one process, and across the two workers of a real Hypercorn."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from plugin_api.testing import Host

from ..server.conftest import run_server
from .conftest import INVOICE, TENANT, USD, as_actor, invoice_in


@pytest.fixture
def host(own_host: Host) -> Host:
    """A host of the test's own: concurrency is measured on a database nothing else uses."""
    return own_host


N = 30
EXPECTED = [f"INV-{n:05d}" for n in range(1, N + 1)]
CLERK = {"X-Tenant-ID": TENANT, "X-Actor-Id": "carl", "X-Actor-Roles": "clerk"}


async def test_concurrent_issues_in_process(host: Host) -> None:
    drafts = [await invoice_in(host, "draft") for _ in range(N)]
    clerk = as_actor(host, "carl", "clerk")
    results = await asyncio.gather(
        *(clerk.action(f"{INVOICE}.issue", subject=invoice) for invoice in drafts)
    )
    assert sorted(result.outputs["number"] for result in results) == EXPECTED
    listing = await clerk.projection(f"{INVOICE}.list")
    assert sorted(item["number"] for item in listing.items) == EXPECTED
    assert {item["status"] for item in listing.items} == {"issued"}


@pytest.mark.slow
async def test_concurrent_issues_on_two_server_workers(
    tmp_path: Path, tessera_database_url: str
) -> None:
    with run_server(tmp_path, workers=2, database=tessera_database_url) as server:
        async with httpx.AsyncClient(base_url=server.base_url + "/api", timeout=60) as http:
            drafts = []
            for _ in range(N):
                created = await http.post(
                    f"/actions/{INVOICE}.create",
                    json={"subject": None, "inputs": {"customer": "ACME Corp", "amount": USD}},
                    headers=CLERK,
                )
                drafts.append(created.json()["outputs"]["id"])

            async def issue(invoice: str) -> httpx.Response:
                subject = {"tenantId": TENANT, "entityFqn": INVOICE, "identityHandle": invoice}
                return await http.post(
                    f"/actions/{INVOICE}.issue",
                    json={"subject": subject, "inputs": {}},
                    headers=CLERK,
                )

            started = time.monotonic()
            responses = await asyncio.gather(*(issue(invoice) for invoice in drafts))
            elapsed = time.monotonic() - started
            assert [r.status_code for r in responses] == [200] * N, [r.text for r in responses]
            numbers = sorted(r.json()["outputs"]["number"] for r in responses)
            assert numbers == EXPECTED
            listing = await http.get(f"/projections/{INVOICE}.list", headers=CLERK)
            assert sorted(item["number"] for item in listing.json()["data"]["items"]) == EXPECTED
            print(f"{N} concurrent issues on 2 workers: {elapsed:.2f}s")
