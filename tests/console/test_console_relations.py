"""The console shows a reference as its target's display text, linking to the target's
detail page (ViewSchema 1.4.0 ``_display``); a reader the target's read floor does not admit
sees the id."""

from __future__ import annotations

from plugin_api.testing import TesseraHarness

from ..http._tracker_plugin import BOARD, PROJECTS, TrackerPlugin
from .conftest import CONSOLE, LOOPBACK, Console

LEAD = {"X-Tenant-ID": "t1", "X-Actor-Id": "lena", "X-Actor-Roles": "lead"}
GUEST = {"X-Tenant-ID": "t1", "X-Actor-Id": "gus"}


async def test_a_reference_cell_shows_the_display_text_and_links_to_the_target(
    tessera: TesseraHarness,
) -> None:
    host = await tessera.start(
        plugins=[],
        extra=[("trk", TrackerPlugin())],
        entry_points=False,
        console="on",
        serve_bind=LOOPBACK,
    )
    lead = host.client(actor="lena", roles=["lead"])
    inputs = {"key": "CORE", "name": "Core", "owner": "olga", "secret": False}
    made = await lead.action("trk.project.create", inputs=inputs)
    project = made.outputs["id"]
    inputs = {"title": "crash", "project": project, "reporter": "ann", "assignee": None}
    issue = (await lead.action("trk.issue.create", inputs=inputs)).outputs["id"]
    link = f'<a href="{CONSOLE}/p/{PROJECTS}/{project}" title="{project}">CORE</a>'
    for path in (f"/p/{BOARD}", f"/p/{BOARD}/{issue}"):
        page = await Console(host, LEAD).get(path)
        assert page.status == 200, page.text
        assert link in page.text
        assert "Project key" in page.text
    # A guest reads no project: the cell is the bare id, never the key.
    page = await Console(host, GUEST).get(f"/p/{BOARD}/{issue}")
    assert page.status == 200, page.text
    assert project in page.text and "CORE" not in page.text
