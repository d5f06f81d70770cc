"""The expenses plugin's tests, on the real host (the `tessera` fixture of tessera-host)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from plugin_api.testing import Client, Host, Result, TesseraHarness

CLAIM = "expenses.claim"
MINE = f"{CLAIM}.mine"


@pytest.fixture
async def host(tessera: TesseraHarness) -> Host:
    return await tessera.start(plugins=["expenses"])


@pytest.fixture
def eve(host: Host) -> Client:
    return host.client(tenant="acme", actor="eve", roles=["employee"])


@pytest.fixture
def meg(host: Host) -> Client:
    return host.client(tenant="acme", actor="meg", roles=["manager", "employee"])


@pytest.fixture
def fin(host: Host) -> Client:
    return host.client(tenant="acme", actor="fin", roles=["finance"])


async def file_claim(client: Client, title: str = "Train to Lyon", **more: Any) -> str:
    inputs = {
        "title": title,
        "amount": {"amount": "42.50", "currency": "EUR"},
        "category": "travel",
        "spent_at": "2031-03-02T08:00:00Z",
        **more,
    }
    return str((await client.action(f"{CLAIM}.file", inputs=inputs)).outputs["id"])


async def dry_run(client: Client, fqn: str, subject: str) -> Result:
    body = {
        "subject": {"tenantId": client.tenant, "entityFqn": CLAIM, "identityHandle": subject},
        "inputs": {},
    }
    return await client.request(
        "POST",
        f"/actions/{fqn}?dryRun=true",
        body=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )


async def test_a_claim_is_filed_approved_and_paid(eve: Client, meg: Client, fin: Client) -> None:
    claim = await file_claim(eve)
    assert (await eve.action(f"{CLAIM}.submit", subject=claim)).outputs["state"] == "submitted"
    approved = await meg.action(f"{CLAIM}.approve", subject=claim)
    assert approved.outputs["approver"] == "meg"
    rehearsed = await dry_run(fin, f"{CLAIM}.pay", claim)
    assert rehearsed.status == 200 and rehearsed.json["dryRun"] is True
    assert rehearsed.json["outputs"]["reference"] == "EXP-00001"
    paid = await fin.action(f"{CLAIM}.pay", subject=claim)
    assert paid.outputs["reference"] == "EXP-00001"  # the dry run gave its number back
    assert paid.outputs["paid_at"].endswith("Z")
    history = await eve.request("GET", f"/projections/{CLAIM}.detail/history?subject={claim}")
    actions = [item["action"] for item in history.json["data"]["items"]]
    assert actions == [f"{CLAIM}.{name}" for name in ("pay", "approve", "submit", "file")]


async def test_an_unapproved_claim_is_not_paid(eve: Client, fin: Client) -> None:
    claim = await file_claim(eve)
    refused = await fin.action(f"{CLAIM}.pay", subject=claim)
    assert (refused.status, refused.error_kind) == (409, "WorkflowStateMismatch")


async def test_nobody_decides_on_their_own_claim(meg: Client) -> None:
    claim = await file_claim(meg)
    await meg.action(f"{CLAIM}.submit", subject=claim)
    refused = await meg.action(f"{CLAIM}.approve", subject=claim)
    assert (refused.status, refused.error_kind) == (403, "PolicyDenied")
    assert "own claim" in refused.json["error"]["message"]


async def test_at_most_three_claims_wait(eve: Client) -> None:
    claims = [await file_claim(eve, f"Claim {n}") for n in range(4)]
    for claim in claims[:3]:
        assert (await eve.action(f"{CLAIM}.submit", subject=claim)).status == 200
    fourth = await eve.action(f"{CLAIM}.submit", subject=claims[3])
    assert (fourth.status, fourth.error_kind) == (403, "PolicyDenied")
    page = await eve.projection(MINE, query={"acceptSchemaVersions": "1.2.0"})
    offered = {row["id"]: row["_availability"][f"{CLAIM}.submit"] for row in page.items}
    assert offered[claims[3]] == {
        "enabled": False,
        "kind": "PolicyDenied",
        "message": "eve already has 3 claims waiting",
    }


async def test_employees_read_only_their_claims(host: Host, eve: Client, meg: Client) -> None:
    mine = await file_claim(eve, "Mine")
    theirs = await file_claim(meg, "Theirs")
    assert [row["id"] for row in (await eve.projection(MINE)).items] == [mine]
    assert (await eve.projection(f"{CLAIM}.detail", subject=theirs)).item is None
    assert len((await meg.projection(f"{CLAIM}.queue")).items) == 2
    queue = await eve.projection(f"{CLAIM}.queue")
    assert (queue.status, queue.error_kind) == (403, "PolicyDenied")
    nobody = await host.client(tenant="acme", actor="vic").projection(MINE)
    assert (nobody.status, nobody.error_kind) == (403, "PolicyDenied")


async def test_my_claims_are_filtered_counted_and_sorted(eve: Client) -> None:
    await file_claim(eve, "Lunch", category="meals", amount={"amount": "12", "currency": "EUR"})
    await file_claim(eve, "Taxi", spent_at="2031-04-01T10:00:00Z")
    await file_claim(eve, "Paper", category="office", amount={"amount": "5", "currency": "EUR"})
    query = {"acceptSchemaVersions": "1.1.0", "count": "true", "facet": "category"}
    page = await eve.projection(MINE, query=query)
    assert page.items[0]["title"] == "Taxi"  # -spent_at
    assert page.json["data"]["count"] == {"value": 3, "exact": True}
    counts = {v["value"]: v["count"] for v in page.json["data"]["facets"]["category"]["values"]}
    assert counts == {"travel": 1, "meals": 1, "office": 1}
    cheap = await eve.projection(
        MINE,
        query={
            "acceptSchemaVersions": "1.1.0",
            "sort": "amount",
            "filter.category.in": "meals,office",
        },
    )
    assert [row["title"] for row in cheap.items] == ["Paper", "Lunch"]
    found = await eve.projection(MINE, query={"acceptSchemaVersions": "1.1.0", "q": "TAX"})
    assert [row["title"] for row in found.items] == ["Taxi"]
