"""Billing for helpdesk work: a second plugin of the billing distribution, loaded only with
the helpdesk (its reference fields name ``helpdesk.ticket``, so without the helpdesk the host
refuses to start, naming this plugin).

A *charge* bills the work done on a billable ticket. Its effect cooperates with the helpdesk
through the typed data API only (no SQL): it reads the ticket, creates the invoice and
records the invoice on the ticket, all in the charge's transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plugin_api import (
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
    Projection,
    Requirement,
    WorkflowStateMismatch,
    dry_run_safe,
    hookimpl,
)

TESSERA_PLUGIN_API = "1.7"  # ctx.data and reference fields (1.3), dry_run_safe (1.7)
TESSERA_PLUGIN_LABEL = "Billing of tickets"
"""How people read the plugin's name (plugin API 1.10)."""
CHARGE = "billing.charge"
TICKET = "helpdesk.ticket"

charge = Entity(
    fqn=CHARGE,
    label="Charge",
    fields=(
        Field(name="ticket", type=FieldType.REFERENCE, target=TICKET),
        Field(name="hours", type=FieldType.INTEGER),
        Field(name="amount", type=FieldType.MONEY, currency="USD"),
        Field(name="invoice", type=FieldType.REFERENCE, target="billing.invoice", nullable=True),
    ),
)

ACTIONS: tuple[Action, ...] = (
    CreateAction(
        fqn=f"{CHARGE}.create",
        entity=CHARGE,
        inputs=("ticket", "hours", "amount"),
        roles=("clerk",),
        effect="billing.invoice_ticket",
        # Declared (plugin API 1.10): checked through the reference before the effect runs.
        requires=(
            Requirement(
                when=Condition(field="ticket.billable", value=True),
                refuse=WorkflowStateMismatch,
                message="The ticket is not billable",
            ),
            Requirement(
                when=Condition(field="ticket.invoice", operator="null", value=True),
                refuse=WorkflowStateMismatch,
                message="The ticket is already invoiced",
            ),
        ),
        label="Charge a ticket",
    ),
)

PROJECTIONS: tuple[Projection, ...] = (
    Projection(
        fqn=f"{CHARGE}.list",
        entity=CHARGE,
        label="Charges",
        fields=("id", "ticket", "hours", "amount", "invoice", "created_at"),
        actions=(f"{CHARGE}.create",),
        # A reference is filterable like any column (indexed by tenant and value).
        listing=ListOptions(filters=(Filter(field="ticket"), Filter(field="invoice"))),
    ),
)


# docs:start invoice-ticket-effect
@dry_run_safe  # it reads and writes through ctx.data only
async def invoice_ticket(ctx: ActionContext) -> None:
    """Invoice a billable ticket once: create the invoice, link it, record it on the ticket."""
    ticket_id = ctx.changes["ticket"]  # the host checked it exists in this tenant
    ticket = await ctx.data.get(TICKET, ticket_id)
    assert ticket is not None  # billable and not invoiced: the action's requirements
    invoice = await ctx.data.create(
        "billing.invoice",
        {
            "customer": ticket["requester"] or "unknown",
            "amount": ctx.changes["amount"],
            "lines": 1,
        },
    )
    ctx.set("invoice", invoice["id"])
    # Guarded by the version read above: a concurrent change of the ticket is a 409.
    await ctx.data.patch(TICKET, ticket_id, {"invoice": invoice["id"]})


# docs:end invoice-ticket-effect


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return (charge,)


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return ACTIONS


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return PROJECTIONS


@hookimpl
def tessera_effects() -> Mapping[str, EffectHandler]:
    return {"billing.invoice_ticket": invoice_ticket}
