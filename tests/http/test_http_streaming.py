"""Long list projections are streamed in chunks and read the same as short ones."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("count", [0, 2, 3, 7, 9])
async def test_streamed_list_equals_the_whole_list(tessera, count: int) -> None:
    streamed = await tessera.start(plugins=["helpdesk"], list_chunk_rows=3)
    client = streamed.client(roles=["agent"])
    other_tenant = streamed.client(tenant="t2", roles=["agent"])
    ids = []
    for number in range(count):
        result = await client.action("helpdesk.ticket.create", inputs={"title": f"#{number}"})
        ids.append(result.outputs["id"])
        await other_tenant.action("helpdesk.ticket.create", inputs={"title": "other"})
    doc = (await client.projection("helpdesk.ticket.queue")).json
    assert [item["id"] for item in doc["data"]["items"]] == sorted(ids)
    assert [item["title"] for item in doc["data"]["items"]] == [f"#{n}" for n in range(count)]
    assert doc["data"]["pagination"] == {"pageSize": count, "nextCursor": None}
    assert doc["filters"] == [] and doc["metadata"]["tenant"] == "t1"
    assert [a["name"] for a in doc["actions"]] == ["create", "start", "escalate"]
