"""Declared rules (issue 38, plugin API 1.10): one ``Requirement``, evaluated in one place, is
refused alike on every path (the action, an update, another plugin's data API, a subscriber)
and explained by availability before the click; the samples declare their refusals."""

from __future__ import annotations

import json
from typing import Any

from plugin_api.testing import Client, Result, TenantHost

from ._purchasing import FROZEN, OWN_APPROVAL, REQUEST, ROW_ACTIONS, dry_run

V15 = {"acceptSchemaVersions": "1.5.0"}
DETAIL = f"{REQUEST}.detail"


def _people(purchasing_host: TenantHost) -> tuple[Client, Client]:
    """Bea buys (and approves); Abe approves."""
    bea = purchasing_host.client(actor="bea", roles=["buyer", "approver"])
    abe = purchasing_host.client(actor="abe", roles=["approver"])
    return bea, abe


async def _submitted(bea: Client, title: str = "Chairs", department: str | None = None) -> str:
    inputs: dict[str, Any] = {"title": title}
    if department is not None:
        inputs["department"] = department
    made = await bea.action(f"{REQUEST}.create", inputs=inputs)
    assert made.status == 200, made.json
    request_id: str = made.outputs["id"]
    assert (await bea.action(f"{REQUEST}.submit", subject=request_id)).status == 200
    return request_id


def _refused(result: Result, status: int, kind: str, message: str) -> None:
    assert result.status == status, result.json
    assert result.json["error"] == {"kind": kind, "message": message}


async def test_the_own_approval_rule_is_refused_alike_on_every_path(
    purchasing_host: TenantHost,
) -> None:
    bea, abe = _people(purchasing_host)
    request_id = await _submitted(bea)
    # Availability explains it before the click, for certain (no effect, no validator).
    detail = await bea.projection(DETAIL, subject=request_id, query=V15)
    cells = detail.item["_availability"]  # type: ignore[index]
    assert cells[f"{REQUEST}.approve"] == {
        "enabled": False,
        "kind": "PolicyDenied",
        "message": OWN_APPROVAL,
        "certain": True,
    }
    other = await abe.projection(DETAIL, subject=request_id, query=V15)
    assert other.item["_availability"][f"{REQUEST}.approve"] == {  # type: ignore[index]
        "enabled": True,
        "certain": True,
    }
    # The action, a dry run of it, an update, another plugin's patch and its nested run.
    _refused(
        await bea.action(f"{REQUEST}.approve", subject=request_id),
        403,
        "PolicyDenied",
        OWN_APPROVAL,
    )
    _refused(
        await dry_run(bea, f"{REQUEST}.approve", request_id), 403, "PolicyDenied", OWN_APPROVAL
    )
    edit = await bea.action(f"{REQUEST}.edit", subject=request_id, inputs={"approved_by": "bea"})
    _refused(edit, 403, "PolicyDenied", OWN_APPROVAL)
    for mode in ("patch", "approve"):
        note = await bea.action("desk.note.create", inputs={"request": request_id, "mode": mode})
        _refused(note, 403, "PolicyDenied", OWN_APPROVAL)
    # A subscriber's write: the dry run reports the transactional subscriber's refusal.
    made = await bea.action(f"{REQUEST}.create", inputs={"title": "auto chairs"})
    rehearsal = await dry_run(bea, f"{REQUEST}.submit", made.outputs["id"])
    assert rehearsal.status == 200, rehearsal.json
    outcome = rehearsal.json["subscribers"]["desk.approve_as_submitter"]
    assert outcome.startswith("failed: PolicyDenied") and OWN_APPROVAL in outcome
    # Nothing was written; another approver may approve (and through the other plugin too).
    row = (await abe.projection(DETAIL, subject=request_id)).item
    assert row is not None and row["approved_by"] is None and row["status"] == "submitted"
    assert (await abe.action(f"{REQUEST}.approve", subject=request_id)).status == 200
    second = await _submitted(bea, "Desks")
    note = await abe.action("desk.note.create", inputs={"request": second, "mode": "approve"})
    assert note.status == 200, note.json


