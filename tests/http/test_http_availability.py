"""Per-row availability (ViewSchema 1.2.0) and the batch question ``POST /availability``:
what a reader is shown equals what the action then answers (docs/http.md, "Availability")."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from plugin_api import (
    Action,
    ActionContext,
    Condition,
    CreateAction,
    Entity,
    Field,
    FieldType,
    ListOptions,
    PolicyHandler,
    PolicyVerdict,
    Projection,
    Transition,
    TransitionAction,
    Workflow,
    WorkflowGuardDenied,
    batch_policy,
    hookimpl,
)
from plugin_api.errors import ALL_ERRORS, EXTENDED_ERRORS
from plugin_api.testing import Client, Host, Result, TesseraHarness


@pytest.fixture
def host(own_host: Host) -> Host:
    """A host of the test's own: these tests act in the tenant ``t1``."""
    return own_host


TICKET = "helpdesk.ticket"
DETAIL = f"{TICKET}.detail"
V12 = {"acceptSchemaVersions": "1.2.0"}
ROW_ACTIONS = tuple(
    f"{TICKET}.{name}"
    for name in ("edit", "start", "resolve", "close", "reopen", "cancel", "escalate")
)
STATUS = {error.kind: error.status for error in (*ALL_ERRORS, *EXTENDED_ERRORS)}
PATHS = {
    "open": (),
    "in_progress": ("start",),
    "resolved": ("start", "resolve"),
    "closed": ("start", "resolve", "close"),
}


async def _ticket(host: Host, state: str) -> str:
    rita = host.client(tenant="acme", actor="rita", roles=["requester"])
    agent = host.client(tenant="acme", actor="ann", roles=["agent"])
    ticket: str = (await rita.action(f"{TICKET}.create", inputs={"title": "T"})).outputs["id"]
    for step in PATHS[state]:
        assert (await agent.action(f"{TICKET}.{step}", subject=ticket)).status == 200
    return ticket


def _identities(host: Host) -> list[Client]:
    return [
        host.client(tenant="acme", actor="ann", roles=["agent"]),
        host.client(tenant="acme", actor="rita", roles=["requester"]),  # the ticket's requester
        host.client(tenant="acme", actor="rex", roles=["requester"]),  # somebody else
        host.client(tenant="acme", actor="nina", roles=[]),
    ]


def _assert_same(cell: dict[str, Any], result: Result) -> None:
    if cell["enabled"]:
        assert result.status == 200, (cell, result.json)
        assert set(cell) == {"enabled"}
    else:
        assert result.status == STATUS[cell["kind"]], (cell, result.json)
        assert result.json["error"] == {"kind": cell["kind"], "message": cell["message"]}


async def test_every_state_and_role_is_answered_as_the_action_then_answers(host: Host) -> None:
    """For each state of the ticket workflow and each kind of reader, the detail document's
    availability of every row action equals what the real POST answers: 200 when enabled,
    the same status, kind and message when not."""
    tables: dict[str, dict[str, Any]] = {}
    for state in PATHS:
        for who in _identities(host):
            ticket = await _ticket(host, state)
            document = await who.projection(DETAIL, subject=ticket, query=V12)
            assert document.status == 200
            assert document.json["schemaVersion"] == "1.2.0"
            assert "filters" in document.json and "sort" in document.json  # 1.1.0 keys
            item = document.item
            assert item is not None
            cells = item["_availability"]
            assert tuple(cells) == ROW_ACTIONS
            tables[f"{state}/{who.actor}"] = cells
            for fqn in ROW_ACTIONS:
                result = await who.action(fqn, subject=ticket)
                cell = cells[fqn]
                # Escalate's refusal of a closed ticket is declared (plugin API 1.10): foreseen.
                _assert_same(cell, result)
                if result.status == 200:
                    ticket = await _ticket(host, state)
    # The table is not trivially uniform: each kind of answer occurs.
    kinds = {cell.get("kind") for cells in tables.values() for cell in cells.values()}
    assert kinds == {None, "PolicyDenied", "WorkflowStateMismatch"}
    assert tables["resolved/rita"][f"{TICKET}.close"] == {"enabled": True}
    assert tables["resolved/rex"][f"{TICKET}.close"] == {
        "enabled": False,
        "kind": "PolicyDenied",
        "message": f"Policy 'helpdesk.own_ticket' denied action '{TICKET}.close'",
    }
    assert tables["open/ann"][f"{TICKET}.resolve"]["kind"] == "WorkflowStateMismatch"
    assert tables["closed/ann"][f"{TICKET}.escalate"] == {
        "enabled": False,
        "kind": "WorkflowStateMismatch",
        "message": "A closed ticket cannot be escalated",
    }


