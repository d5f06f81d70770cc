"""Availability says what a transition would schedule (issue 41, docs/timers.md "Seeing and
operating timers"): at ViewSchema 1.5.0 the batch question's enabled verdict of a transition
on a row of an entity with timers carries ``timers``, what running it now would arm and
cancel, and the POST then does what it said. Refusals, updates, entities without timers and
older versions answer as before, at the same cost."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from tessera_helpdesk.timers import autoclose_after

from host.fieldtypes import parse_datetime
from plugin_api.testing import Client, Result, TenantHost
from tests.runtime.test_runtime_statements import Recorder

from .test_timers_sla import TICKET, create, instant

INVOICE = "billing.invoice"
ROLES = ("agent", "requester")  # a requester may reopen a ticket of their own
V15 = "1.5.0"
NAMES = ("start", "resolve", "close", "reopen", "cancel", "edit", "escalate")
ACTIONS = [f"{TICKET}.{name}" for name in NAMES]
OVERDUE, AUTOCLOSE = f"{TICKET}.overdue", f"{TICKET}.autoclose"
TOLERANCE = timedelta(seconds=30)
Item = dict[str, Any]


async def question(
    client: Client,
    subjects: Sequence[str],
    version: str | None = V15,
    actions: Sequence[str] = ACTIONS,
) -> Result:
    """The batch question about ``subjects`` and ``actions`` (at ``version``)."""
    return await client.request(
        "POST",
        "/availability",
        body=json.dumps({"subjects": list(subjects), "actions": list(actions)}).encode(),
        headers={"Content-Type": "application/json"},
        query={"acceptSchemaVersions": version} if version else None,
    )


def table(answer: Result) -> Any:
    """The table a :func:`question` answers."""
    assert answer.status == 200, answer.json
    return answer.json["availability"]


def moment(text: str) -> datetime:
    """An aware UTC datetime of RFC 3339 text (any number of fraction digits: Python 3.10's
    ``fromisoformat`` takes only 3 or 6)."""
    parsed = parse_datetime(text)
    assert parsed is not None, text
    return parsed.replace(tzinfo=timezone.utc)


async def pending(client: Client, ticket: str) -> list[Item]:
    """The ticket's pending timers, as its 1.5.0 detail shows them (earliest first)."""
    shown = await client.projection(
        f"{TICKET}.detail", subject=ticket, query={"acceptSchemaVersions": V15}
    )
    assert shown.status == 200, shown.json
    return [
        {k: timer[k] for k in ("timer", "action", "dueAt")}
        for timer in shown.json["data"]["timers"]
    ]


async def started(client: Client, **inputs: Any) -> str:
    """A new ticket of ``client``'s, in progress."""
    ticket = await create(client, **inputs)
    assert (await client.action(f"{TICKET}.start", subject=ticket)).status == 200
    return ticket


async def run_as_promised(client: Client, ticket: str, action: str) -> Item:
    """Ask about ``action`` on ``ticket``, run it, and check that the row's pending timers
    then are those before less what the verdict said it would cancel, plus what it said it
    would arm (each due within :data:`TOLERANCE` of what it said). Answers the verdict."""
    cell: Item = table(await question(client, [ticket], actions=[action]))[ticket][action]
    assert cell["enabled"] is True, cell
    promise = cell["timers"]
    before = await pending(client, ticket)
    done = await client.action(action, subject=ticket)
    assert done.status == 200, done.json
    after = await pending(client, ticket)
    assert all(item in before for item in promise["cancel"]), (promise, before)
    kept = [item for item in before if item not in promise["cancel"]]
    expected = sorted([*kept, *promise["arm"]], key=lambda item: moment(item["dueAt"]))
    assert [i["timer"] for i in after] == [i["timer"] for i in expected], (promise, after)
    for seen, said in zip(after, expected, strict=True):
        assert seen["action"] == said["action"]
        assert abs(moment(seen["dueAt"]) - moment(said["dueAt"])) < TOLERANCE, (seen, said)
    return cell


async def test_an_enabled_transition_says_what_it_would_arm_and_cancel(
    samples: TenantHost,
) -> None:
    alice = samples.client(actor="alice", roles=ROLES)
    due = instant(3600)
    ticket = await started(alice, due_at=due)
    asked = datetime.now(timezone.utc)
    cells = table(await question(alice, [ticket]))[ticket]
    resolve = cells[f"{TICKET}.resolve"]
    assert resolve["enabled"] is True and set(resolve) == {"enabled", "certain", "timers"}
    (armed,) = resolve["timers"]["arm"]
    assert (armed["timer"], armed["action"]) == (AUTOCLOSE, f"{TICKET}.close")
    assert abs(moment(armed["dueAt"]) - (asked + autoclose_after())) < TOLERANCE
    # resolved is not among the overdue timer's states: resolving cancels it.
    (overdue,) = await pending(alice, ticket)
    assert overdue["timer"] == OVERDUE and moment(overdue["dueAt"]) == moment(due)
    assert resolve["timers"]["cancel"] == [overdue]
    # cancel (in_progress -> closed) arms nothing and cancels the overdue timer too.
    assert cells[f"{TICKET}.cancel"]["timers"] == {"arm": [], "cancel": [overdue]}
    # Refusals carry no timers; nor do updates (their inputs are unknown here).
    for name in ("start", "close", "reopen"):
        assert set(cells[f"{TICKET}.{name}"]) == {"enabled", "kind", "message", "certain"}
    for name in ("edit", "escalate"):
        assert set(cells[f"{TICKET}.{name}"]) == {"enabled", "certain"}


