"""ViewSchema 1.3.0: the 1.1.0 document plus the entity's ``workflow`` (states and
transitions), for renderers that draw state badges and the diagram (the console does)."""

from __future__ import annotations

from typing import Any

import pytest

from plugin_api.testing import Host


@pytest.fixture
def host(own_host: Host) -> Host:
    """A host of the test's own: these tests act in the tenant ``t1``."""
    return own_host


V13 = {"acceptSchemaVersions": "1.3.0"}


async def test_a_list_at_1_3_0_carries_the_workflow(host: Host) -> None:
    client = host.client(tenant="t1")
    result = await client.projection("helpdesk.ticket.queue", query=V13)
    assert result.status == 200
    document = result.json
    assert document["schemaVersion"] == "1.3.0"
    assert list(document) == [
        "schemaVersion", "targetProfile", "metadata", "fields", "actions", "filters", "sort",
        "search", "workflow", "data",
    ]  # fmt: skip
    workflow = document["workflow"]
    assert workflow["field"] == "state" and workflow["initial"] == "open"
    assert workflow["states"] == [
        {"name": "open", "label": "Open", "final": False},
        {"name": "in_progress", "label": "In progress", "final": False},
        {"name": "resolved", "label": "Resolved", "final": False},
        {"name": "closed", "label": "Closed", "final": True},
    ]
    by_name = {t["name"]: t for t in workflow["transitions"]}
    assert by_name["start"] == {
        "name": "start", "from": ["open"], "to": "in_progress",
        "actions": ["helpdesk.ticket.start"],
    }  # fmt: skip
    assert by_name["cancel"]["from"] == ["open", "in_progress"]
    assert by_name["resolve"]["actions"] == []  # the queue does not offer it
    v11 = await client.projection("helpdesk.ticket.queue", query={"acceptSchemaVersions": "1.1.0"})
    expected = {k: v for k, v in document.items() if k != "workflow"}
    expected["schemaVersion"] = "1.1.0"
    v11.json["metadata"]["generatedAt"] = expected["metadata"]["generatedAt"]
    assert v11.json == expected  # 1.3.0 = 1.1.0 + workflow


async def test_detail_at_1_3_0_and_an_entity_without_workflow(host: Host) -> None:
    client = host.client(tenant="t1", roles=["agent"])
    created = await client.action("helpdesk.ticket.create", inputs={"title": "x"})
    ticket = created.json["outputs"]["id"]
    detail = await client.projection("helpdesk.ticket.detail", subject=ticket, query=V13)
    assert detail.json["schemaVersion"] == "1.3.0"
    assert detail.json["workflow"]["field"] == "state"
    assert {t["name"] for t in detail.json["workflow"]["transitions"]} >= {"start", "reopen"}
    inbox = await client.projection("helpdesk.notification.inbox", query=V13)
    assert inbox.status == 200 and inbox.json["workflow"] is None


async def test_the_newest_listed_version_wins_and_older_ones_are_unchanged(host: Host) -> None:
    client = host.client(tenant="t1")
    both = await client.projection(
        "helpdesk.ticket.queue", query={"acceptSchemaVersions": "1.1.0, 1.3.0"}
    )
    assert both.json["schemaVersion"] == "1.3.0"
    for version in ("1.0.0", "1.1.0", "1.2.9"):
        result = await client.projection(
            "helpdesk.ticket.queue", query={"acceptSchemaVersions": version}
        )
        assert "workflow" not in result.json


async def test_1_3_0_carries_the_rows_availability_of_1_2_0(host: Host) -> None:
    client = host.client(tenant="t1", roles=["agent"])
    created = await client.action("helpdesk.ticket.create", inputs={"title": "x"})
    ticket = created.json["outputs"]["id"]
    detail: dict[str, Any] = {}
    for version in ("1.2.0", "1.3.0"):
        answer = await client.projection(
            "helpdesk.ticket.detail", subject=ticket, query={"acceptSchemaVersions": version}
        )
        assert answer.status == 200, answer.json
        detail[version] = answer.item["_availability"]  # type: ignore[index]
    assert detail["1.3.0"] == detail["1.2.0"]
    assert detail["1.3.0"]["helpdesk.ticket.start"] == {"enabled": True}
    v11 = await client.projection(
        "helpdesk.ticket.detail", subject=ticket, query={"acceptSchemaVersions": "1.1.0"}
    )
    assert "_availability" not in v11.item  # type: ignore[operator]