async def test_lists_carry_each_rows_availability_and_older_versions_do_not(host: Host) -> None:
    rita = host.client(tenant="acme", actor="rita", roles=["requester"])
    tickets = {state: await _ticket(host, state) for state in PATHS}
    page = await rita.projection(f"{TICKET}.mine", query={**V12, "pageSize": "10"})
    assert page.json["schemaVersion"] == "1.2.0"
    assert page.json["data"]["pagination"]["maxPageSize"] >= 10
    by_id = {item["id"]: item["_availability"] for item in page.items}
    assert set(by_id) == set(tickets.values())
    for state, ticket in tickets.items():
        detail = await rita.projection(DETAIL, subject=ticket, query=V12)
        expected = {
            fqn: cell
            for fqn, cell in detail.item["_availability"].items()  # type: ignore[index]
            if fqn in by_id[ticket]
        }
        # mine offers a requester create, close and reopen; create takes no subject
        assert list(by_id[ticket]) == [f"{TICKET}.{n}" for n in ("close", "reopen")]
        assert by_id[ticket] == expected, state
    # queue: no custom policy on its row actions, so the gate reads the page's own state
    # values; the answers equal the detail's (read through the rows' whole records).
    agent = host.client(tenant="acme", actor="ann", roles=["agent"])
    queue = await agent.projection(f"{TICKET}.queue", query=V12)
    assert {item["id"] for item in queue.items} == set(tickets.values())
    for item in queue.items:
        detail = await agent.projection(DETAIL, subject=item["id"], query=V12)
        cells = detail.item["_availability"]  # type: ignore[index]
        assert item["_availability"] == {fqn: cells[fqn] for fqn in item["_availability"]}
        assert list(item["_availability"]) == [f"{TICKET}.start", f"{TICKET}.escalate"]
    for version in ("1.0.0", "1.1.0"):
        older = await rita.projection(f"{TICKET}.mine", query={"acceptSchemaVersions": version})
        assert all("_availability" not in item for item in older.items)
        assert b"_availability" not in older.body
    # Without a page size every row is read (streamed chunk by chunk when long).
    whole = await host.client(tenant="acme", actor="ann", roles=["agent"]).projection(
        DETAIL, query=V12
    )
    assert len(whole.items) == 4 and all("_availability" in item for item in whole.items)


@pytest.mark.parametrize("chunk_rows", [2])
async def test_streamed_lists_carry_availability_in_every_chunk(
    tessera: TesseraHarness, chunk_rows: int
) -> None:
    host = await tessera.start(plugins=["helpdesk"], list_chunk_rows=chunk_rows)
    for state in PATHS:
        await _ticket(host, state)
    agent = host.client(tenant="acme", actor="ann", roles=["agent"])
    document = await agent.projection(DETAIL, query=V12)
    assert len(document.items) == 4
    states = {item["state"]: item["_availability"][f"{TICKET}.start"] for item in document.items}
    assert states["open"] == {"enabled": True}
    assert states["closed"]["kind"] == "WorkflowStateMismatch"


async def _ask(client: Client, body: object) -> Result:
    return await client.request(
        "POST",
        "/availability",
        body=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )


async def test_the_batch_question_answers_the_same_table(host: Host) -> None:
    tickets = [await _ticket(host, state) for state in PATHS]
    for who in _identities(host):
        answer = await _ask(who, {"subjects": [*tickets, "nope"], "actions": list(ROW_ACTIONS)})
        assert answer.status == 200, answer.json
        table = answer.json["availability"]
        assert list(table) == [*tickets, "nope"]
        for ticket in tickets:
            detail = await who.projection(DETAIL, subject=ticket, query=V12)
            assert table[ticket] == detail.item["_availability"]  # type: ignore[index]
        for fqn, cell in table["nope"].items():
            _assert_same(cell, await who.action(fqn, subject="nope"))


async def test_the_batch_question_refuses_what_it_cannot_answer(host: Host) -> None:
    agent = host.client(tenant="acme", actor="ann", roles=["agent"])
    start = f"{TICKET}.start"
    cases: list[tuple[object, int, str]] = [
        ({"subjects": ["a"] * 101, "actions": [start]}, 400, "at most 100"),
        ({"subjects": ["a"], "actions": [start] * 21}, 400, "at most 20"),
        ({"subjects": [], "actions": [start]}, 400, "non-empty array"),
        ({"subjects": ["a"], "actions": [1]}, 400, "non-empty strings"),
        ({"subjects": ["a"], "actions": [start], "extra": 1}, 400, "Unknown key"),
        ({"subjects": ["a"], "actions": [f"{TICKET}.create"]}, 400, "takes no subject"),
        ({"subjects": ["a"], "actions": [start, "billing.invoice.pay"]}, 400, "one entity"),
        ({"subjects": ["a"], "actions": ["no.such.action"]}, 404, "Unknown action"),
    ]
    for body, status, text in cases:
        answer = await _ask(agent, body)
        assert answer.status == status, (body, answer.json)
        assert text in answer.json["error"]["message"]
    not_json = await agent.request("POST", "/availability", body=b"[1]")
    assert not_json.status == 400


# -- a custom batch policy with a reason of its own ---------------------------------------

CASE = "lab.case"
HOLD = "lab.hold"
CALLS: list[int] = []