async def test_older_versions_and_entities_without_timers_answer_as_before(
    samples: TenantHost,
) -> None:
    alice = samples.client(actor="alice", roles=ROLES)
    ticket = await started(alice, due_at=instant(3600))
    for version in (None, "1.4.0", "1.2.0"):
        cells = table(await question(alice, [ticket], version))[ticket]
        assert cells[f"{TICKET}.resolve"] == {"enabled": True}, version
        assert all("timers" not in cell and "certain" not in cell for cell in cells.values())
    clerk = samples.client(actor="carl", roles=["clerk", "accountant"])
    made = await clerk.action(
        f"{INVOICE}.create", inputs={"customer": "c", "amount": {"amount": "1", "currency": "USD"}}
    )
    invoice = made.outputs["id"]
    actions = [f"{INVOICE}.{name}" for name in ("issue", "pay", "void")]
    cells = table(await question(clerk, [invoice], actions=actions))[invoice]
    assert cells[f"{INVOICE}.issue"]["enabled"] is True
    assert all("timers" not in cell for cell in cells.values())


async def test_a_refused_verdict_says_nothing_of_timers(samples: TenantHost) -> None:
    alice = samples.client(actor="alice", roles=ROLES)
    rita = samples.client(actor="rita", roles=["requester"])
    ticket = await create(rita, due_at=instant(3600))  # hers: close and reopen are hers to try
    closed = await create(alice)
    assert (await alice.action(f"{TICKET}.cancel", subject=closed)).status == 200
    rows = table(await question(rita, [ticket, closed, "nope"]))
    kinds = {cell.get("kind") for cells in rows.values() for cell in cells.values()}
    assert kinds == {"PolicyDenied", "WorkflowStateMismatch", "NotFound"}
    assert all("timers" not in cell for cells in rows.values() for cell in cells.values())
    cells = table(await question(alice, [closed]))[closed]
    assert not any(cell["enabled"] for name, cell in cells.items() if name != f"{TICKET}.edit")
    assert all("timers" not in cell for cell in cells.values())


async def test_the_post_does_what_availability_said(samples: TenantHost) -> None:
    alice = samples.client(actor="alice", roles=ROLES)
    ticket = await started(alice, due_at=instant(3600))
    resolved = await run_as_promised(alice, ticket, f"{TICKET}.resolve")
    assert [len(resolved["timers"]["arm"]), len(resolved["timers"]["cancel"])] == [1, 1]
    # Reopening cancels autoclose and enters open, where due_at (still ahead) arms overdue.
    reopened = await run_as_promised(alice, ticket, f"{TICKET}.reopen")
    assert [i["timer"] for i in reopened["timers"]["arm"]] == [OVERDUE]
    assert [i["timer"] for i in reopened["timers"]["cancel"]] == [AUTOCLOSE]
    # A due_at already past arms nothing; a ticket without timers cancels nothing.
    late = await started(alice, due_at=instant(-60))
    for action in ("resolve", "reopen", "start", "resolve", "close"):
        await run_as_promised(alice, late, f"{TICKET}.{action}")
    bare = await started(alice)
    assert (await run_as_promised(alice, bare, f"{TICKET}.cancel"))["timers"] == {
        "arm": [],
        "cancel": [],
    }


async def test_timers_are_read_once_per_row_and_only_when_some_verdict_cancels(
    samples: TenantHost, caplog: pytest.LogCaptureFixture
) -> None:
    record = Recorder(caplog)
    alice = samples.client(actor="alice", roles=ROLES)
    held = [await started(alice, due_at=instant(3600)) for _ in range(3)]
    bare = [await create(alice) for _ in range(3)]  # open, no due_at: nothing to cancel

    async def statements(subjects: list[str], version: str | None) -> int:
        # The question's statements all name the tenant; the shared host's background work
        # for other tests (its event dispatcher's poll, their timers) does not. A failure's
        # message shows every statement the call's context sent (record.marked).
        result, queries = await record(lambda: question(alice, subjects, version), samples.tenant)
        assert result.status == 200, result.json
        return len(queries)

    plain = await statements(bare, None)
    assert plain >= 1, record.marked
    assert await statements(bare, V15) == plain, record.marked
    assert await statements(held, "1.4.0") == plain, record.marked
    assert await statements(held, V15) == plain + len(held), record.marked
