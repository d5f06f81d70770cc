"""A dry run says what its write would schedule (issue 41, docs/timers.md "Dry runs"): at
ViewSchema 1.5.0 its answer lists the timers the write would arm and the pending ones it would
cancel; at older versions the answer is as it was. Nothing is armed or cancelled."""

from __future__ import annotations

import json
from typing import Any

from host.fieldtypes import render_datetime
from host.timers.queries import list_timers
from plugin_api.testing import Client, Result, TenantHost

from .test_timers_sla import AGENT, TICKET, create, instant

NEWEST = {"acceptSchemaVersions": "1.5.0", "dryRun": "true"}


async def dry_run(
    client: Client, action: str, query: dict[str, str], subject: str | None = None, **inputs: Any
) -> Result:
    reference = None
    if subject is not None:
        reference = {"tenantId": client.tenant, "entityFqn": TICKET, "identityHandle": subject}
    body = json.dumps({"subject": reference, "inputs": inputs}).encode()
    result = await client.request(
        "POST",
        f"/actions/{TICKET}.{action}",
        body=body,
        headers={"Content-Type": "application/json"},
        query=query,
    )
    assert result.status == 200, result.json
    return result


async def test_a_dry_run_lists_the_timers_its_write_arms_and_cancels(samples: TenantHost) -> None:
    agent = samples.client(actor="alice", roles=AGENT)
    due = instant(3600)
    created = await dry_run(agent, "create", NEWEST, title="Printer", due_at=due)
    overdue = {"timer": f"{TICKET}.overdue", "action": f"{TICKET}.escalate"}
    # Rendered as every datetime is (a fraction's trailing zeros dropped: .760 -> .76).
    armed = {**overdue, "dueAt": render_datetime(due)}
    assert created.json["timers"] == {"arm": [armed], "cancel": []}
    older = await dry_run(agent, "create", {"dryRun": "true"}, title="Printer", due_at=due)
    assert set(older.json) == {"ok", "dryRun", "outputs", "changes", "audit", "subscribers"}

    ticket = await create(agent, due_at=due)
    (pending,) = await list_timers(samples._service().storage, tenant=samples.tenant)
    cancelled = await dry_run(agent, "cancel", NEWEST, subject=ticket)
    assert cancelled.json["timers"] == {
        "arm": [],
        "cancel": [{**overdue, "dueAt": render_datetime(pending.due_at)}],
    }
    await agent.action(f"{TICKET}.start", subject=ticket)
    resolved = await dry_run(agent, "resolve", NEWEST, subject=ticket)
    (autoclose,) = resolved.json["timers"]["arm"]
    assert autoclose["timer"] == f"{TICKET}.autoclose"
    assert autoclose["dueAt"] > resolved.json["changes"]["resolved_at"]
    assert [item["timer"] for item in resolved.json["timers"]["cancel"]] == [f"{TICKET}.overdue"]
    # A dry run armed and cancelled nothing.
    after = await list_timers(samples._service().storage, tenant=samples.tenant)
    assert [(row.id, row.state) for row in after] == [(pending.id, "pending")]