@batch_policy
async def not_on_hold(contexts: Sequence[ActionContext]) -> Sequence[PolicyVerdict]:
    """Cases under a legal hold cannot be closed: one read for every case asked about."""
    CALLS.append(len(contexts))
    ids = [ctx.subject["id"] for ctx in contexts if ctx.subject is not None]
    holds = await contexts[0].data.find(
        HOLD, Condition(field="case_id", operator="in", value=ids), limit=1000
    )
    held = {hold["case_id"]: hold["reason"] for hold in holds}
    return [
        WorkflowGuardDenied(f"Case on hold: {held[ctx.subject['id']]}")
        if ctx.subject is not None and ctx.subject["id"] in held
        else True
        for ctx in contexts
    ]


def owner_only(ctx: ActionContext) -> bool:
    """A plain (one-row) policy on the same action: still asked, once per row. It has a bug
    on cases owned by ``boom``."""
    if ctx.subject is not None and ctx.subject["owner"] == "boom":
        raise RuntimeError("a bug in the policy")
    return ctx.subject is not None and ctx.subject["owner"] == ctx.actor_id


class LabPlugin:
    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=CASE,
                fields=(
                    Field(name="owner", type=FieldType.STRING),
                    Field(name="state", type=FieldType.ENUM, options=("open", "closed")),
                ),
                workflow=Workflow(
                    state_field="state",
                    initial="open",
                    transitions=(Transition(name="close", sources=("open",), target="closed"),),
                ),
            ),
            Entity(
                fqn=HOLD,
                fields=(
                    Field(name="case_id", type=FieldType.STRING),
                    Field(name="reason", type=FieldType.STRING),
                ),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn=f"{CASE}.create", entity=CASE, inputs=("owner",)),
            CreateAction(fqn=f"{HOLD}.create", entity=HOLD, inputs=("case_id", "reason")),
            TransitionAction(
                fqn=f"{CASE}.close",
                entity=CASE,
                transition="close",
                policies=("lab.not_on_hold", "lab.owner_only"),
            ),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(
                fqn=f"{CASE}.list",
                entity=CASE,
                fields=("id", "owner", "state"),
                actions=(f"{CASE}.create", f"{CASE}.close"),
                listing=ListOptions(default_page_size=50),
            ),
        )

    @hookimpl
    def tessera_policies(self) -> dict[str, PolicyHandler]:
        return {"lab.not_on_hold": not_on_hold, "lab.owner_only": owner_only}


async def test_a_batch_policy_is_asked_once_per_page_and_its_reason_is_shown(
    tessera: TesseraHarness,
) -> None:
    host = await tessera.start(plugins=[], extra=[("lab", LabPlugin())])
    olga = host.client(tenant="t1", actor="olga")
    cases = []
    for n in range(30):
        owner = "olga" if n % 3 else "oscar"
        cases.append((await olga.action(f"{CASE}.create", inputs={"owner": owner})).outputs["id"])
    held = set(cases[:10:2])
    for case in held:
        inputs = {"case_id": case, "reason": "litigation"}
        assert (await olga.action(f"{HOLD}.create", inputs=inputs)).status == 200
    CALLS.clear()
    page = await olga.projection(f"{CASE}.list", query=V12)
    assert CALLS == [30]  # one call, one read, for the whole page
    cells = {item["id"]: item["_availability"][f"{CASE}.close"] for item in page.items}
    assert len(cells) == 30
    for case in held:
        assert cells[case] == {
            "enabled": False,
            "kind": "WorkflowGuardDenied",
            "message": "Case on hold: litigation",
        }
    oscars = [c for n, c in enumerate(cases) if n % 3 == 0 and c not in held]
    assert oscars and all(cells[c]["kind"] == "PolicyDenied" for c in oscars)
    assert sum(cell["enabled"] for cell in cells.values()) == len(
        [c for n, c in enumerate(cases) if n % 3 and c not in held]
    )
    for case in cases:
        _assert_same(cells[case], await olga.action(f"{CASE}.close", subject=case))
    assert CALLS[1:] == [1] * 30  # the running action asks the same handler about one row


async def test_a_policy_bug_is_shown_as_the_500_the_action_answers(
    tessera: TesseraHarness,
) -> None:
    host = await tessera.start(plugins=[], extra=[("lab", LabPlugin())])
    olga = host.client(tenant="t1", actor="olga")
    case = (await olga.action(f"{CASE}.create", inputs={"owner": "boom"})).outputs["id"]
    # 1.2.0 is chosen when listed with others, whatever the order.
    query = {"acceptSchemaVersions": "1.2.0,1.1.0", "subject": case}
    detail = await olga.projection(f"{CASE}.list", query=query)
    assert detail.json["schemaVersion"] == "1.2.0"
    assert detail.item is not None
    cell = detail.item["_availability"][f"{CASE}.close"]
    assert cell == {"enabled": False, "kind": "InternalError", "message": "Internal error"}
    result = await olga.action(f"{CASE}.close", subject=case)
    assert (result.status, result.error_kind) == (500, "InternalError")
    older = await olga.projection(f"{CASE}.list", query={**query, "acceptSchemaVersions": "1.1.0"})
    assert older.json["schemaVersion"] == "1.1.0" and "_availability" not in older.item  # type: ignore[operator]
