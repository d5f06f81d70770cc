"""Words for people in the console: the declared labels as headings and links, a detail page
titled by its row's display text, the samples' references shown as their target's display
text."""

from __future__ import annotations

from plugin_api.testing import TenantHost

from .conftest import CONSOLE, Console, identity, new_ticket

QUEUE = "helpdesk.ticket.queue"
DETAIL = "helpdesk.ticket.detail"
CHARGES = "billing.charge.list"


async def test_pages_use_labels_and_a_detail_is_titled_by_its_display_text(
    shared_console: TenantHost,
) -> None:
    ticket = await new_ticket(shared_console, "Printer on fire")
    console = Console(shared_console, identity(shared_console))
    listing = await console.get(f"/p/{QUEUE}")
    assert "<h1>Ticket queue <code" in listing.text
    assert "<title>Ticket queue · Tessera console</title>" in listing.text
    assert f'href="{CONSOLE}/new/{QUEUE}/helpdesk.ticket.create' in listing.text
    assert ">New ticket…</a>" in listing.text
    detail = await console.get(f"/p/{DETAIL}/{ticket}")
    assert "<h1>Printer on fire</h1>" in detail.text
    crumb = (
        f'<a href="{CONSOLE}/p/{DETAIL}">Ticket</a> \N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} '
    )
    assert crumb + "Printer on fire" in detail.text


async def test_a_sample_reference_shows_its_target_display_text(
    shared_console: TenantHost,
) -> None:
    ticket = await new_ticket(shared_console, "Billable work", billable=True)
    clerk = shared_console.client(actor="carl", roles=["clerk"])
    inputs = {"ticket": ticket, "hours": 2, "amount": {"amount": "80.00", "currency": "USD"}}
    charged = await clerk.action("billing.charge.create", inputs=inputs)
    assert charged.status == 200, charged.json
    console = Console(shared_console, identity(shared_console, "carl", "clerk,agent"))
    page = await console.get(f"/p/{CHARGES}")
    assert page.status == 200, page.text
    assert f'title="{ticket}">Billable work</a>' in page.text  # not the bare id