async def test_a_condition_through_a_reference_is_foreseen(purchasing_host: TenantHost) -> None:
    bea, abe = _people(purchasing_host)
    frozen = await bea.action("purchasing.department.create", inputs={"name": "F", "frozen": True})
    request_id = await _submitted(bea, department=frozen.outputs["id"])
    answer = await abe.request(
        "POST",
        "/availability?acceptSchemaVersions=1.5.0",
        body=json.dumps({"subjects": [request_id], "actions": list(ROW_ACTIONS)}).encode(),
        headers={"Content-Type": "application/json"},
    )
    cells = answer.json["availability"][request_id]
    assert cells[f"{REQUEST}.approve"] == {
        "enabled": False,
        "kind": "WorkflowStateMismatch",
        "message": FROZEN,
        "certain": True,
    }
    # reject's effect declares nothing: availability cannot be sure of it.
    assert cells[f"{REQUEST}.reject"] == {"enabled": True, "certain": False}
    _refused(
        await abe.action(f"{REQUEST}.approve", subject=request_id),
        409,
        "WorkflowStateMismatch",
        FROZEN,
    )
    # Without acceptSchemaVersions the batch question answers as before.
    plain = await abe.request(
        "POST",
        "/availability",
        body=json.dumps({"subjects": [request_id], "actions": [f"{REQUEST}.approve"]}).encode(),
        headers={"Content-Type": "application/json"},
    )
    assert "certain" not in plain.json["availability"][request_id][f"{REQUEST}.approve"]


async def test_the_samples_declare_their_refusals(purchasing_host: TenantHost) -> None:
    rita = purchasing_host.client(actor="rita", roles=["requester"])
    agent = purchasing_host.client(actor="ann", roles=["agent"])
    clerk = purchasing_host.client(actor="cleo", roles=["clerk"])
    ticket = (await rita.action("helpdesk.ticket.create", inputs={"title": "T"})).outputs["id"]
    for step in ("start", "resolve", "close"):
        assert (await agent.action(f"helpdesk.ticket.{step}", subject=ticket)).status == 200
    escalate = "helpdesk.ticket.escalate"
    closed = "A closed ticket cannot be escalated"
    detail = await agent.projection("helpdesk.ticket.detail", subject=ticket, query=V15)
    cell = detail.item["_availability"][escalate]  # type: ignore[index]
    assert cell == {
        "enabled": False,
        "kind": "WorkflowStateMismatch",
        "message": closed,
        "certain": True,
    }
    _refused(await agent.action(escalate, subject=ticket), 409, "WorkflowStateMismatch", closed)
    _refused(await dry_run(agent, escalate, ticket), 409, "WorkflowStateMismatch", closed)
    # The charge: a ticket not billable, then one already invoiced.
    charge = {"ticket": ticket, "hours": 1, "amount": {"amount": "10.00", "currency": "USD"}}
    for run in (
        clerk.action("billing.charge.create", inputs=charge),
        dry_run(clerk, "billing.charge.create", None, charge),
    ):
        _refused(await run, 409, "WorkflowStateMismatch", "The ticket is not billable")
    billable = await rita.action("helpdesk.ticket.create", inputs={"title": "B", "billable": True})
    charge["ticket"] = billable.outputs["id"]
    assert (await clerk.action("billing.charge.create", inputs=charge)).status == 200
    again = await clerk.action("billing.charge.create", inputs=charge)
    _refused(again, 409, "WorkflowStateMismatch", "The ticket is already invoiced")
    # An unknown ticket is still the 400 of the reference check, as in v0.1.
    charge["ticket"] = "nope"
    assert (await clerk.action("billing.charge.create", inputs=charge)).status == 400


async def test_openapi_lists_the_declared_rules(purchasing_host: TenantHost) -> None:
    document = (await purchasing_host.client(tenant=None).request("GET", "/openapi.json")).json
    approve = document["paths"][f"/actions/{REQUEST}.approve"]["post"]
    assert approve["x-tessera-steps"][-2:] == ["conditions", "invariants"]
    assert f"Refuses with 409 WorkflowStateMismatch: {FROZEN}" in approve["description"]
    assert f"Refuses with 403 PolicyDenied: {OWN_APPROVAL}" in approve["description"]
    kinds = json.dumps(approve["responses"]["409"])
    assert "WorkflowStateMismatch" in kinds


async def test_the_workflow_gate_has_one_message(purchasing_host: TenantHost) -> None:
    """An action and a data-API transition on a row in another state answer alike."""
    bea, _ = _people(purchasing_host)
    request_id = await _submitted(bea)
    action = await bea.action(f"{REQUEST}.submit", subject=request_id)
    by_data = await bea.action("desk.note.create", inputs={"request": request_id, "mode": "submit"})
    tail = "applies to status in draft; the subject is 'submitted'"
    _refused(action, 409, "WorkflowStateMismatch", f"Action '{REQUEST}.submit' {tail}")
    _refused(by_data, 409, "WorkflowStateMismatch", f"Transition 'submit' of {REQUEST} {tail}")
