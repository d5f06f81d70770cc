"""The helpdesk plugin: one ticket entity, its workflow, actions, projections and handlers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# docs:start helpdesk-imports
from plugin_api import (
    ANONYMOUS_ACTOR,
    Action,
    ActionContext,
    Condition,
    CreateAction,
    EffectHandler,
    Entity,
    Field,
    FieldType,
    Filter,
    ListOptions,
    PolicyDenied,
    PolicyHandler,
    PolicyVerdict,
    Projection,
    ReadAccess,
    ReadContext,
    ReadPolicyResult,
    Requirement,
    RowScope,
    Stamp,
    Subscriber,
    Timer,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    WorkflowStateMismatch,
    batch_policy,
    dry_run_safe,
    hookimpl,
    refuses,
)

# docs:end helpdesk-imports
from tessera_helpdesk import notify, timers

TESSERA_PLUGIN_API = "1.11"
"""The plugin API this plugin needs (1.2: ``ANONYMOUS_ACTOR``, ``ListOptions``; 1.5: event
subscribers; 1.6: ``Condition`` with ``operator``, the one condition type; 1.7:
``dry_run_safe``, ``batch_policy``; 1.10: labels, ``requires``, timers; 1.11: ``OPEN``, an
empty ``ReadAccess()`` declaring a projection open on purpose)."""
TESSERA_PLUGIN_LABEL = "Helpdesk"
"""How people read the plugin's name (plugin API 1.10; an older host ignores it)."""
OPEN_TICKET_LIMIT = 3

TICKET = "helpdesk.ticket"
EDITABLE = ("title", "description", "priority", "estimate_hours", "due_at", "billable", "budget")

# docs:start ticket-entity
ticket = Entity(
    fqn=TICKET,
    fields=(
        Field(name="title", type=FieldType.STRING, max_length=120),
        Field(name="description", type=FieldType.STRING, nullable=True),
        Field(
            name="priority",
            type=FieldType.ENUM,
            options=("low", "normal", "high", "urgent"),
            default="normal",
        ),
        Field(name="estimate_hours", type=FieldType.INTEGER, nullable=True, label="Estimate (h)"),
        Field(name="due_at", type=FieldType.DATETIME, nullable=True),
        Field(name="billable", type=FieldType.BOOLEAN, default=False),
        Field(name="budget", type=FieldType.MONEY, currency="EUR", nullable=True),
        Field(
            name="state",
            type=FieldType.ENUM,
            options=("open", "in_progress", "resolved", "closed"),
        ),
        Field(name="requester", type=FieldType.STRING, nullable=True),
        Field(name="assignee", type=FieldType.STRING, nullable=True),
        Field(name="resolution", type=FieldType.STRING, nullable=True),
        Field(name="resolved_at", type=FieldType.DATETIME, nullable=True),
        # Set by other plugins (billing records the invoice of the ticket's billable work);
        # a plain string: the helpdesk depends on no other plugin.
        Field(name="invoice", type=FieldType.STRING, nullable=True),
    ),
    display="title",  # a reference to a ticket shows its title (ViewSchema 1.4.0, console)
    label="Ticket",
    workflow=Workflow(
        state_field="state",
        initial="open",
        transitions=(
            Transition(
                name="start",
                sources=("open",),
                target="in_progress",
                stamps=(Stamp.actor("assignee"),),
            ),
            # ``resolution`` is stamped from the request inputs when given (any transition
            # input naming a declared field is stamped).
            Transition(
                name="resolve",
                sources=("in_progress",),
                target="resolved",
                stamps=(Stamp.now("resolved_at"),),
            ),
            Transition(name="close", sources=("resolved",), target="closed"),
            Transition(
                name="reopen",
                sources=("resolved",),
                target="open",
                stamps=(Stamp.literal("resolved_at", None),),
            ),
            Transition(name="cancel", sources=("open", "in_progress"), target="closed"),
        ),
    ),
)
# docs:end ticket-entity


