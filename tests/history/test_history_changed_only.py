"""A row's history shows only the fields that changed (issue 39): a create lists no
``null -> null``, on the backend of the run."""

from __future__ import annotations

from plugin_api.testing import SharedHarness


async def test_a_create_lists_only_the_values_it_set(tessera_shared: SharedHarness) -> None:
    host = await tessera_shared.start(plugins=["helpdesk"])
    client = host.client(actor="rita", roles=["requester", "agent"])
    made = await client.action(
        "helpdesk.ticket.create", inputs={"title": "Printer on fire", "description": None}
    )
    assert made.status == 200, made.json

    history = await client.history("helpdesk.ticket.detail", made.outputs["id"])
    (created,) = history.json["data"]["items"]
    assert created["changes"], created
    assert all(pair["before"] != pair["after"] for pair in created["changes"].values())
    assert "description" not in created["changes"]  # null before, null after
    assert created["changes"]["title"] == {"before": None, "after": "Printer on fire"}
