"""The row's story on its detail page: who did what when and what changed, newest first,
each version linked to the row as of that version (docs/history.md)."""

from __future__ import annotations

import re

from plugin_api.testing import TenantHost

from .conftest import CONSOLE, Console, identity, new_ticket

DETAIL = "helpdesk.ticket.detail"


async def test_a_detail_page_tells_the_rows_history_and_shows_it_as_of_a_version(
    shared_console: TenantHost,
) -> None:
    ticket = await new_ticket(shared_console, "Old title")
    bob = shared_console.client(actor="bob", roles=["agent"])
    due = "2099-01-02T03:04:05Z"  # arms the helpdesk's overdue timer (docs/timers.md)
    edit = {"title": "New title", "due_at": due}
    await bob.action("helpdesk.ticket.edit", subject=ticket, inputs=edit)
    await bob.action("helpdesk.ticket.start", subject=ticket)
    console = Console(shared_console, identity(shared_console))
    page = await console.get(f"/p/{DETAIL}/{ticket}")
    assert page.status == 200, page.text
    # What is still to come: the pending timer, in words, not yet overdue.
    timers = page.text[page.text.index('<h2 id="timers-title">') :].partition("</section>")[0]
    assert f'<strong>Escalate to urgent</strong>, due <time datetime="{due}">' in timers
    assert "helpdesk.ticket" not in timers and "badge-overdue" not in timers
    story = page.text[page.text.index('<h2 id="history-title">') :]
    entries = re.findall(
        r"<li[^>]*>\s*<p class=\"what\"><strong>([^<]+)</strong> by <strong>(\w+)", story
    )
    assert entries == [
        ("Start", "bob"),
        ("Edit", "bob"),
        ("Create", "alice"),
    ]  # humanised: not here
    assert '<th scope="row">Title</th><td>Old title</td><td>New title</td>' in story
    assert '<th scope="row">State</th><td>open</td><td>in_progress</td>' in story
    versions = re.findall(rf'href="{CONSOLE}/p/{DETAIL}/{ticket}\?asOf=([^"]+)"', story)
    assert len(versions) == 3
    past = await console.get(f"/p/{DETAIL}/{ticket}", {"asOf": versions[2]})
    assert past.status == 200, past.text
    assert "<h1>Old title</h1>" in past.text and "As of version" in past.text
    assert 'id="live"' not in past.text and "/run/" not in past.text  # no acting on the past
    assert "Pending timers" not in past.text
    assert 'aria-current="true"' in past.text
