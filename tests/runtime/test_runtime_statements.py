"""Per-action statement counts, read from the ``databases`` and ``tessera.sql`` loggers (one
"Query: ..." record per statement sent). They are small constants: independent of the number
of fields written and of the number of rows in the table."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar

import pytest

from plugin_api.testing import Host, Result, TesseraHarness

from ._support import INVOICE, TICKET, is_postgres

# SQLite: BEGIN IMMEDIATE and COMMIT go through the same connection and are counted;
# PostgreSQL: asyncpg's transaction object issues them without a "Query:" record.
FRAME = 0 if is_postgres() else 2
LOGGERS = ("databases", "tessera.sql")
EXPECTED = {
    "create": FRAME + 2,  # INSERT row, INSERT audit
    "transition": FRAME + 3,  # SELECT subject, UPDATE ... RETURNING, INSERT audit
    "update": FRAME + 3,
    "issue": FRAME + 4,  # + the sequence upsert of the custom effect
    # + the outbox: one INSERT of the event's deliveries (helpdesk.notify_requester wants
    # it); on PostgreSQL it rides in the audit record's statement (one round trip); + the
    # arming of the helpdesk's autoclose timer (issue 41: one INSERT)
    "resolve": FRAME + (4 if is_postgres() else 5),
    # + the arming of a timer (issue 41): a create whose due_at lies ahead arms the
    # helpdesk's overdue timer, one INSERT (docs/timers.md)
    "armed create": FRAME + 3,
    # A list that fits in one chunk of ``list_chunk_rows`` (1000) rows is one SELECT (it is
    # its own snapshot); a longer one is read in keyset chunks inside a read transaction.
    "list projection": 1,
    "detail projection": 1,
}

MONEY = {"amount": "12.50", "currency": "USD"}
ALL_TICKET_INPUTS = {
    "title": "All fields",
    "description": "d",
    "priority": "high",
    "estimate_hours": 3,
    "due_at": "2020-01-02T03:04:05Z",  # past: arms no timer (the "armed create" does)
    "billable": True,
    "budget": {"amount": "1.00", "currency": "EUR"},
}


_THIS_CALL: ContextVar[object | None] = ContextVar("statements_of_this_call", default=None)
"""The mark of the call being measured, a new one per call: a background task a shared host
started during an earlier measured call (its timer loop, its dispatcher) keeps that call's
mark in its context, and its statements are not this call's."""


class _StampThisCall(logging.Filter):
    """Marks the records of the call being measured: they are logged in its context (and in
    the tasks it starts), not in another host's background tasks (the session's shared hosts
    run on the same event loop)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.this_call = _THIS_CALL.get()
        task = asyncio.current_task()
        record.logged_by = getattr(task.get_coro(), "__qualname__", "?") if task else "-"
        return True


class Recorder:
    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self._caplog = caplog
        self.marked = ""
        """Every statement sent in the last call's context (counted or not), short, with the
        coroutine of the task that sent it: one line for a failure's message."""

    async def __call__(
        self, call: Callable[[], Awaitable[Result]], about: str | None = None
    ) -> tuple[Result, list[str]]:
        """``call``'s result and the statements sent in its context; with ``about`` (a
        tenant), only those whose text names it (a statement of the shared host's
        background work in another tenant, or in none, is not this call's)."""
        self._caplog.clear()
        stamp = _StampThisCall()
        loggers = [logging.getLogger(name) for name in LOGGERS]
        for logger in loggers:
            logger.addFilter(stamp)
        mark = object()
        token = _THIS_CALL.set(mark)
        try:
            with (
                self._caplog.at_level(logging.DEBUG, logger="databases"),
                self._caplog.at_level(logging.DEBUG, logger="tessera.sql"),
            ):
                result = await call()
        finally:
            _THIS_CALL.reset(token)
            for logger in loggers:
                logger.removeFilter(stamp)
        marked = [
            record
            for record in self._caplog.records
            if record.name in LOGGERS
            and str(record.msg).startswith("Query:")
            and getattr(record, "this_call", None) is mark
        ]
        self.marked = "; ".join(
            f"{r.getMessage()[7:35]}… by {getattr(r, 'logged_by', '?')}" for r in marked
        )
        queries = [r.getMessage() for r in marked]
        return result, [q for q in queries if about is None or about in q]


