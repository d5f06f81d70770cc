"""Lists like a person uses them: counts per value beside the list (each a link that filters
by it, kept in the URL), and the export of what the list shows."""

from __future__ import annotations

import html
import re

from plugin_api.testing import TenantHost

from .conftest import CONSOLE, Console, identity, new_ticket

QUEUE = "helpdesk.ticket.queue"


async def test_facets_filter_and_the_export_is_what_is_shown(shared_console: TenantHost) -> None:
    for title, priority in (("Alpha", "high"), ("Beta", "high"), ("Gamma", "low")):
        await new_ticket(shared_console, title, priority=priority)
    console = Console(shared_console, identity(shared_console))
    page = await console.get(f"/p/{QUEUE}")
    facets = page.text[page.text.index('<aside class="facets"') :]
    assert re.search(
        r'>High</a> <span class="n">2</span>|>high</a> <span class="n">2</span>', facets
    )
    link = re.search(r'<a href="([^"]+)">high</a>', facets)
    assert link, facets
    url = html.unescape(link.group(1))
    assert url.startswith(f"{CONSOLE}/p/{QUEUE}?") and "f.priority.v=high" in url
    filtered = await console.get(url.removeprefix(CONSOLE))
    assert "2 rows" in filtered.text and "Gamma" not in filtered.text
    assert '<strong aria-current="true">high</strong>' in filtered.text

    export = re.search(r'<a href="([^"]+)" download>CSV</a>', filtered.text)
    assert export, filtered.text
    response = await console.client.get(html.unescape(export.group(1)), headers=console.headers)
    assert response.status_code == 200
    assert "attachment" in response.headers["Content-Disposition"]
    body = await response.get_data(as_text=True)
    assert "Alpha" in body and "Beta" in body and "Gamma" not in body
