"""Live changes through the Quart test client, on the backend of the run (docs/live.md): a
change reaches a stream at once, with nothing of the row; read access and row scope decide
who hears of what; resume with Last-Event-ID misses nothing and repeats nothing; resets,
refusals and the stream cap."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from plugin_api.listing import MAX_PAGE_SIZE as MAX_SHOWN
from plugin_api.testing import Client, Host, TesseraHarness

from .conftest import (
    DETAIL,
    MINE,
    QUEUE,
    TICKET,
    Event,
    LiveStream,
    changes_path,
    headers,
    open_stream,
)


@pytest.fixture
async def host(tessera: TesseraHarness) -> Host:
    return await tessera.start(plugins=["helpdesk"], live_poll_s=0.05)


@contextlib.asynccontextmanager
async def opened(host: Host, path: str, **head: str) -> AsyncIterator[LiveStream]:
    """A stream, with its first chunk (the retry hint) read: the stream is registered."""
    async with open_stream(host.app.test_client(), path, head) as stream:
        yield stream


async def create(client: Client, title: str = "Printer") -> dict[str, Any]:
    result = await client.action(f"{TICKET}.create", inputs={"title": title, "priority": "normal"})
    assert result.status == 200, result.json
    return result.outputs


async def refused(host: Host, path: str, **head: str) -> tuple[int, dict[str, Any]]:
    response = await host.app.test_client().get(path, headers=head)
    return response.status_code, json.loads(await response.get_data())


async def test_a_change_reaches_a_stream_with_nothing_of_the_row(host: Host) -> None:
    agent = host.client(actor="ann", roles=["agent"])
    async with opened(host, changes_path(QUEUE, DETAIL), **headers(actor="ann")) as stream:
        headers_sent = stream.connection.headers
        assert headers_sent is not None
        assert headers_sent["Content-Type"] == "text/event-stream; charset=utf-8"
        assert headers_sent["Access-Control-Allow-Origin"] == "*"
        outputs = await create(agent)
        (change,) = await stream.changes(1)
        row = (await agent.projection(DETAIL, subject=outputs["id"])).item
        assert row is not None
        assert change.data == {
            "entity": TICKET,
            "id": outputs["id"],
            "version": row["_version"],
            "action": f"{TICKET}.create",
            "projections": [QUEUE, DETAIL],
        }
        assert change.id is not None
        started = await agent.action(f"{TICKET}.start", subject=outputs["id"])
        assert started.status == 200, started.json
        (second,) = await stream.changes(1)
        assert second.data["action"] == f"{TICKET}.start"
        row = (await agent.projection(DETAIL, subject=outputs["id"])).item
        assert row is not None
        assert second.data["version"] == row["_version"]
        assert second.id is not None and second.id != change.id


async def test_another_tenant_hears_nothing(host: Host) -> None:
    async with opened(host, changes_path(QUEUE), **headers(tenant="t2")) as stream:
        await create(host.client(actor="ann", roles=["agent"]))
        assert [e for e in await stream.quiet(0.5) if e.event == "change"] == []


async def test_a_reader_outside_the_row_scope_hears_nothing(host: Host) -> None:
    alice = host.client(actor="alice", roles=["requester"])
    bob = host.client(actor="bob", roles=["requester"])
    async with (
        opened(host, changes_path(MINE), **headers(actor="bob", roles="requester")) as bobs,
        opened(host, changes_path(MINE), **headers(actor="alice", roles="requester")) as alices,
        opened(host, changes_path(MINE), **headers(actor="ann", roles="agent")) as agents,
    ):
        # alice and bob are two cohorts of one projection, asked in one statement.
        alices_ticket = await create(alice, "Alice's")
        bobs_ticket = await create(bob, "Bob's")
        (heard,) = await bobs.changes(1)
        assert heard.data["id"] == bobs_ticket["id"]
        (heard,) = await alices.changes(1)
        assert heard.data["id"] == alices_ticket["id"]
        assert [e.data["id"] for e in await agents.changes(2)] == [
            alices_ticket["id"],
            bobs_ticket["id"],
        ]
        assert [e for e in await bobs.quiet(0.3) if e.event == "change"] == []
        assert [e for e in await alices.quiet(0.1) if e.event == "change"] == []


@pytest.mark.parametrize(
    ("path", "head", "status", "kind"),
    [
        (changes_path(MINE), headers(actor="x", roles="viewer"), 403, "PolicyDenied"),
        (changes_path("helpdesk.nope"), headers(), 404, "ProjectionNotFound"),
        ("/api/changes", headers(), 400, "BadRequest"),
        (changes_path(QUEUE), {}, 400, "BadRequest"),
        (changes_path(*[QUEUE] * 21), headers(), 400, "BadRequest"),
        # docs/live.md, "Rows leaving a list": the filters are a list's, checked as strictly.
        (changes_path(QUEUE) + "&filter.nope=1", headers(), 400, "BadRequest"),
        (changes_path(QUEUE) + "&filter.state.near=open", headers(), 400, "BadRequest"),
        (changes_path(QUEUE) + "&filter.due_at.gt=yesterday", headers(), 400, "BadRequest"),
        (changes_path(QUEUE) + "&shown=x" * (MAX_SHOWN + 1), headers(), 400, "BadRequest"),
        (changes_path(QUEUE) + "&shown=x" * MAX_SHOWN, headers(), 200, "tracking"),
        (changes_path(QUEUE), {**headers(), "Last-Event-ID": "1.1, 2.2"}, 200, None),
    ],
)
async def test_refusals(
    host: Host, path: str, head: dict[str, str], status: int, kind: str | None
) -> None:
    if kind == "tracking":  # at the limit: a tracking stream, told nothing yet
        async with opened(host, path, **head) as stream:
            assert [e for e in await stream.quiet(0.1) if e.event != "heartbeat"] == []
        return
    if kind is None:  # one header value with a comma is one (invalid) id: a reset
        async with opened(host, path, **head) as stream:
            (reset,) = await stream.next_events()
            assert (reset.event, reset.data) == ("reset", {"reason": "invalid"})
        return
    code, body = await refused(host, path, **head)
    assert code == status
    assert body["ok"] is False and body["error"]["kind"] == kind


async def test_resume_misses_nothing_and_repeats_nothing(host: Host) -> None:
    """Changes made while the client was away (and records of projections it does not
    watch) come in commit order after a reconnect; counted against the audit records."""
    agent = host.client(actor="ann", roles=["agent"])
    seen: list[Event] = []
    last: str | None = None
    tickets: list[str] = []
    for round_ in range(3):
        head = (
            headers(actor="ann")
            if last is None
            else headers(actor="ann", **{"Last-Event-ID": last})
        )
        async with opened(host, changes_path(QUEUE), **head) as stream:
            expected = 0
            if round_:
                expected = 4  # made while away
            for _ in range(2):
                ticket = await create(agent, f"round {round_}")
                tickets.append(ticket["id"])
            got = await stream.changes(expected + 2)
            seen.extend(got)
            last = got[-1].id
        # Away: two creates and two starts.
        for _ in range(2):
            ticket = await create(agent, "while away")
            tickets.append(ticket["id"])
            assert (await agent.action(f"{TICKET}.start", subject=ticket["id"])).status == 200
    async with opened(
        host, changes_path(QUEUE), **headers(actor="ann", **{"Last-Event-ID": last or ""})
    ) as stream:
        seen.extend(await stream.changes(4))
        assert [e for e in await stream.quiet(0.3) if e.event == "change"] == []
    heard = [(e.data["id"], e.data["version"]) for e in seen]
    assert len(heard) == len(set(heard))  # nothing repeated
    records: list[tuple[str, str]] = []
    for made in tickets:  # every record of every ticket, from the audit log
        result = await agent.request(
            "GET", f"/projections/{DETAIL}/history", query={"subject": made, "pageSize": "500"}
        )
        assert result.status == 200, result.json
        records.extend((made, item["versionAfter"]) for item in result.json["data"]["items"])
    assert sorted(heard) == sorted(records)  # nothing missed
    ids = [e.id for e in seen]
    assert len(ids) == len(set(ids))


async def test_resume_from_an_unknown_or_too_old_id_is_a_reset(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk"], live_poll_s=0.05, live_resume_max=2)
    agent = host.client(actor="ann", roles=["agent"])
    async with opened(host, changes_path(QUEUE), **headers()) as stream:
        await create(agent)
        (first,) = await stream.changes(1)
        for _ in range(3):
            await create(agent)
        # Heard: final in the log (on a PostgreSQL cluster, an open transaction of any of its
        # databases holds the horizon back, docs/history.md), so a resume reads them.
        await stream.changes(3)
    for last, reason in (
        (first.id, "too-old"),
        ("999999999.999999999", "unknown"),
        ("x", "invalid"),
    ):
        async with opened(
            host, changes_path(QUEUE), **headers(**{"Last-Event-ID": last or ""})
        ) as stream:
            (reset,) = await stream.next_events()
            assert (reset.event, reset.data) == ("reset", {"reason": reason})
            assert reset.id is not None
            await create(agent)  # after a reset the stream goes on from its id
            (change,) = await stream.changes(1)
            assert change.id is not None


async def test_stream_cap_and_heartbeats(tessera: TesseraHarness) -> None:
    host = await tessera.start(
        plugins=["helpdesk"], live_poll_s=0.05, live_max_streams=1, live_heartbeat_s=0.1
    )
    async with opened(host, changes_path(QUEUE), **headers()) as stream:
        code, body = await refused(host, changes_path(QUEUE), **headers())
        assert code == 503
        assert body["error"]["kind"] == "ServiceUnavailable"
        assert "Too many live streams" in body["error"]["message"]
        events = await stream.quiet(0.35)
        assert events and all(e.is_heartbeat for e in events)
    for _ in range(50):  # the disconnected stream is given back
        await asyncio.sleep(0.02)
        code, _ = await refused(host, changes_path("helpdesk.nope"), **headers())
        async with opened(host, changes_path(QUEUE), **headers()):
            return
    raise AssertionError("the stream was not given back")


async def test_cors_allows_last_event_id_to_a_request_that_names_it(host: Host) -> None:
    client = host.app.test_client()
    plain = await client.options(changes_path(QUEUE))
    preflight = await client.options(
        changes_path(QUEUE),
        headers={"Access-Control-Request-Headers": "last-event-id, x-tenant-id"},
    )
    allowed = "Content-Type, X-Tenant-ID, X-Actor-Id, X-Actor-Roles"
    assert plain.headers["Access-Control-Allow-Headers"] == allowed
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Headers"] == f"{allowed}, Last-Event-ID"
    head = headers(**{"Last-Event-ID": "x"})
    async with opened(host, changes_path(QUEUE), **head) as stream:
        sent = stream.connection.headers
        assert sent is not None
        assert sent["Access-Control-Allow-Headers"] == f"{allowed}, Last-Event-ID"
        assert sent["Cache-Control"] == "no-store"


async def test_a_heartbeat_moves_the_id_past_records_not_for_the_reader(
    tessera: TesseraHarness,
) -> None:
    host = await tessera.start(plugins=["helpdesk"], live_poll_s=0.05, live_heartbeat_s=0.2)
    bob = headers(actor="bob", roles="requester")
    async with opened(host, changes_path(MINE), **bob) as stream:
        await create(host.client(actor="alice", roles=["requester"]))
        events: list[Event] = []
        moved: list[str] = []
        for _ in range(75):  # on a busy PostgreSQL cluster the record may take a while to be
            events += await stream.quiet(0.2)  # final (docs/history.md, "Order")
            moved = [e.id for e in events if e.is_heartbeat and e.id is not None]
            if moved:
                break
        assert [e for e in events if e.event == "change"] == []
        assert moved, events
    async with opened(host, changes_path(MINE), **bob, **{"Last-Event-ID": moved[-1]}) as stream:
        events = await stream.quiet(0.5)  # resumed past alice's ticket: no reset, no change
        assert events and all(e.is_heartbeat for e in events)
