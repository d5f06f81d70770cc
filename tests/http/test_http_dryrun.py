"""Dry runs (``POST /actions/{fqn}?dryRun=true``): the whole chain in a transaction that is
always rolled back (docs/http.md, "Dry runs")."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from plugin_api import (
    Action,
    ActionContext,
    CreateAction,
    EffectHandler,
    Entity,
    EventContext,
    Field,
    FieldType,
    Subscriber,
    UpdateAction,
    hookimpl,
)
from plugin_api.testing import Client, Host, Result, TesseraHarness

from ._dump import dump

TICKET = "helpdesk.ticket"
INVOICE = "billing.invoice"
VOLATILE = {"id", "_version"}


async def _dry(
    client: Client,
    fqn: str,
    *,
    subject: str | None = None,
    inputs: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    flag: str = "true",
) -> Result:
    payload: dict[str, Any] = {"subject": None, "inputs": dict(inputs or {})}
    if subject is not None:
        payload["subject"] = {
            "tenantId": client.tenant,
            "entityFqn": fqn.rsplit(".", 1)[0],
            "identityHandle": subject,
        }
    return await client.request(
        "POST",
        f"/actions/{fqn}?dryRun={flag}",
        body=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", **(headers or {})},
    )


TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


def _mask(value: Any) -> Any:
    if isinstance(value, str) and TIME.fullmatch(value):
        return "<time>"
    if isinstance(value, str) and ULID.fullmatch(value):
        return "<id>"
    return value


def _stable(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with the row's id and version left out, other ids and times masked."""
    return {k: _mask(v) for k, v in values.items() if k not in VOLATILE}


