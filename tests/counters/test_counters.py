"""Atomic counters (``ctx.data.increment``, plugin API 1.8) through HTTP, on both backends:
50 concurrent actions incrementing one row all succeed and sum right, where read-then-patch
loses to 409s; versioned and audited like a patch; refusals with a clear kind."""

from __future__ import annotations

import asyncio
from typing import Any

from plugin_api.testing import Client, Host

from .conftest import new_project
from .tracker import ISSUE, PROBE, PROJECT

N = 50


async def project(client: Client, project_id: str) -> dict[str, Any]:
    detail = await client.projection(f"{PROJECT}.detail", subject=project_id)
    assert detail.item is not None
    return detail.item


async def probe(client: Client, op: str, target: str, **inputs: Any) -> Any:
    return await client.action(f"{PROBE}.run", inputs={"op": op, "target": target, **inputs})


async def test_fifty_concurrent_increments_all_succeed_and_sum_right(client: Client) -> None:
    apollo = await new_project(client)
    before = await project(client, apollo)
    results = await asyncio.gather(
        *(
            client.action(f"{ISSUE}.create", inputs={"title": f"#{n}", "project": apollo})
            for n in range(N)
        )
    )
    assert [r.status for r in results] == [200] * N, [r.json for r in results if r.status != 200]
    after = await project(client, apollo)
    assert after["issues"] == N
    assert after["_version"] != before["_version"]


async def test_read_then_patch_loses_where_increments_do_not(client: Client) -> None:
    """The issue's story: the same concurrency with read-then-patch gives 409s (PostgreSQL)
    or serialises (SQLite); the sum of the successes is always right, never a lost update."""
    apollo = await new_project(client)
    results = await asyncio.gather(*(probe(client, "read-then-patch", apollo) for _ in range(12)))
    statuses = [r.status for r in results]
    assert set(statuses) <= {200, 409}
    assert (await project(client, apollo))["issues"] == statuses.count(200)
    for r in results:
        if r.status == 409:
            assert r.error_kind == "ConcurrencyConflict"


async def test_decrement_null_and_the_audit_record(host: Host, client: Client) -> None:
    apollo = await new_project(client)
    version = (await project(client, apollo))["_version"]
    assert (await probe(client, "increment", apollo, field="done", by=-3)).status == 200
    assert (await probe(client, "increment", apollo, field="spare", by=2)).status == 200
    row = await project(client, apollo)
    assert (row["done"], row["spare"]) == (-3, 2)
    trail = await host.audit_trail(PROJECT, apollo)
    spare, done, created = trail
    assert done.action == f"{PROBE}.run" and done.actor_id == "ann"
    assert done.changes == {"done": (0, -3)}
    assert done.version_before == version
    assert spare.changes == {"spare": (None, 2)}
    assert spare.version_before == done.version_after
    assert spare.version_after == row["_version"]
    assert created.version_before is None
    # The history route shows the same writes.
    history = await client.history(f"{PROJECT}.detail", apollo)
    assert [item["changes"] for item in history.items[:2]] == [
        {"spare": {"before": None, "after": 2}},
        {"done": {"before": 0, "after": -3}},
    ]


async def test_increment_then_patch_in_one_action_uses_the_new_version(client: Client) -> None:
    apollo = await new_project(client)
    result = await probe(client, "increment-then-patch", apollo)
    assert result.status == 200, result.json
    row = await project(client, apollo)
    assert (row["issues"], row["note"]) == (1, "patched")


async def test_refusals(client: Client) -> None:
    apollo = await new_project(client)
    cases: list[tuple[dict[str, Any], int, str | None]] = [
        ({"field": "name"}, 400, "BadRequest"),  # not an integer field
        ({"field": "done", "by_text": "2"}, 400, "BadRequest"),  # not an integer amount
        ({"field": "done", "by": 2**63 - 1}, 200, None),
        ({"field": "done", "by": 1}, 400, "BadRequest"),  # past the 64-bit range
        ({"field": "nope"}, 500, "EffectFailed"),  # an unknown field: the plugin's bug
    ]
    for inputs, status, kind in cases:
        result = await probe(client, "increment", apollo, **inputs)
        assert (result.status, result.error_kind) == (status, kind), (inputs, result.json)
    assert (await project(client, apollo))["done"] == 2**63 - 1
    missing = await probe(client, "increment", "01J00000000000000000000000", field="done")
    assert (missing.status, missing.error_kind) == (404, "NotFound")
    # A refused action keeps nothing: the probe row of a refusal was not created either.
    assert (await project(client, apollo))["done"] == 2**63 - 1


async def test_the_increment_of_a_refused_action_is_rolled_back(client: Client) -> None:
    apollo = await new_project(client)
    result = await client.action(f"{ISSUE}.create", inputs={"project": apollo})  # no title
    assert (result.status, result.error_kind) == (400, "BadRequest")
    assert (await project(client, apollo))["issues"] == 0
