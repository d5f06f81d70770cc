"""A subscriber refused by the closed taxonomy (a 4xx kind: here its write breaks a listed
field's limit) fails its attempts with one line each and no traceback, and goes dead after
the last; an unexpected error keeps its traceback (docs/events.md, "The delivery promise")."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from plugin_api import EventContext, Subscriber, hookimpl
from plugin_api.testing import TesseraHarness

from ._support import FAST

REFUSED, BROKEN = "lim.refused", "lim.broken"


async def refused(ctx: EventContext) -> None:
    """Copies the ticket into a notification whose recipient is too long for its list
    index (2,000 bytes): the data API refuses it with 400 ``BadRequest``."""
    await ctx.data.create(
        "helpdesk.notification",
        {
            "recipient": "r" * 3000,
            "ticket": ctx.event.subject_id,
            "event_id": ctx.event.id,
            "message": "m",
        },
    )


async def broken(ctx: EventContext) -> None:
    raise RuntimeError("a bug in the subscriber")


class Limits:
    @hookimpl
    def tessera_subscribers(self) -> Sequence[Subscriber]:
        on_create = ("helpdesk.ticket.create",)
        return (
            Subscriber(name=REFUSED, handler=refused, actions=on_create, transactional=True),
            Subscriber(name=BROKEN, handler=broken, actions=on_create),
        )


LIMITS = Limits()


async def test_a_refusal_is_one_line_a_bug_a_traceback(
    tessera: TesseraHarness, caplog: pytest.LogCaptureFixture
) -> None:
    # A host of its own: its dispatcher polls every 20 ms, which a host shared until the
    # session ends would go on doing beside every later test.
    host = await tessera.start(plugins=["helpdesk"], extra=[("lim", LIMITS)], **FAST)
    client = host.client(tenant="t1", actor="rita", roles=["requester"])
    created = await client.action("helpdesk.ticket.create", inputs={"title": "t"})
    assert created.status == 200, created.json
    event = created.outputs["id"]  # the subject; the event names it
    assert await host.deliveries_settled() == {REFUSED: 1, BROKEN: 1}

    def failures(subscriber: str) -> list[logging.LogRecord]:
        return [
            r
            for r in caplog.records
            if r.name == "tessera.events" and f"for {subscriber}: attempt" in r.getMessage()
        ]

    attempts = FAST["events_max_attempts"]
    refusals = failures(REFUSED)
    assert len(refusals) == attempts, [r.getMessage() for r in refusals]
    assert not [r for r in refusals if r.exc_info]
    assert "BadRequest: Field 'recipient' is 3000 bytes long" in refusals[0].getMessage()
    assert refusals[-1].levelno == logging.ERROR and "(dead)" in refusals[-1].getMessage()
    bugs = failures(BROKEN)
    assert len(bugs) == attempts and all(r.exc_info for r in bugs)
    # The refused write left nothing: the transactional subscriber's unit was rolled back.
    inbox = await host.client(tenant="t1", actor="rita", roles=["agent"]).projection(
        "helpdesk.notification.inbox", query={"filter.ticket": event}
    )
    assert inbox.items == []