async def measure(host: Host, record: Recorder) -> dict[str, list[int]]:
    agent = host.client(actor="alice", roles=["agent"])
    clerk = host.client(actor="carl", roles=["clerk"])
    counts: dict[str, list[int]] = {key: [] for key in EXPECTED}

    async def count(key: str, call: Callable[[], Awaitable[Result]]) -> Result:
        result, queries = await record(call)
        assert result.status == 200, result.json
        counts[key].append(len(queries))
        if not is_postgres() and key in ("create", "transition", "update", "issue"):
            assert queries[0].startswith("Query: BEGIN IMMEDIATE"), queries
            assert queries[-1].startswith("Query: COMMIT"), queries
        return result

    # Few and many fields written, on two entities of different widths.
    small = await count(
        "create", lambda: agent.action(TICKET + ".create", inputs={"title": "Small"})
    )
    big = await count("create", lambda: agent.action(TICKET + ".create", inputs=ALL_TICKET_INPUTS))
    invoice = await count(
        "create",
        lambda: clerk.action(
            INVOICE + ".create", inputs={"customer": "c", "amount": MONEY, "lines": 2}
        ),
    )
    small_id, big_id = small.outputs["id"], big.outputs["id"]
    ahead = {"title": "Due", "due_at": "2031-01-02T03:04:05Z"}
    await count("armed create", lambda: agent.action(TICKET + ".create", inputs=ahead))
    await count("update", lambda: agent.action(TICKET + ".edit", subject=small_id, inputs={}))
    await count(
        "update",
        lambda: agent.action(TICKET + ".edit", subject=small_id, inputs={"title": "One"}),
    )
    await count(
        "update",
        lambda: agent.action(TICKET + ".edit", subject=big_id, inputs=ALL_TICKET_INPUTS),
    )
    await count("update", lambda: agent.action(TICKET + ".escalate", subject=big_id))
    await count("transition", lambda: agent.action(TICKET + ".start", subject=small_id))
    await count(
        "resolve",
        lambda: agent.action(TICKET + ".resolve", subject=small_id, inputs={"resolution": "r"}),
    )
    await count("issue", lambda: clerk.action(INVOICE + ".issue", subject=invoice.outputs["id"]))
    await count("transition", lambda: clerk.action(INVOICE + ".pay", subject=invoice.outputs["id"]))
    await count("list projection", lambda: agent.projection(TICKET + ".queue"))
    await count("detail projection", lambda: agent.projection(TICKET + ".detail", subject=big_id))
    return counts


async def test_statement_counts_are_small_constants(
    tessera: TesseraHarness, caplog: pytest.LogCaptureFixture
) -> None:
    # No event dispatcher and no timer loop here: their polls (and the timer loop's purge of
    # settled timers at start, which a create can join in one group commit) would be counted
    # with the action's statements.
    host = await tessera.start(
        plugins=["helpdesk", "billing"], events_dispatch=False, timers_poll=0.0
    )
    record = Recorder(caplog)
    few_rows = await measure(host, record)

    # Grow the tables to well over 100 rows, then measure again.
    agent = host.client(roles=["agent"])
    clerk = host.client(roles=["clerk"])
    for n in range(100):
        await agent.action(TICKET + ".create", inputs={"title": f"filler {n}"})
        await clerk.action(INVOICE + ".create", inputs={"customer": f"c{n}", "amount": MONEY})
    many_rows = await measure(host, record)

    print("statements per request:", {key: values[0] for key, values in few_rows.items()})
    for key, expected in EXPECTED.items():
        assert set(few_rows[key]) == {expected}, (key, few_rows[key])
        assert set(many_rows[key]) == {expected}, (key, many_rows[key])
