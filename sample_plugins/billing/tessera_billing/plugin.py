"""The billing plugin: invoices whose numbers are gapless per tenant."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plugin_api import (
    Action,
    ActionContext,
    CreateAction,
    EffectHandler,
    Entity,
    Field,
    FieldType,
    Filter,
    ListOptions,
    Projection,
    ReadAccess,
    Stamp,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    dry_run_safe,
    hookimpl,
)

TESSERA_PLUGIN_API = "1.11"  # dry_run_safe (1.7), labels (1.10), an open ReadAccess() (1.11)
OPEN = ReadAccess()
"""Open on purpose: every reader of the tenant reads the v0.1 list and detail (the spec's
projection routes apply no policy); the clerks' desk below is a view for clerks."""

TESSERA_PLUGIN_LABEL = "Billing"
"""How people read the plugin's name (plugin API 1.10; an older host ignores it)."""
INVOICE = "billing.invoice"
NUMBER_SEQUENCE = "billing.invoice.number"

invoice = Entity(
    fqn=INVOICE,
    display="customer",  # a reference to an invoice shows its customer
    label="Invoice",
    fields=(
        Field(name="customer", type=FieldType.STRING, max_length=80),
        Field(name="amount", type=FieldType.MONEY, currency="USD"),
        Field(name="lines", type=FieldType.INTEGER, default=1),
        Field(name="number", type=FieldType.STRING, nullable=True),
        Field(name="issued_at", type=FieldType.DATETIME, nullable=True),
        Field(name="paid", type=FieldType.BOOLEAN, default=False),
        Field(name="status", type=FieldType.ENUM, options=("draft", "issued", "paid", "void")),
    ),
    workflow=Workflow(
        state_field="status",
        initial="draft",
        transitions=(
            Transition(
                name="issue", sources=("draft",), target="issued", stamps=(Stamp.now("issued_at"),)
            ),
            Transition(
                name="pay",
                sources=("issued",),
                target="paid",
                stamps=(Stamp.literal("paid", True),),
            ),
            Transition(name="void", sources=("issued",), target="void"),
        ),
    ),
)

ACTIONS: tuple[Action, ...] = (
    CreateAction(
        fqn=f"{INVOICE}.create",
        entity=INVOICE,
        inputs=("customer", "amount", "lines"),
        roles=("clerk",),
        label="New invoice",
    ),
    UpdateAction(
        fqn=f"{INVOICE}.amend",
        entity=INVOICE,
        patchable=("customer", "amount", "lines"),
        roles=("clerk",),
        label="Amend",
    ),
    TransitionAction(
        fqn=f"{INVOICE}.issue",
        entity=INVOICE,
        transition="issue",
        stampable=(),
        roles=("clerk",),
        effect="billing.assign_number",
        label="Issue",
    ),
    # No transition stamps inputs: the number the issue effect assigns stays the number.
    TransitionAction(
        fqn=f"{INVOICE}.pay",
        entity=INVOICE,
        transition="pay",
        stampable=(),
        roles=("clerk", "accountant"),
        label="Mark paid",
    ),
    TransitionAction(
        fqn=f"{INVOICE}.void",
        entity=INVOICE,
        transition="void",
        stampable=(),
        roles=("accountant",),
        label="Void",
    ),
)

PROJECTIONS: tuple[Projection, ...] = (
    Projection(
        fqn=f"{INVOICE}.list",
        entity=INVOICE,
        access=OPEN,
        label="Invoices",
        fields=("id", "number", "customer", "amount", "status", "issued_at"),
        actions=(f"{INVOICE}.create", f"{INVOICE}.issue"),
        listing=ListOptions(
            filters=(
                Filter(field="status"),
                Filter(field="customer", operators=("eq", "contains")),
                Filter(field="amount", operators=("lt", "lte", "gt", "gte")),
                Filter(field="issued_at", operators=("gte", "lt", "null")),
            ),
            sortable=("issued_at", "amount", "customer", "number"),
            default_sort=("-issued_at",),
            search=("customer", "number"),
            default_page_size=50,
        ),
    ),
    Projection(
        fqn=f"{INVOICE}.detail",
        entity=INVOICE,
        access=OPEN,
        label="Invoice",
        fields=(
            "id",
            "customer",
            "amount",
            "lines",
            "number",
            "issued_at",
            "paid",
            "status",
            "created_at",
            "updated_at",
            "_version",
        ),
        actions=tuple(f"{INVOICE}.{name}" for name in ("amend", "issue", "pay", "void")),
    ),
)

# docs:start clerk-projection
# The clerks' desk: invoices with their lines, readable only with the ``clerk`` role
# (anyone else gets 403 PolicyDenied and nothing is read).
DESK = Projection(
    fqn=f"{INVOICE}.desk",
    entity=INVOICE,
    label="Clerks' desk",
    fields=("id", "number", "customer", "amount", "lines", "status", "paid", "updated_at"),
    actions=tuple(f"{INVOICE}.{name}" for name in ("create", "amend", "issue", "pay")),
    listing=ListOptions(
        filters=(Filter(field="status"), Filter(field="paid")),
        sortable=("updated_at", "amount"),
        default_sort=("-updated_at",),
        search=("customer", "number"),
        default_page_size=50,
    ),
    access=ReadAccess(roles=("clerk",)),
)
# docs:end clerk-projection


# docs:start assign-number-effect
@dry_run_safe  # the counter is a row of the action's transaction: a dry run gives it back
async def assign_number(ctx: ActionContext) -> None:
    """Give the invoice the tenant's next number: INV-00001, INV-00002, ..."""
    number = await ctx.next_sequence(NUMBER_SEQUENCE)
    ctx.set("number", f"INV-{number:05d}")


# docs:end assign-number-effect


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return (invoice,)


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return ACTIONS


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return (*PROJECTIONS, DESK)


@hookimpl
def tessera_effects() -> Mapping[str, EffectHandler]:
    return {"billing.assign_number": assign_number}
