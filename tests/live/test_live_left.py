"""Rows leaving a list (docs/live.md, "Rows leaving a list"), on a shared host in a tenant of
the test's own: a tracking stream (``shown``) over a filtered list is told ``left`` when a
write takes a row it shows out of the list, a ``change`` for a row that stays; a row it named
but could not read, or a row of another reader's scope, is never told; a stream that does not
track hears nothing of a row leaving.

A stream without ``Last-Event-ID`` starts at the tenant's newest *final* record: on PostgreSQL
a record committed just before it opened, while any transaction of the cluster was still open,
may be told on it too (docs/live.md, "Resuming"). So the rows are written while a plain stream
of the tenant is open, and the tracking stream opens once that one has heard them: a stream
opening beside another starts where the tenant's reader stands, after those records."""

from __future__ import annotations

from typing import Any

from plugin_api.testing import Client, TenantHost

from .conftest import MINE, QUEUE, TICKET, Event, LiveStream, headers, open_stream

OPEN_QUEUE = f"/api/changes?projection={QUEUE}&filter.state=open"


async def create(client: Client, title: str) -> str:
    result = await client.action(f"{TICKET}.create", inputs={"title": title})
    assert result.status == 200, result.json
    return str(result.outputs["id"])


def told(events: list[Any]) -> list[tuple[str, str]]:
    return [(e.event, e.data["id"]) for e in events if e.event in ("change", "left")]


async def until(stream: LiveStream, count: int) -> list[Event]:
    """Read until ``count`` change or left messages came (at most 10 s)."""
    found: list[Event] = []
    while len(found) < count:
        found += [e for e in await stream.next_events(10.0) if e.event in ("change", "left")]
    return found


async def test_a_row_leaving_a_filtered_list_is_told_to_a_tracking_stream(
    samples: TenantHost,
) -> None:
    agent = samples.client(actor="ann", roles=["agent"])
    head = headers(samples.tenant, "ann", "agent")
    client = samples.app.test_client()
    async with open_stream(client, OPEN_QUEUE, head) as plain:
        leaving, staying, never = [await create(agent, t) for t in ("Printer", "Mouse", "Desk")]
        assert told(await until(plain, 3)) == [(
            "change", row) for row in (leaving, staying, never)]  # fmt: skip
        started = await agent.action(f"{TICKET}.start", subject=never)  # not in the list
        assert started.status == 200, started.json
        path = f"{OPEN_QUEUE}&shown={leaving}&shown={staying}&shown={never}&shown=nope"
        async with open_stream(client, path, head) as tracking:
            await told_of_moves(agent, tracking, plain, leaving, staying, never)


async def told_of_moves(
    agent: Client, tracking: LiveStream, plain: LiveStream, leaving: str, staying: str, never: str
) -> None:
    for subject in (leaving, never):
        moved = await agent.action(f"{TICKET}.{'start' if subject == leaving else 'resolve'}",
                                   subject=subject)  # fmt: skip
        assert moved.status == 200, moved.json
    edited = await agent.action(f"{TICKET}.edit", subject=staying, inputs={"title": "Mice"})
    assert edited.status == 200, edited.json
    events = await until(tracking, 2)
    assert told(events) == [("left", leaving), ("change", staying)]
    left = events[0]
    assert left.data == {
        "entity": TICKET,
        "id": leaving,
        "version": left.data["version"],
        "action": f"{TICKET}.start",
        "projections": [QUEUE],
    }
    assert left.id is not None and left.data["version"]
    # Without ``shown``: the filter narrows what is told, and no row leaves.
    assert told(await until(plain, 1)) == [("change", staying)]
    # A row leaves once: a later write of it is not told again.
    resolved = await agent.action(f"{TICKET}.resolve", subject=leaving)
    assert resolved.status == 200, resolved.json
    assert told(await tracking.quiet(0.3)) == []


async def test_a_row_of_another_readers_scope_is_never_told_to_have_left(
    samples: TenantHost,
) -> None:
    alice = samples.client(actor="alice", roles=["requester"])
    agent = samples.client(actor="ann", roles=["agent"])
    plain = f"/api/changes?projection={MINE}&filter.state=open"
    head = headers(samples.tenant, "alice", "requester")
    async with open_stream(samples.app.test_client(), plain, head) as hearing:
        hers, theirs = await create(alice, "Alice's"), await create(agent, "Ann's")
        assert told(await until(hearing, 1)) == [("change", hers)]
        await theirs_never_left(samples, agent, plain, hers, theirs)


async def theirs_never_left(
    samples: TenantHost, agent: Client, plain: str, hers: str, theirs: str
) -> None:
    path = f"{plain}&shown={hers}&shown={theirs}"
    fresh = samples.new_tenant()  # the same ids named in another tenant: nothing to track
    async with (
        open_stream(
            samples.app.test_client(), path, headers(samples.tenant, "alice", "requester")
        ) as alices,
        open_stream(
            samples.app.test_client(), path, headers(fresh, "alice", "requester")
        ) as elsewhere,
    ):
        for subject in (theirs, hers):
            closed = await agent.action(f"{TICKET}.cancel", subject=subject)
            assert closed.status == 200, closed.json
        # Ann's ticket was never in alice's list (named, but not hers to read): not told.
        assert told(await until(alices, 1)) == [("left", hers)]
        assert told(await alices.quiet(0.2)) == []
        assert told(await elsewhere.quiet(0.1)) == []
