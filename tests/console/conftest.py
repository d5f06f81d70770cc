"""A console client over the Quart test client: it keeps the console's cookie, reads the
CSRF token and Idempotency-Key of the forms it is shown, and posts them back."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from plugin_api.testing import Host, SharedHarness, TenantHost, TesseraHarness

CONSOLE = "/-/console"
LOOPBACK = "127.0.0.1:8000"


@dataclass
class Page:
    status: int
    text: str
    location: str | None

    def hidden(self, name: str, action: str | None = None) -> str:
        """The value of the first hidden field ``name`` (inside the form posting to
        ``action``, when given)."""
        text = self.text
        if action is not None:
            start = text.index(f'action="{action}"')
            text = text[start:]
        match = re.search(rf'name="{re.escape(name)}" value="([^"]*)"', text)
        assert match, f"no field {name} in the page"
        return html.unescape(match.group(1))


class Console:
    def __init__(self, host: Host, headers: Mapping[str, str] | None = None) -> None:
        self.client: Any = host.app.test_client()
        self.headers = dict(headers or {})

    async def get(self, path: str, query: Mapping[str, str] | None = None) -> Page:
        response = await self.client.get(
            CONSOLE + path, headers=self.headers, query_string=dict(query) if query else None
        )
        return Page(
            response.status_code,
            await response.get_data(as_text=True),
            response.headers.get("Location"),
        )

    async def post(self, path: str, form: Mapping[str, str]) -> Page:
        response = await self.client.post(CONSOLE + path, headers=self.headers, form=dict(form))
        return Page(
            response.status_code,
            await response.get_data(as_text=True),
            response.headers.get("Location"),
        )

    async def act_as(self, tenant: str, actor: str, roles: str) -> Page:
        page = await self.get("/as")
        form = {"_csrf": page.hidden("_csrf"), "tenant": tenant, "actor": actor, "roles": roles}
        return await self.post("/as", form)

    async def submit(self, page: Page, action_path: str, fields: Mapping[str, str]) -> Page:
        """Post the form of ``page`` whose action is ``action_path`` with its hidden fields
        and ``fields`` (``in.<name>`` keys)."""
        target = CONSOLE + action_path
        start = page.text.index(f'action="{target}"')
        end = page.text.index("</form>", start)
        form = {
            name: html.unescape(value)
            for name, value in re.findall(
                r'type="hidden" name="([^"]+)" value="([^"]*)"', page.text[start:end]
            )
        }
        for name, value in re.findall(
            r'<input id="[^"]+" name="(in\.[^"]+)"[^>]*value="([^"]*)"', page.text[start:end]
        ):
            form.setdefault(name, html.unescape(value))
        for name, options in re.findall(
            r'<select id="[^"]+" name="(in\.[^"]+)">(.*?)</select>', page.text[start:end], re.S
        ):
            chosen = re.search(r'<option(?: value="([^"]*)")? selected>([^<]*)<', options)
            if chosen:
                form.setdefault(name, html.unescape(chosen.group(1) or chosen.group(2)))
        form.update(fields)
        return await self.post(action_path, form)


@pytest.fixture
async def console_host(tessera: TesseraHarness) -> Host:
    """Both sample plugins, the console on, served (as far as it knows) on loopback."""
    return await tessera.start(plugins=["helpdesk", "billing"], console="on", serve_bind=LOOPBACK)


@pytest.fixture
async def shared_console(tessera_shared: SharedHarness) -> TenantHost:
    """The sample plugins with the console on (loopback), on the session's shared host, in a
    tenant of the test's own."""
    return await tessera_shared.start(
        plugins=["helpdesk", "billing", "billing_helpdesk"], console="on", serve_bind=LOOPBACK
    )


def identity(
    host: TenantHost, actor: str = "alice", roles: str = "agent,requester"
) -> dict[str, str]:
    """The gateway's identity headers of ``actor`` in the test's tenant."""
    return {"X-Tenant-ID": host.tenant, "X-Actor-Id": actor, "X-Actor-Roles": roles}


async def new_ticket(host: TenantHost, title: str, actor: str = "alice", **inputs: Any) -> str:
    """A ticket created through the API by ``actor`` (an agent) in the test's tenant."""
    client = host.client(actor=actor, roles=["agent", "requester"])
    made = await client.action("helpdesk.ticket.create", inputs={"title": title, **inputs})
    assert made.status == 200, made.json
    return str(made.outputs["id"])
