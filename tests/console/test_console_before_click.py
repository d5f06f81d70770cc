"""Before the click: a one-click action first shows its dry run (the fields that would change,
the event it would send), nothing kept; the confirmation runs it for real; a refusal the dry
run finds is shown instead of the confirmation; a button availability refuses is disabled with
its reason."""

from __future__ import annotations

import html
import re

from plugin_api.testing import TenantHost

from .conftest import CONSOLE, Console, identity, new_ticket

DETAIL = "helpdesk.ticket.detail"


async def test_a_click_shows_the_dry_run_then_confirms(shared_console: TenantHost) -> None:
    ticket = await new_ticket(shared_console, "Preview me")
    console = Console(shared_console, identity(shared_console))
    detail = await console.get(f"/p/{DETAIL}/{ticket}")
    preview = f"/confirm/{DETAIL}/helpdesk.ticket.start"
    page = await console.submit(detail, preview, {})
    assert page.status == 200, page.text
    assert "<h1>Start: Preview me?</h1>" in page.text
    assert '<th scope="row">State</th><td>open</td><td>in_progress</td>' in page.text
    assert '<th scope="row">Assignee</th><td>—</td><td>alice</td>' in page.text
    assert "Event it would send: <code>helpdesk.ticket.start</code>" in page.text
    row = (await shared_console.client().projection(DETAIL, subject=ticket)).json["data"]
    assert row["item"]["state"] == "open"  # the preview kept nothing
    done = await console.submit(page, f"/run/{DETAIL}/helpdesk.ticket.start", {})
    assert done.status == 303, done.text
    row = (await shared_console.client().projection(DETAIL, subject=ticket)).json["data"]
    assert row["item"]["state"] == "in_progress"


async def test_a_refusal_found_by_the_dry_run_is_shown_instead(
    shared_console: TenantHost,
) -> None:
    """The page was loaded while escalating was allowed; the ticket was closed since: the
    confirmation's dry run finds the refusal and shows it instead of a confirm button."""
    ticket = await new_ticket(shared_console, "Closed meanwhile")
    console = Console(shared_console, identity(shared_console))
    detail = await console.get(f"/p/{DETAIL}/{ticket}")
    agent = shared_console.client(actor="alice", roles=["agent"])
    for step in ("start", "resolve", "close"):
        moved = await agent.action(f"helpdesk.ticket.{step}", subject=ticket)
        assert moved.status == 200, moved.json
    page = await console.submit(detail, f"/confirm/{DETAIL}/helpdesk.ticket.escalate", {})
    assert page.status == 200, page.text
    assert "WorkflowStateMismatch (409)" in page.text and 'role="alert"' in page.text
    assert "/run/" not in page.text  # no way to confirm what would be refused


async def test_a_declared_refusal_disables_the_button_with_its_message(
    shared_console: TenantHost,
) -> None:
    """helpdesk.ticket.escalate declares that a closed ticket is refused (issue 38): the
    detail page of a closed ticket shows the button disabled, with the declared message."""
    ticket = await new_ticket(shared_console, "Done already")
    agent = shared_console.client(actor="alice", roles=["agent"])
    for step in ("start", "resolve", "close"):
        moved = await agent.action(f"helpdesk.ticket.{step}", subject=ticket)
        assert moved.status == 200, moved.json
    console = Console(shared_console, identity(shared_console))
    detail = await console.get(f"/p/{DETAIL}/{ticket}")
    assert f'action="{CONSOLE}/confirm/{DETAIL}/helpdesk.ticket.escalate"' not in detail.text
    reason = re.search(rf'id="why-{ticket}-helpdesk-ticket-escalate">([^<]+)<', detail.text)
    assert reason, detail.text
    assert "A closed ticket cannot be escalated" in html.unescape(reason.group(1))


async def test_a_button_availability_refuses_is_disabled_with_its_reason(
    shared_console: TenantHost,
) -> None:
    ticket = await new_ticket(shared_console, "Not yours to start")
    requester = Console(shared_console, identity(shared_console, "bob", "requester"))
    detail = await requester.get(f"/p/{DETAIL}/{ticket}")
    button = re.search(rf'<button type="button" disabled aria-label="Start {ticket}"', detail.text)
    assert button, detail.text
    reason = re.search(rf'id="why-{ticket}-helpdesk-ticket-start">([^<]+)<', detail.text)
    assert reason and "agent" in reason.group(1)
    assert f'action="{CONSOLE}/confirm/{DETAIL}/helpdesk.ticket.start"' not in detail.text
