"""Helpers of the end-to-end suite: identities, and subjects driven into a given state.

Everything goes through the HTTP interface of a host serving the two sample plugins as
installed distributions (the ``host`` fixture of ``tests/conftest.py``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from plugin_api.testing import Client, Host, TenantHost

from .cleanenv import clean_path  # noqa: F401 (the fixture, for the tests of this folder)

TENANT = "acme"
TICKET = "helpdesk.ticket"
INVOICE = "billing.invoice"

TICKET_PATHS: dict[str, tuple[str, ...]] = {
    "open": (),
    "in_progress": ("start",),
    "resolved": ("start", "resolve"),
    "closed": ("start", "resolve", "close"),
}
INVOICE_PATHS: dict[str, tuple[str, ...]] = {
    "draft": (),
    "issued": ("issue",),
    "paid": ("issue", "pay"),
    "void": ("issue", "void"),
}
USD = {"amount": "99.50", "currency": "USD"}


def tenant_of(host: Host) -> str:
    """The tenant the tests act in: the test's own on a shared host, else ``acme``."""
    return host.tenant if isinstance(host, TenantHost) else TENANT


def as_actor(host: Host, actor: str, *roles: str, tenant: str | None = None) -> Client:
    return host.client(tenant=tenant or tenant_of(host), actor=actor, roles=roles)


async def ticket_in(host: Host, state: str, *, requester: str = "rita") -> str:
    """A new ticket requested by ``requester``, moved to ``state`` by an agent."""
    created = await as_actor(host, requester, "requester").action(
        f"{TICKET}.create", inputs={"title": f"Ticket to be {state}"}
    )
    ticket = str(created.outputs["id"])
    agent = as_actor(host, "alice", "agent")
    for step in TICKET_PATHS[state]:
        assert (await agent.action(f"{TICKET}.{step}", subject=ticket)).status == 200
    return ticket


async def invoice_in(host: Host, status: str, *, tenant: str | None = None) -> str:
    """A new invoice moved to ``status`` by a clerk and an accountant."""
    staff = as_actor(host, "carl", "clerk", "accountant", tenant=tenant)
    created = await staff.action(
        f"{INVOICE}.create", inputs={"customer": "ACME Corp", "amount": USD}
    )
    invoice = str(created.outputs["id"])
    for step in INVOICE_PATHS[status]:
        assert (await staff.action(f"{INVOICE}.{step}", subject=invoice)).status == 200
    return invoice


async def read(host: Host, projection: str, subject: str) -> dict[str, Any]:
    """The row of ``subject`` as rendered by a detail projection (read as an accountant:
    the invoices' read floor)."""
    item = (
        await as_actor(host, "viewer", "accountant").projection(projection, subject=subject)
    ).item
    assert item is not None
    return item


def assert_error(result: Any, status: int, kind: str) -> None:
    assert (result.status, result.error_kind) == (status, kind), result.json


def assert_now(value: str, started: datetime) -> None:
    """``value`` is an RFC 3339 UTC timestamp taken between ``started`` and now."""
    assert value.endswith("Z"), value
    # Pad the fraction: Python 3.10's fromisoformat takes only 3 or 6 digits.
    seconds, _, fraction = value[:-1].partition(".")
    moment = datetime.fromisoformat(f"{seconds}.{fraction.ljust(6, '0')}+00:00")
    slack = timedelta(seconds=1)
    assert started - slack <= moment <= datetime.now(timezone.utc) + slack, value
