"""Live changes under scopes through a reference and OR (docs/live.md, "Who is told what";
docs/writing-plugins.md, "Relations"): a reader hears of a row exactly when its scope, read
through the reference with the target's read floor, lets it read the row."""

from __future__ import annotations

from typing import Any

from plugin_api.testing import Client, TesseraHarness

from ..http._tracker_plugin import MINE, OWNED, TrackerPlugin
from .conftest import changes_path, headers, open_stream


async def _made(client: Client, fqn: str, inputs: dict[str, Any]) -> str:
    result = await client.action(fqn, inputs=inputs)
    assert result.status == 200, result.json
    return str(result.outputs["id"])


async def test_scopes_through_a_reference_and_or_decide_who_hears(
    tessera: TesseraHarness,
) -> None:
    host = await tessera.start(
        plugins=[], extra=[("trk", TrackerPlugin())], entry_points=False, live_poll_s=0.05
    )
    lead = host.client(actor="lena", roles=["lead"])
    mine = {"key": "CORE", "name": "Core", "owner": "olga", "secret": False}
    theirs = {"key": "APP", "name": "App", "owner": "piet", "secret": False}
    core = await _made(lead, "trk.project.create", mine)
    app = await _made(lead, "trk.project.create", theirs)
    client = host.app.test_client()
    olga = headers(actor="olga", roles="member")
    guest = headers(actor="olga")  # no role: the project's floor lets her read no project
    bob = headers(actor="bob")
    async with (
        open_stream(client, changes_path(OWNED), olga) as owner_stream,
        open_stream(host.app.test_client(), changes_path(OWNED), guest) as guest_stream,
        open_stream(host.app.test_client(), changes_path(MINE), bob) as bob_stream,
    ):
        issue = {"title": "crash", "reporter": "ann", "assignee": None}
        other = await _made(lead, "trk.issue.create", {**issue, "project": app})
        own = await _made(lead, "trk.issue.create", {**issue, "project": core})
        assigned = await _made(
            lead, "trk.issue.create", {**issue, "project": app, "assignee": "bob"}
        )
        (heard,) = await owner_stream.changes(1)
        assert heard.data["id"] == own
        (heard,) = await bob_stream.changes(1)
        assert heard.data["id"] == assigned
        assert other not in {e.data.get("id") for e in owner_stream.events if e.event == "change"}
        quiet = await guest_stream.quiet(0.4)
        assert [e for e in quiet if e.event == "change"] == []
        assert [e for e in await owner_stream.quiet(0.2) if e.event == "change"] == []
        assert [e for e in await bob_stream.quiet(0.1) if e.event == "change"] == []
