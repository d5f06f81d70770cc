"""Two in-test plugins for declared rules (issue 38, plugin API 1.10).

``purchasing`` declares, once, the rule "an approver may not approve their own request" as an
invariant of ``purchasing.request`` (the approver stamped by ``approve``, or written by anyone,
differs from the requester), and a condition through a reference on ``approve``: a request of
a frozen department is not approved. ``desk``, another plugin, writes requests through the
data API: its ``desk.note.create`` effect patches a request's approver or runs ``approve``
(``mode``), and its transactional subscriber to ``submit`` makes the submitter the approver
of a request titled ``auto...``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from plugin_api import (
    Action,
    ActionContext,
    Condition,
    CreateAction,
    EffectHandler,
    Entity,
    EventContext,
    Field,
    FieldType,
    PolicyDenied,
    Projection,
    Requirement,
    Stamp,
    Subscriber,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    WorkflowStateMismatch,
    dry_run_safe,
    hookimpl,
    refuses,
    row_field,
)
from plugin_api.testing import Client, Result

REQUEST = "purchasing.request"
DEPARTMENT = "purchasing.department"
NOTE = "desk.note"
OWN_APPROVAL = "An approver may not approve their own request"
FROZEN = "The department's budget is frozen"

NOT_OWN = Requirement(
    when=Condition(field="approved_by", operator="ne", value=row_field("requested_by")),
    refuse=PolicyDenied,
    message=OWN_APPROVAL,
)
NOT_FROZEN = Requirement(
    when=Condition(field="department.frozen", operator="ne", value=True),
    refuse=WorkflowStateMismatch,
    message=FROZEN,
)


def _move(name: str, sources: tuple[str, ...], target: str, **extra: object) -> Transition:
    return Transition(name=name, sources=sources, target=target, **extra)  # type: ignore[arg-type]


request = Entity(
    fqn=REQUEST,
    fields=(
        Field(name="title", type=FieldType.STRING),
        Field(name="requested_by", type=FieldType.STRING, nullable=True),
        Field(name="approved_by", type=FieldType.STRING, nullable=True),
        Field(name="department", type=FieldType.REFERENCE, target=DEPARTMENT, nullable=True),
        Field(
            name="status",
            type=FieldType.ENUM,
            options=("draft", "submitted", "approved", "rejected"),
        ),
    ),
    workflow=Workflow(
        state_field="status",
        initial="draft",
        transitions=(
            _move("submit", ("draft",), "submitted"),
            _move("approve", ("submitted",), "approved", stamps=(Stamp.actor("approved_by"),)),
            _move("reject", ("submitted",), "rejected"),
        ),
    ),
    invariants=(NOT_OWN,),
)
department = Entity(
    fqn=DEPARTMENT,
    fields=(
        Field(name="name", type=FieldType.STRING),
        Field(name="frozen", type=FieldType.BOOLEAN, default=False),
    ),
)

ROLES = ("buyer", "approver")
ACTIONS: tuple[Action, ...] = (
    CreateAction(
        fqn=f"{DEPARTMENT}.create", entity=DEPARTMENT, inputs=("name", "frozen"), roles=ROLES
    ),
    CreateAction(
        fqn=f"{REQUEST}.create",
        entity=REQUEST,
        inputs=("title", "department"),
        stamps=(Stamp.actor("requested_by"),),
        roles=("buyer",),
    ),
    UpdateAction(
        fqn=f"{REQUEST}.edit",
        entity=REQUEST,
        patchable=("title", "approved_by"),
        roles=ROLES,
    ),
    TransitionAction(
        fqn=f"{REQUEST}.submit", entity=REQUEST, transition="submit", stampable=(), roles=ROLES
    ),
    TransitionAction(
        fqn=f"{REQUEST}.approve",
        entity=REQUEST,
        transition="approve",
        stampable=(),
        roles=("approver",),
        requires=(NOT_FROZEN,),
    ),
    TransitionAction(
        fqn=f"{REQUEST}.reject",
        entity=REQUEST,
        transition="reject",
        stampable=(),
        roles=("approver",),
        effect="purchasing.note_rejection",
    ),
)
ROW_ACTIONS = tuple(f"{REQUEST}.{name}" for name in ("edit", "submit", "approve", "reject"))


@dry_run_safe
async def note_rejection(ctx: ActionContext) -> None:
    """An effect that declares nothing it refuses with: availability cannot be sure of it."""
    ctx.set("title", ctx.subject["title"] if ctx.subject else "")


class Purchasing:
    """The purchasing plugin (never mutated: one object for every test of the shared host)."""

    TESSERA_PLUGIN_API = "1.10"

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (request, department)

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return ACTIONS

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(
                fqn=f"{REQUEST}.detail",
                entity=REQUEST,
                fields=("id", "title", "requested_by", "approved_by", "department", "status"),
                actions=ROW_ACTIONS,
            ),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"purchasing.note_rejection": note_rejection}


@dry_run_safe
@refuses()
async def act_on_request(ctx: ActionContext) -> None:
    """``mode`` ``patch``: make the request's requester its approver (data-API patch);
    ``approve``: run ``purchasing.request.approve`` on it as the caller; ``submit``: its
    data-API transition ``submit``."""
    request_id = ctx.changes["request"]
    if ctx.changes["mode"] == "submit":
        await ctx.data.transition(REQUEST, request_id, "submit")
    elif ctx.changes["mode"] == "patch":
        row = await ctx.data.get(REQUEST, request_id)
        assert row is not None
        await ctx.data.patch(REQUEST, request_id, {"approved_by": row["requested_by"]})
    else:
        await ctx.data.run(f"{REQUEST}.approve", subject=request_id)


@dry_run_safe
async def approve_as_submitter(event: EventContext) -> None:
    """Make the submitter the approver of a submitted request titled ``auto...``."""
    row = await event.data.get(REQUEST, event.event.subject_id)
    if row is not None and str(row["title"]).startswith("auto"):
        await event.data.patch(REQUEST, row["id"], {"approved_by": event.event.actor_id})


class Desk:
    """Another plugin that writes purchasing requests through the data API."""

    TESSERA_PLUGIN_API = "1.8"  # ctx.data.run as the caller

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=NOTE,
                fields=(
                    Field(name="request", type=FieldType.REFERENCE, target=REQUEST),
                    Field(name="mode", type=FieldType.ENUM, options=("patch", "approve", "submit")),
                ),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(
                fqn=f"{NOTE}.create",
                entity=NOTE,
                inputs=("request", "mode"),
                roles=ROLES,
                effect="desk.act_on_request",
            ),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"desk.act_on_request": act_on_request}

    @hookimpl
    def tessera_subscribers(self) -> Sequence[Subscriber]:
        return (
            Subscriber(
                name="desk.approve_as_submitter",
                handler=approve_as_submitter,
                actions=(f"{REQUEST}.submit",),
                transactional=True,
            ),
        )


async def dry_run(client: Client, fqn: str, subject: str | None, inputs: Any = None) -> Result:
    """``POST /actions/{fqn}?dryRun=true`` (a subject id, or ``None`` for a create)."""
    body: dict[str, Any] = {"inputs": inputs or {}, "subject": None}
    if subject is not None:
        entity = fqn.rsplit(".", 1)[0]
        body["subject"] = {
            "tenantId": client.tenant,
            "entityFqn": entity,
            "identityHandle": subject,
        }
    return await client.request(
        "POST",
        f"/actions/{fqn}?dryRun=true",
        body=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )


PURCHASING = Purchasing()
DESK = Desk()
EXTRA = (("purchasing", PURCHASING), ("desk", DESK))
__all__ = ["DESK", "EXTRA", "PURCHASING", "dry_run"]
