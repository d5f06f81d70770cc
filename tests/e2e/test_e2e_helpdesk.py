"""Every row of the helpdesk tables of ``sample-plugins.md``, through the HTTP interface."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from plugin_api.testing import Host

from .conftest import (
    TICKET,
    TICKET_PATHS,
    as_actor,
    assert_error,
    assert_now,
    read,
    tenant_of,
    ticket_in,
)

REQUIRED = object()
NO_DEFAULT = object()

# name, type, label, typeOptions, nullable, default (REQUIRED: not nullable, no default)
FIELDS = [
    ("title", "string", "Title", {"maxLength": 120}, False, REQUIRED),
    ("description", "string", "Description", {}, True, NO_DEFAULT),
    ("priority", "enum", "Priority", {"options": ["low", "normal", "high", "urgent"]}, False,
     "normal"),
    ("estimate_hours", "integer", "Estimate (h)", {}, True, NO_DEFAULT),
    ("due_at", "datetime", "Due at", {}, True, NO_DEFAULT),
    ("billable", "boolean", "Billable", {}, False, False),
    ("budget", "money", "Budget", {"currency": "EUR"}, True, NO_DEFAULT),
    ("state", "enum", "State", {"options": ["open", "in_progress", "resolved", "closed"]}, False,
     NO_DEFAULT),
    ("requester", "string", "Requester", {}, True, NO_DEFAULT),
    ("assignee", "string", "Assignee", {}, True, NO_DEFAULT),
    ("resolution", "string", "Resolution", {}, True, NO_DEFAULT),
    ("resolved_at", "datetime", "Resolved at", {}, True, NO_DEFAULT),
]  # fmt: skip
EDITABLE = ["title", "description", "priority", "estimate_hours", "due_at", "billable", "budget"]
SYSTEM = {"id": "identity", "created_at": "system_string", "updated_at": "system_string",
          "_version": "version"}  # fmt: skip

QUEUE_FIELDS = ["id", "title", "priority", "state", "assignee", "due_at", "created_at"]
DETAIL_FIELDS = [
    "id", "title", "description", "priority", "estimate_hours", "due_at", "billable", "budget",
    "state", "requester", "assignee", "resolution", "resolved_at", "created_at", "updated_at",
    "_version",
]  # fmt: skip
QUEUE_ACTIONS = ["create", "start", "escalate"]
DETAIL_ACTIONS = ["edit", "start", "resolve", "close", "reopen", "cancel", "escalate"]

# action, the state a subject must be in, roles allowed (any of)
ACTION_ROLES = [
    ("create", None, ("requester", "agent")),
    ("edit", "open", ("agent",)),
    ("start", "open", ("agent",)),
    ("resolve", "in_progress", ("agent",)),
    ("close", "resolved", ("agent", "requester")),
    ("reopen", "resolved", ("requester",)),
    ("cancel", "open", ("agent",)),
    ("escalate", "open", ("agent",)),
]
# transition action, sources, target
TRANSITIONS = [
    ("start", {"open"}, "in_progress"),
    ("resolve", {"in_progress"}, "resolved"),
    ("close", {"resolved"}, "closed"),
    ("reopen", {"resolved"}, "open"),
    ("cancel", {"open", "in_progress"}, "closed"),
]


async def test_viewschema_fields_and_create_inputs(host: Host) -> None:
    by_name = {spec[0]: spec for spec in FIELDS}
    detail = await as_actor(host, "viewer").projection(f"{TICKET}.detail", subject="none")
    assert [f["name"] for f in detail.json["fields"]] == DETAIL_FIELDS
    for descriptor in detail.json["fields"]:
        name = descriptor["name"]
        if name in SYSTEM:
            assert descriptor["type"] == SYSTEM[name]
            continue
        _, type_, label, options, _, _ = by_name[name]
        assert (descriptor["type"], descriptor["label"]) == (type_, label)
        assert descriptor.get("typeOptions", {}) == options
        assert not {"required", "nullable", "default"} & set(descriptor)

    queue = await as_actor(host, "viewer").projection(f"{TICKET}.queue")
    create = queue.json["actions"][0]
    assert create["fqn"] == f"{TICKET}.create" and create["subjectRequired"] is False
    assert [i["name"] for i in create["inputs"]] == EDITABLE
    for descriptor in create["inputs"]:
        _, type_, label, options, nullable, default = by_name[descriptor["name"]]
        assert (descriptor["type"], descriptor["label"]) == (type_, label)
        assert descriptor.get("typeOptions", {}) == options
        assert descriptor["nullable"] is nullable
        assert descriptor["required"] is (default is REQUIRED)
        if default is REQUIRED or default is NO_DEFAULT:
            assert "default" not in descriptor
        else:
            assert descriptor["default"] == default


async def test_create_with_only_the_required_field_reads_defaults_and_stamps(host: Host) -> None:
    rita = as_actor(host, "rita", "requester")
    created = await rita.action(f"{TICKET}.create", inputs={"title": "Printer on fire"})
    assert created.outputs["state"] == "open"
    item = await read(host, f"{TICKET}.detail", created.outputs["id"])
    assert item == {
        **item,
        "title": "Printer on fire",
        "description": None,
        "priority": "normal",
        "estimate_hours": None,
        "due_at": None,
        "billable": False,
        "budget": None,
        "state": "open",
        "requester": "rita",
        "assignee": None,
        "resolution": None,
        "resolved_at": None,
    }


async def test_every_field_type_round_trips(host: Host) -> None:
    inputs = {
        "title": "Replace toner",
        "description": "Tray 2",
        "priority": "high",
        "estimate_hours": "3",
        "due_at": "2030-01-02T03:04:05+02:00",
        "billable": True,
        "budget": {"amount": "150.25", "currency": "EUR"},
    }
    created = await as_actor(host, "alice", "agent").action(f"{TICKET}.create", inputs=inputs)
    expected = {
        **inputs,
        "estimate_hours": 3,
        "due_at": "2030-01-02T01:04:05Z",
        "state": "open",
    }
    assert created.outputs == {"id": created.outputs["id"], **expected}
    item = await read(host, f"{TICKET}.detail", created.outputs["id"])
    assert item == {**item, **expected, "requester": "alice"}
    nulls = dict.fromkeys(["description", "estimate_hours", "due_at", "budget"])
    agent = as_actor(host, "alice", "agent")
    patched = await agent.action(f"{TICKET}.edit", subject=item["id"], inputs=nulls)
    assert patched.outputs == {**nulls, "_version": patched.outputs["_version"]}
    item = await read(host, f"{TICKET}.detail", item["id"])
    assert item == {**item, **nulls, "title": "Replace toner", "priority": "high"}


@pytest.mark.parametrize(
    "inputs",
    [
        {},
        {"title": None},
        {"title": "t", "priority": None},
        {"title": "t", "priority": "critical"},
        {"title": "t", "billable": None},
        {"title": "t", "budget": {"amount": "1", "currency": "USD"}},
        {"title": "t", "due_at": "tomorrow"},
        {"title": "t", "state": "closed"},
        {"title": "t", "requester": "mallory"},
    ],
)
async def test_create_rejects_misfits(host: Host, inputs: dict[str, object]) -> None:
    result = await as_actor(host, "alice", "agent").action(f"{TICKET}.create", inputs=inputs)
    assert_error(result, 400, "BadRequest")
    assert (await as_actor(host, "v").projection(f"{TICKET}.queue")).items == []


async def test_edit_is_a_partial_patch_of_the_editable_fields(host: Host) -> None:
    ticket = await ticket_in(host, "open")
    agent = as_actor(host, "alice", "agent")
    detail = await agent.projection(f"{TICKET}.detail", subject=ticket)
    edit = detail.json["actions"][0]
    assert [i["name"] for i in edit["inputs"]] == EDITABLE
    assert edit["initialValues"]["title"] == "Ticket to be open"
    patched = await agent.action(f"{TICKET}.edit", subject=ticket, inputs={"priority": "low"})
    assert set(patched.outputs) == {"priority", "_version"}
    item = await read(host, f"{TICKET}.detail", ticket)
    assert (item["priority"], item["title"], item["_version"]) == (
        "low",
        "Ticket to be open",
        patched.outputs["_version"],
    )
    for bad in ({"state": "closed"}, {"assignee": "x"}, {"title": None}):
        assert_error(await agent.action(f"{TICKET}.edit", subject=ticket, inputs=bad), 400,
                     "BadRequest")  # fmt: skip


@pytest.mark.parametrize(("name", "state", "roles"), ACTION_ROLES)
async def test_action_roles(
    host: Host, name: str, state: str | None, roles: tuple[str, ...]
) -> None:
    fqn = f"{TICKET}.{name}"
    inputs = {"title": "From a test"} if name == "create" else {}
    others = sorted({"requester", "agent"} - set(roles))
    denied = [
        host.client(tenant=tenant_of(host), actor="dora", roles=None)
    ]  # no X-Actor-Roles header
    denied += [as_actor(host, "dora", *r) for r in ((), ("clerk",), *((o,) for o in others))]
    allowed = [as_actor(host, "dora", role) for role in roles]
    for client in [*denied, *allowed]:
        subject = None if state is None else await ticket_in(host, state, requester="dora")
        result = await client.action(fqn, subject=subject, inputs=inputs)
        if client in allowed:
            assert result.status == 200, (client.roles, result.json)
        else:
            assert_error(result, 403, "PolicyDenied")


@pytest.mark.parametrize(("name", "sources", "target"), TRANSITIONS)
async def test_transition_sources_and_target(
    host: Host, name: str, sources: set[str], target: str
) -> None:
    staff = as_actor(host, "rita", "agent", "requester")
    for state in TICKET_PATHS:
        ticket = await ticket_in(host, state)
        result = await staff.action(f"{TICKET}.{name}", subject=ticket)
        if state in sources:
            assert result.outputs["state"] == target
            assert (await read(host, f"{TICKET}.detail", ticket))["state"] == target
        else:
            assert_error(result, 409, "WorkflowStateMismatch")
            assert (await read(host, f"{TICKET}.detail", ticket))["state"] == state


async def test_transition_stamps(host: Host) -> None:
    agent = as_actor(host, "carol", "agent")
    ticket = await ticket_in(host, "open")
    started = await agent.action(f"{TICKET}.start", subject=ticket)
    assert set(started.outputs) == {"state", "assignee", "_version"}
    assert started.outputs["assignee"] == "carol"

    before = datetime.now(timezone.utc)
    resolved = await agent.action(
        f"{TICKET}.resolve", subject=ticket, inputs={"resolution": "Replaced the fuser"}
    )
    assert set(resolved.outputs) == {"state", "resolved_at", "resolution", "_version"}
    assert_now(resolved.outputs["resolved_at"], before)
    item = await read(host, f"{TICKET}.detail", ticket)
    assert (item["assignee"], item["resolution"], item["resolved_at"]) == (
        "carol",
        "Replaced the fuser",
        resolved.outputs["resolved_at"],
    )

    reopened = await as_actor(host, "rita", "requester").action(f"{TICKET}.reopen", subject=ticket)
    assert reopened.outputs == {"state": "open", "resolved_at": None,
                                "_version": reopened.outputs["_version"]}  # fmt: skip
    item = await read(host, f"{TICKET}.detail", ticket)
    assert (item["state"], item["resolved_at"], item["_version"]) == (
        "open",
        None,
        reopened.outputs["_version"],
    )

    bare = await ticket_in(host, "in_progress")
    resolved = await agent.action(f"{TICKET}.resolve", subject=bare)
    assert "resolution" not in resolved.outputs
    assert (await read(host, f"{TICKET}.detail", bare))["resolution"] is None
    for name, state in (("close", "resolved"), ("cancel", "open"), ("cancel", "in_progress")):
        result = await agent.action(f"{TICKET}.{name}", subject=await ticket_in(host, state))
        assert set(result.outputs) == {"state", "_version"}


@pytest.mark.parametrize(
    ("projection", "fields", "actions", "subject"),
    [
        ("queue", QUEUE_FIELDS, QUEUE_ACTIONS, False),
        ("detail", DETAIL_FIELDS, DETAIL_ACTIONS, True),
    ],
)
async def test_projections(
    host: Host, projection: str, fields: list[str], actions: list[str], subject: bool
) -> None:
    ticket = await ticket_in(host, "in_progress")
    viewer = as_actor(host, "viewer")
    result = await viewer.projection(f"{TICKET}.{projection}", subject=ticket if subject else None)
    assert result.json["metadata"]["entity"] == TICKET
    assert [f["name"] for f in result.json["fields"]] == fields
    assert [a["fqn"] for a in result.json["actions"]] == [f"{TICKET}.{a}" for a in actions]
    rows: list[Any] = [result.item] if subject else result.items
    assert [list(row) for row in rows] == [fields]
    assert rows[0]["state"] == "in_progress" and rows[0]["assignee"] == "alice"


async def test_own_ticket_policy(host: Host) -> None:
    rita = as_actor(host, "rita", "requester")
    sam = as_actor(host, "sam", "requester")
    agent = as_actor(host, "alice", "agent")
    both = as_actor(host, "sam", "requester", "agent")

    ticket = await ticket_in(host, "resolved", requester="rita")
    assert_error(await sam.action(f"{TICKET}.close", subject=ticket), 403, "PolicyDenied")
    assert_error(await sam.action(f"{TICKET}.reopen", subject=ticket), 403, "PolicyDenied")
    assert (await read(host, f"{TICKET}.detail", ticket))["state"] == "resolved"
    assert (await rita.action(f"{TICKET}.reopen", subject=ticket)).outputs["state"] == "open"

    own = await ticket_in(host, "resolved", requester="rita")
    assert (await rita.action(f"{TICKET}.close", subject=own)).outputs["state"] == "closed"
    for closer in (agent, both):
        other = await ticket_in(host, "resolved", requester="rita")
        assert (await closer.action(f"{TICKET}.close", subject=other)).outputs["state"] == "closed"
    assert_error(
        await agent.action(f"{TICKET}.reopen", subject=await ticket_in(host, "resolved")),
        403,
        "PolicyDenied",
    )


async def test_escalate_effect(host: Host) -> None:
    agent = as_actor(host, "alice", "agent")
    ticket = await ticket_in(host, "in_progress")
    escalated = await agent.action(f"{TICKET}.escalate", subject=ticket)
    assert escalated.outputs == {"priority": "urgent", "_version": escalated.outputs["_version"]}
    item = await read(host, f"{TICKET}.detail", ticket)
    assert (item["priority"], item["_version"]) == ("urgent", escalated.outputs["_version"])
    assert_error(
        await agent.action(f"{TICKET}.escalate", subject=ticket, inputs={"priority": "low"}),
        400,
        "BadRequest",
    )

    closed = await ticket_in(host, "closed")
    version = (await read(host, f"{TICKET}.detail", closed))["_version"]
    assert_error(await agent.action(f"{TICKET}.escalate", subject=closed), 409,
                 "WorkflowStateMismatch")  # fmt: skip
    item = await read(host, f"{TICKET}.detail", closed)
    assert (item["priority"], item["_version"]) == ("normal", version)
    assert_error(await agent.action(f"{TICKET}.escalate", subject="01J00000000000000000000000"),
                 404, "NotFound")  # fmt: skip