async def _rehearse_then_run(
    host: Host,
    client: Client,
    fqn: str,
    *,
    subject: str | None = None,
    inputs: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Dry-run ``fqn``, check the database did not change, run it for real; both answers.
    Earlier actions' events are delivered first: the dispatcher must not change the database
    between the two dumps."""
    await host.deliveries_settled()
    before = await dump(host.database_url)
    rehearsal = await _dry(client, fqn, subject=subject, inputs=inputs)
    assert rehearsal.status == 200, rehearsal.json
    assert await dump(host.database_url) == before
    real = await client.action(fqn, subject=subject, inputs=inputs)
    assert real.status == 200, real.json
    assert _stable(rehearsal.json["outputs"]) == _stable(real.outputs)
    assert set(rehearsal.json["outputs"]) == set(real.outputs)
    body: dict[str, Any] = rehearsal.json
    return body, real.outputs


async def test_a_dry_run_changes_nothing_and_answers_what_the_action_then_does(
    host: Host,
) -> None:
    rita = host.client(tenant="acme", actor="rita", roles=["requester"])
    agent = host.client(tenant="acme", actor="ann", roles=["agent"])
    create, created = await _rehearse_then_run(
        host, rita, f"{TICKET}.create", inputs={"title": "Printer", "priority": "high"}
    )
    assert create["dryRun"] is True
    ticket = created["id"]
    # The row as it would have been written: defaults and the requester stamp included.
    changes = create["changes"]
    assert changes["requester"] == "rita" and changes["billable"] is False
    assert changes["state"] == "open" and changes["id"] == create["outputs"]["id"]
    assert {"created_at", "updated_at", "_version"} <= set(changes)
    audit = create["audit"]
    assert audit["action"] == f"{TICKET}.create" and audit["actorId"] == "rita"
    assert audit["subjectId"] == create["outputs"]["id"] and audit["tenantId"] == "acme"
    assert audit["inputs"] == {"title": "Printer", "priority": "high"}
    assert audit["outputs"] == create["outputs"] and audit["roles"] == ["requester"]

    start, _ = await _rehearse_then_run(host, agent, f"{TICKET}.start", subject=ticket)
    assert start["changes"]["assignee"] == "ann" and start["changes"]["state"] == "in_progress"
    # resolve: a subscriber wants it (an outbox delivery), and it stamps resolved_at.
    resolve, _ = await _rehearse_then_run(
        host, agent, f"{TICKET}.resolve", subject=ticket, inputs={"resolution": "Rebooted"}
    )
    assert resolve["outputs"]["resolution"] == "Rebooted" and resolve["outputs"]["resolved_at"]
    # Its transactional subscriber ran in the rolled-back transaction (its row is gone too).
    assert resolve["subscribers"] == {"helpdesk.notify_requester": "delivered"}
    assert start["subscribers"] == {}
    await _rehearse_then_run(host, agent, f"{TICKET}.escalate", subject=ticket)


SYSTEM = {"id", "tenant_id", "created_at", "updated_at", "_version"}


async def test_a_dry_run_plans_the_changes_and_audit_record_the_action_then_makes(
    host: Host,
) -> None:
    """One write planner (issue 38): field for field, what a dry run says it would change is
    what the real POST's audit record then holds (the row's history), by the same actor."""
    rita = host.client(tenant="acme", actor="rita", roles=["requester"])
    agent = host.client(tenant="acme", actor="ann", roles=["agent"])
    steps: list[tuple[Client, str, dict[str, Any]]] = [
        (rita, "create", {"title": "Printer", "priority": "high"}),
        (agent, "start", {}),
        (agent, "edit", {"priority": "low"}),
        (agent, "resolve", {"resolution": "Rebooted"}),
    ]
    ticket: str | None = None
    shown: dict[str, Any] = {}
    for client, name, inputs in steps:
        rehearsal, outputs = await _rehearse_then_run(
            host, client, f"{TICKET}.{name}", subject=ticket, inputs=inputs
        )
        ticket = ticket or outputs["id"]
        page = await agent.request(
            "GET", f"/projections/{TICKET}.detail/history", query={"subject": ticket}
        )
        newest = page.json["data"]["items"][0]
        after = (await agent.projection(f"{TICKET}.detail", subject=ticket)).item
        assert after is not None
        planned = {
            field: _mask(value)
            for field, value in rehearsal["changes"].items()
            if field in after and field not in SYSTEM and value != shown.get(field)
        }
        made = {field: _mask(pair["after"]) for field, pair in newest["changes"].items()}
        assert planned == made, name
        audit = rehearsal["audit"]
        assert (newest["action"], newest["actor"]) == (
            audit["action"],
            {"id": audit["actorId"], "roles": audit["roles"]},
        )
        shown = after


async def test_a_dry_run_gives_back_the_number_it_drew(host: Host) -> None:
    clerk = host.client(tenant="acme", actor="carl", roles=["clerk"])
    inputs = {"customer": "C", "amount": {"amount": "1.50", "currency": "USD"}}
    invoice = (await clerk.action(f"{INVOICE}.create", inputs=inputs)).outputs["id"]
    issued, real = await _rehearse_then_run(host, clerk, f"{INVOICE}.issue", subject=invoice)
    assert issued["outputs"]["number"] == real["number"] == "INV-00001"


async def test_a_dry_run_refuses_as_the_action_would_and_changes_nothing(host: Host) -> None:
    rita = host.client(tenant="acme", actor="rita", roles=["requester"])
    agent = host.client(tenant="acme", actor="ann", roles=["agent"])
    ticket = (await rita.action(f"{TICKET}.create", inputs={"title": "T"})).outputs["id"]
    for step in ("cancel",):
        assert (await agent.action(f"{TICKET}.{step}", subject=ticket)).status == 200
    # The cancel's event is delivered in the background (the delivery row goes): settle it first.
    await host.deliveries_settled()
    before = await dump(host.database_url)
    cases: list[tuple[Client, str, str | None, dict[str, Any], int, str]] = [
        # the escalate effect's own refusal, which availability cannot foresee
        (agent, f"{TICKET}.escalate", ticket, {}, 409, "WorkflowStateMismatch"),
        (agent, f"{TICKET}.start", ticket, {}, 409, "WorkflowStateMismatch"),
        (rita, f"{TICKET}.start", ticket, {}, 403, "PolicyDenied"),
        (agent, f"{TICKET}.edit", "missing", {}, 404, "NotFound"),
        (agent, f"{TICKET}.edit", ticket, {"priority": "nope"}, 400, "BadRequest"),
        (agent, f"{TICKET}.create", None, {}, 400, "BadRequest"),
    ]
    for client, fqn, subject, inputs, status, kind in cases:
        rehearsal = await _dry(client, fqn, subject=subject, inputs=inputs)
        real = await client.action(fqn, subject=subject, inputs=inputs)
        assert (rehearsal.status, rehearsal.error_kind) == (status, kind), (fqn, rehearsal.json)
        assert rehearsal.json == real.json
    assert await dump(host.database_url) == before
    for flag in ("yes", "1", ""):
        bad = await _dry(agent, f"{TICKET}.create", inputs={"title": "x"}, flag=flag)
        assert bad.status == 400 and "dryRun" in bad.json["error"]["message"]
    off = await _dry(agent, f"{TICKET}.create", inputs={"title": "x"}, flag="false")
    assert off.status == 200 and "dryRun" not in off.json


async def test_a_dry_run_records_no_idempotency_key(host: Host) -> None:
    agent = host.client(tenant="acme", actor="ann", roles=["agent"])
    key = {"Idempotency-Key": "k-1"}
    before = await dump(host.database_url)
    rehearsal = await _dry(agent, f"{TICKET}.create", inputs={"title": "x"}, headers=key)
    assert rehearsal.status == 200 and "Idempotent-Replayed" not in rehearsal.headers
    assert await dump(host.database_url) == before
    body = json.dumps({"subject": None, "inputs": {"title": "x"}}).encode()
    headers = {"Content-Type": "application/json", **key}
    real = await agent.request("POST", f"/actions/{TICKET}.create", body=body, headers=headers)
    assert real.status == 200 and "Idempotent-Replayed" not in real.headers
    assert real.json["outputs"]["id"] != rehearsal.json["outputs"]["id"]


# -- an effect that does not say it is safe to dry-run ------------------------------------

SENT: list[str] = []
COUNTED: list[str] = []


def mail_out(ctx: ActionContext) -> None:
    """Calls out (here: appends to a list standing in for a mail server)."""
    SENT.append(ctx.actor_id)


async def count_notes(ctx: EventContext) -> None:
    """A transactional subscriber that does not say it is safe to dry-run."""
    COUNTED.append(ctx.event.id)


class MailPlugin:
    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (Entity(fqn="lab.note", fields=(Field(name="text", type=FieldType.STRING),)),)

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn="lab.note.create", entity="lab.note", inputs=("text",)),
            UpdateAction(
                fqn="lab.note.mail", entity="lab.note", patchable=(), effect="lab.mail_out"
            ),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"lab.mail_out": mail_out}

    @hookimpl
    def tessera_subscribers(self) -> Sequence[Subscriber]:
        return (
            Subscriber(
                name="lab.count_notes",
                handler=count_notes,
                actions=("lab.note.create",),
                transactional=True,
            ),
        )


async def test_a_dry_run_through_an_undeclared_effect_is_refused(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=[], extra=[("mail", MailPlugin())])
    client = host.client(tenant="t1", actor="olga")
    note = (await client.action("lab.note.create", inputs={"text": "hi"})).outputs["id"]
    SENT.clear()
    before = await dump(host.database_url)
    refused = await _dry(client, "lab.note.mail", subject=note)
    assert refused.status == 422 and refused.error_kind == "DryRunUnsupported"
    assert "lab.mail_out" in refused.json["error"]["message"]
    assert SENT == [] and await dump(host.database_url) == before
    assert (await client.action("lab.note.mail", subject=note)).status == 200
    assert SENT == ["olga"]
    refused = await _dry(client, "lab.note.create", inputs={"text": "x"})
    assert refused.status == 422 and refused.error_kind == "DryRunUnsupported"
    assert "transactional subscriber 'lab.count_notes'" in refused.json["error"]["message"]
    assert SENT == ["olga"]


async def test_a_dry_run_of_an_effect_writing_other_rows_changes_nothing(
    tessera: TesseraHarness,
) -> None:
    """billing.charge.create's effect creates an invoice and patches the ticket through the
    data API (each write with its audit record): all of it is rolled back, no audit ``seq``
    is drawn, and the real action answers the same."""
    host = await tessera.start(plugins=["helpdesk", "billing", "billing_helpdesk"])
    agent = host.client(tenant="acme", actor="ann", roles=["agent", "clerk"])
    inputs: dict[str, Any] = {"title": "Billable", "billable": True}
    ticket = (await agent.action(f"{TICKET}.create", inputs=inputs)).outputs["id"]
    charge = {"ticket": ticket, "hours": 2, "amount": {"amount": "80.00", "currency": "USD"}}
    rehearsal, real = await _rehearse_then_run(host, agent, "billing.charge.create", inputs=charge)
    assert set(rehearsal["outputs"]) == set(real) and "invoice" in real