# docs:start escalate-requires
# Declared (plugin API 1.10): the runtime, availability and dry runs check it in one place.
NOT_CLOSED = Requirement(
    when=Condition(field="state", operator="ne", value="closed"),
    refuse=WorkflowStateMismatch,
    message="A closed ticket cannot be escalated",
)
# docs:end escalate-requires


# docs:start helpdesk-actions
def _transition(
    name: str,
    roles: tuple[str, ...],
    *,
    stampable: tuple[str, ...] = (),
    policies: tuple[str, ...] = (),
    label: str | None = None,
) -> TransitionAction:
    # Inputs stamp only what is named: by default a transition keeps its inputs in the
    # audit record alone, so none can overwrite the requester or the assignee.
    return TransitionAction(
        fqn=f"{TICKET}.{name}",
        entity=TICKET,
        transition=name,
        stampable=stampable,
        roles=roles,
        policies=policies,
        label=label,
    )


ACTIONS: tuple[Action, ...] = (
    CreateAction(
        fqn=f"{TICKET}.create",
        entity=TICKET,
        inputs=EDITABLE,
        stamps=(Stamp.actor("requester"),),
        roles=("requester", "agent"),
        label="New ticket",
    ),
    UpdateAction(
        fqn=f"{TICKET}.edit", entity=TICKET, patchable=EDITABLE, roles=("agent",), label="Edit"
    ),
    _transition("start", ("agent",), label="Start"),
    _transition("resolve", ("agent",), stampable=("resolution",), label="Resolve"),
    _transition("close", ("agent", "requester"), policies=("helpdesk.own_ticket",), label="Close"),
    _transition("reopen", ("requester",), policies=("helpdesk.own_ticket",), label="Reopen"),
    _transition("cancel", ("agent",), label="Cancel"),
    UpdateAction(
        fqn=f"{TICKET}.escalate",
        entity=TICKET,
        patchable=(),
        roles=("agent",),
        effect="helpdesk.escalate",
        requires=(NOT_CLOSED,),
        label="Escalate to urgent",
    ),
)
# docs:end helpdesk-actions

# docs:start helpdesk-projections
OPEN = ReadAccess()
"""Open on purpose: every reader of the tenant reads these rows (the v0.1 projections: the
spec's projection routes apply no policy). "My tickets" below is a view, not a protection."""

PROJECTIONS: tuple[Projection, ...] = (
    Projection(
        fqn=f"{TICKET}.queue",
        entity=TICKET,
        access=OPEN,
        label="Ticket queue",
        fields=("id", "title", "priority", "state", "assignee", "due_at", "created_at"),
        actions=(f"{TICKET}.create", f"{TICKET}.start", f"{TICKET}.escalate"),
        listing=ListOptions(
            filters=(
                Filter(field="state"),
                Filter(field="priority"),
                Filter(field="assignee", operators=("eq", "in", "null")),
                Filter(field="due_at", operators=("lt", "lte", "gt", "gte", "null")),
                Filter(field="created_at", operators=("gte", "lt")),
            ),
            sortable=("created_at", "due_at", "priority", "title"),
            default_sort=("-created_at",),
            search=("title",),
            default_page_size=50,
            indexes=(("state", "created_at"),),
        ),
    ),
    Projection(
        fqn=f"{TICKET}.detail",
        entity=TICKET,
        access=OPEN,
        label="Ticket",
        fields=(
            "id",
            "title",
            "description",
            "priority",
            "estimate_hours",
            "due_at",
            "billable",
            "budget",
            "state",
            "requester",
            "assignee",
            "resolution",
            "resolved_at",
            "created_at",
            "updated_at",
            "_version",
        ),
        actions=tuple(
            f"{TICKET}.{name}"
            for name in ("edit", "start", "resolve", "close", "reopen", "cancel", "escalate")
        ),
    ),
    # What other plugins record on a ticket (billing: the invoice of its billable work).
    Projection(
        fqn=f"{TICKET}.billing",
        entity=TICKET,
        access=OPEN,
        label="Tickets for billing",
        fields=("id", "title", "billable", "invoice", "updated_at", "_version"),
        actions=(f"{TICKET}.edit",),
    ),
    # "My tickets": a requester sees the tickets they requested, an agent every ticket of
    # the tenant. Filters, sort, search and pages apply inside that scope.
    Projection(
        fqn=f"{TICKET}.mine",
        entity=TICKET,
        label="My tickets",
        fields=("id", "title", "priority", "state", "requester", "assignee", "created_at"),
        actions=tuple(f"{TICKET}.{name}" for name in ("create", "start", "close", "reopen")),
        listing=ListOptions(
            filters=(Filter(field="state"), Filter(field="priority")),
            sortable=("created_at", "priority", "title"),
            default_sort=("-created_at",),
            search=("title",),
            default_page_size=50,
        ),
        access=ReadAccess(
            roles=("requester", "agent"),
            scope=RowScope(field="requester", exempt=("agent",)),
        ),
    ),
)
# docs:end helpdesk-projections


