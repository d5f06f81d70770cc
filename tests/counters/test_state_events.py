"""Events for state changes (``Subscriber(states=...)``, plugin API 1.8), on both backends:
a transition action and a data-API transition from another action's effect are both
delivered to the subscribers following the entity's states (a transactional one writes
exactly once); a create, a patch or a refused transition are not state changes."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from plugin_api import Subscriber, hookimpl
from plugin_api.testing import Client, Host, TesseraHarness

from .conftest import new_project
from .tracker import ISSUE, NOTICE, PROBE, PROJECT, TrackerPlugin


async def new_issue(client: Client, project: str) -> str:
    result = await client.action(f"{ISSUE}.create", inputs={"title": "Leak", "project": project})
    return str(result.outputs["id"])


async def notices(client: Client) -> list[tuple[str, str, str]]:
    listing = await client.projection(f"{NOTICE}.list")
    return sorted((i["issue"], i["cause"], i["state"]) for i in listing.items)


async def test_a_transition_action_and_a_data_api_transition_both_deliver(
    host: Host, client: Client, tracker: TrackerPlugin
) -> None:
    apollo = await new_project(client)
    first, second = await new_issue(client, apollo), await new_issue(client, apollo)
    assert (await client.action(f"{ISSUE}.finish", subject=first)).status == 200
    moved = await client.action(
        f"{PROBE}.run", inputs={"op": "transition", "target": second, "field": "finish"}
    )
    assert moved.status == 200, moved.json
    assert await host.deliveries_settled() == {}
    assert await notices(client) == sorted(
        [(first, f"{ISSUE}.finish", "done"), (second, f"{PROBE}.run", "done")]
    )
    # The event of the data-API transition is the row's audit record.
    (event,) = [e for e in tracker.seen if e.subject_id == second]
    assert (event.entity, event.action, event.actor_id) == (ISSUE, f"{PROBE}.run", "ann")
    assert event.outputs["state"] == "done"
    (record, *_) = await host.audit_trail(ISSUE, second)
    assert record.event_id == event.id
    assert record.changes == {"state": ("open", "done")}


async def test_creates_patches_and_refusals_are_not_state_events(
    host: Host, client: Client, tracker: TrackerPlugin
) -> None:
    apollo = await new_project(client)
    issue = await new_issue(client, apollo)  # a create: no state change
    refused = await client.action(
        f"{PROBE}.run", inputs={"op": "transition", "target": issue, "field": "archive"}
    )
    assert (refused.status, refused.error_kind) == (409, "WorkflowStateMismatch")
    await client.action(f"{PROBE}.run", inputs={"op": "increment", "target": apollo})
    assert await host.deliveries_settled() == {}
    assert await notices(client) == []
    assert tracker.seen == []
    # Then a real one: the subscriber did not just miss everything.
    await client.action(f"{ISSUE}.finish", subject=issue)
    await host.deliveries_settled()
    assert [e.subject_id for e in tracker.seen] == [issue]


async def test_a_subscriber_of_states_gets_no_other_event(
    host: Host, client: Client, tracker: TrackerPlugin
) -> None:
    apollo = await new_project(client)
    await client.action(f"{PROJECT}.create", inputs={"name": "Gemini"})
    await new_issue(client, apollo)
    await host.deliveries_settled()
    assert tracker.seen == []


class _Wrong:
    @hookimpl
    def tessera_subscribers(self) -> Sequence[Subscriber]:
        async def handler(ctx: object) -> None:
            return None

        return (Subscriber(name="wrong.states", handler=handler, states=(PROJECT,)),)


async def test_states_of_an_entity_without_a_workflow_is_a_startup_error(
    tessera: TesseraHarness,
) -> None:
    with pytest.raises(Exception, match="not an entity with a workflow") as raised:
        await tessera.start(plugins=[], extra=[("tracker", TrackerPlugin()), ("wrong", _Wrong())])
    assert "wrong" in str(raised.value)
