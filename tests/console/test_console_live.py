"""Live refresh and the row count in the console (docs/console.md): the list and detail
pages load static/live.js and carry its status region, the console's changes route is the
API's stream with the console's identity, and the list says how many rows match."""

from __future__ import annotations

import json

from plugin_api.testing import Host

from ..live.conftest import open_stream
from .conftest import CONSOLE, Console

AGENT = {"X-Tenant-ID": "t1", "X-Actor-Id": "alice", "X-Actor-Roles": "agent,requester"}
VIEWER = {"X-Tenant-ID": "t1", "X-Actor-Id": "x", "X-Actor-Roles": "viewer"}
QUEUE = "helpdesk.ticket.queue"
DETAIL = "helpdesk.ticket.detail"
CREATE = "helpdesk.ticket.create"
POLICY = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
STREAM = f"{CONSOLE}/changes?projection={QUEUE}"
SCRIPT = f'<script src="{CONSOLE}/static/live.js" defer></script>'


async def _ticket(host: Host, title: str) -> str:
    result = await host.client(tenant="t1", actor="alice", roles=["agent"]).action(
        f"{CREATE}", inputs={"title": title, "priority": "normal"}
    )
    assert result.status == 200, result.json
    ticket: str = result.outputs["id"]
    return ticket


async def test_list_and_detail_pages_load_the_script_and_its_status_region(
    console_host: Host,
) -> None:
    ticket = await _ticket(console_host, "Printer")
    console = Console(console_host, AGENT)
    for path, stream, subject, message in [
        # A list's stream tracks the rows it shows (docs/live.md, "Rows leaving a list").
        (f"/p/{QUEUE}", f"{QUEUE}&amp;shown={ticket}", "", "This list changed"),
        (f"/p/{DETAIL}/{ticket}", DETAIL, ticket, "This record was changed by someone else"),
    ]:
        page = await console.get(path)
        assert page.status == 200, page.text
        assert SCRIPT in page.text
        region = (
            f'<div id="live" class="live" role="status" aria-live="polite" '
            f'data-stream="{CONSOLE}/changes?projection={stream}" '
            f'data-subject="{subject}" data-message="{message}"></div>'
        )
        assert region in page.text
    home = await console.get("/")
    assert "live.js" not in home.text and 'id="live"' not in home.text


async def test_pages_allow_only_their_own_scripts_and_connections(console_host: Host) -> None:
    client = console_host.app.test_client()
    for path in ("/", f"/p/{QUEUE}"):
        page = await client.get(CONSOLE + path, headers=AGENT)
        assert page.headers.getlist("Content-Security-Policy") == [POLICY]
    script = await client.get(f"{CONSOLE}/static/live.js")
    assert script.status_code == 200
    assert "EventSource" in await script.get_data(as_text=True)


async def test_the_console_stream_hears_a_change_with_the_consoles_identity(
    console_host: Host,
) -> None:
    client = console_host.app.test_client()
    async with open_stream(client, STREAM, AGENT) as stream:
        ticket = await _ticket(console_host, "Heard")
        (change,) = await stream.changes(1)
        assert change.data["id"] == ticket
        assert change.data["action"] == CREATE
        assert QUEUE in change.data["projections"]


async def test_the_console_stream_follows_act_as(console_host: Host) -> None:
    console = Console(console_host)
    await console.act_as("t1", "alice", "agent")  # the cookie is all the stream gets
    async with open_stream(console.client, STREAM, {}) as stream:
        ticket = await _ticket(console_host, "Acting")
        (change,) = await stream.changes(1)
        assert change.data["id"] == ticket


async def test_the_console_stream_refuses_as_the_api_does(console_host: Host) -> None:
    client = console_host.app.test_client()
    for head, projection, status, kind in [
        ({}, QUEUE, 400, "Missing required header X-Tenant-ID"),
        (AGENT, "helpdesk.nope", 404, "helpdesk.nope"),
        (VIEWER, "helpdesk.ticket.mine", 403, "helpdesk.ticket.mine"),
    ]:
        api = await client.get(f"/api/changes?projection={projection}", headers=head)
        page = await client.get(f"{CONSOLE}/changes?projection={projection}", headers=head)
        assert api.status_code == page.status_code == status
        assert kind in json.loads(await api.get_data())["error"]["message"]
        assert kind in await page.get_data(as_text=True)
    bare = await client.get(f"{CONSOLE}/changes", headers=AGENT)
    assert bare.status_code == 400


async def test_the_list_shows_how_many_rows_match(console_host: Host) -> None:
    console = Console(console_host, AGENT)
    empty = await console.get(f"/p/{QUEUE}")
    assert '<p class="count">0 rows</p>' in empty.text
    await _ticket(console_host, "One")
    one = await console.get(f"/p/{QUEUE}")
    assert '<p class="count">1 row</p>' in one.text
    for title in ("Two", "Three"):
        await _ticket(console_host, title)
    paged = await console.get(f"/p/{QUEUE}", {"pageSize": "1"})
    assert '<p class="count">3 rows</p>' in paged.text