# docs:start own-ticket-policy
def own_ticket(ctx: ActionContext) -> bool:
    """Agents may act on any ticket; anyone else only on a ticket they requested. The shared
    anonymous actor owns nothing: one anonymous caller is not another."""
    if "agent" in ctx.roles:
        return True
    if ctx.actor_id == ANONYMOUS_ACTOR:
        return False
    return ctx.subject is not None and ctx.subject.get("requester") == ctx.actor_id


# docs:end own-ticket-policy


# docs:start escalate-effect
@dry_run_safe  # it changes the ticket through the runtime only
@refuses()  # it refuses nothing: the action declares its one refusal (a closed ticket)
def escalate(ctx: ActionContext) -> None:
    """Raise the ticket's priority to ``urgent`` (the action refuses a closed ticket)."""
    ctx.set("priority", "urgent")


# docs:end escalate-effect


# An example batch policy (not registered here: the plugin's tests register it for an action
# of their own, see docs/writing-plugins.md, "Availability and dry runs").
# docs:start batch-policy
@batch_policy
async def open_ticket_limit(contexts: Sequence[ActionContext]) -> Sequence[PolicyVerdict]:
    """A requester may have at most OPEN_TICKET_LIMIT open tickets: reopening one more is
    refused, with the reason. One read answers for every ticket asked about."""
    requesters = sorted({c.subject["requester"] for c in contexts if c.subject is not None})
    open_now = await contexts[0].data.find(
        TICKET,
        Condition(field="requester", operator="in", value=requesters),
        Condition(field="state", operator="eq", value="open"),
        limit=1000,
    )
    count = {name: 0 for name in requesters}
    for row in open_now:
        count[row["requester"]] += 1
    verdicts: list[PolicyVerdict] = []
    for ctx in contexts:
        requester = ctx.subject["requester"] if ctx.subject is not None else None
        if requester is not None and count[requester] >= OPEN_TICKET_LIMIT:
            verdicts.append(
                PolicyDenied(f"{requester} already has {OPEN_TICKET_LIMIT} open tickets")
            )
        else:
            verdicts.append(True)
    return verdicts


# docs:end batch-policy


# An example read policy (not registered here: the plugin's tests register it for a
# projection of their own, see docs/writing-plugins.md, "Read access").
# docs:start read-policy
def open_tickets_only(ctx: ReadContext) -> ReadPolicyResult:
    """Guests see open tickets only; a suspended reader nothing; anyone else every ticket."""
    if "suspended" in ctx.roles:
        return False  # 403 PolicyDenied
    if "guest" in ctx.roles:
        return Condition(field="state", operator="eq", value="open")
    return True


# docs:end read-policy


# docs:start helpdesk-hooks
@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return (ticket, notify.notification)


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return ACTIONS


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return (*PROJECTIONS, notify.inbox)


@hookimpl
def tessera_policies() -> Mapping[str, PolicyHandler]:
    return {"helpdesk.own_ticket": own_ticket}


@hookimpl
def tessera_effects() -> Mapping[str, EffectHandler]:
    return {"helpdesk.escalate": escalate}


@hookimpl
def tessera_subscribers() -> Sequence[Subscriber]:
    return notify.SUBSCRIBERS


@hookimpl
def tessera_timers() -> Sequence[Timer]:
    return timers.timers()


# docs:end helpdesk-hooks
