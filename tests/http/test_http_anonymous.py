"""Callers without ``X-Actor-Id`` act as ``anon`` (v0.1: stamps, audit) but are *nobody* for
row scopes (no rows of a scope on the actor) and for ``Idempotency-Key`` (no stored answers
shared between anonymous callers); ``TESSERA_ANONYMOUS_SHARED=true`` keeps the old sharing."""

from __future__ import annotations

from typing import Any

import pytest

from plugin_api.testing import Client, Host, TesseraHarness

MINE = "helpdesk.ticket.mine"
CREATE = "helpdesk.ticket.create"


async def _keyed(client: Client, key: str, title: str) -> tuple[int, dict[str, str], Any]:
    result = await client.request(
        "POST",
        f"/actions/{CREATE}",
        body=f'{{"subject": null, "inputs": {{"title": "{title}"}}}}'.encode(),
        headers={"Content-Type": "application/json", "Idempotency-Key": key},
    )
    return result.status, dict(result.headers), result.json


async def _start(tessera: TesseraHarness, shared: bool) -> Host:
    return await tessera.start(plugins=["helpdesk"], anonymous_shared=shared)


async def test_anonymous_requesters_see_no_rows_of_a_scope(tessera: TesseraHarness) -> None:
    host = await _start(tessera, shared=False)
    anonymous = host.client(actor=None, roles=["requester"])
    for title in ("first anonymous", "second anonymous"):
        made = await anonymous.action(CREATE, inputs={"title": title})
        assert made.status == 200
    rita = host.client(actor="rita", roles=["requester"])
    assert (await rita.action(CREATE, inputs={"title": "rita's"})).status == 200

    listed = await anonymous.projection(MINE)
    assert listed.status == 200 and listed.items == []
    paged = await anonymous.projection(MINE, query={"pageSize": "10"})
    assert paged.status == 200 and paged.items == []
    every = (await host.client(actor="zed", roles=["agent"]).projection(MINE)).items
    assert sorted(i["requester"] for i in every) == ["anon", "anon", "rita"]  # v0.1 stamps
    one = every[0]["id"]
    detail = await anonymous.projection(MINE, subject=one)
    assert detail.status == 200 and detail.json["data"]["item"] is None
    assert [i["title"] for i in (await rita.projection(MINE)).items] == ["rita's"]


async def test_anonymous_callers_share_no_idempotency_answers(tessera: TesseraHarness) -> None:
    host = await _start(tessera, shared=False)
    anonymous = host.client(actor=None, roles=["requester"])
    first = await _keyed(anonymous, "k-1", "one")
    second = await _keyed(anonymous, "k-1", "other body")  # another anonymous caller
    again = await _keyed(anonymous, "k-1", "one")
    assert [first[0], second[0], again[0]] == [200, 200, 200]
    assert "idempotent-replayed" not in {k.lower() for k in again[1]}
    ids = {str(r[2]["outputs"]["id"]) for r in (first, second, again)}
    assert len(ids) == 3
    # A named actor's keys still replay.
    rita = host.client(actor="rita", roles=["requester"])
    made, replayed = await _keyed(rita, "k-1", "r"), await _keyed(rita, "k-1", "r")
    assert replayed[1].get("idempotent-replayed") == "true" and made[2] == replayed[2]


@pytest.mark.parametrize("title", ["shared"])
async def test_the_setting_keeps_the_shared_anonymous_identity(
    tessera: TesseraHarness, title: str
) -> None:
    host = await _start(tessera, shared=True)
    anonymous = host.client(actor=None, roles=["requester"])
    made = await anonymous.action(CREATE, inputs={"title": title})
    assert [i["id"] for i in (await anonymous.projection(MINE)).items] == [made.outputs["id"]]
    assert (await _keyed(anonymous, "k-2", "a"))[0] == 200
    reused = await _keyed(anonymous, "k-2", "b")
    assert reused[0] == 422
