"""Expense claims: an employee files and submits them, a manager approves or rejects, finance
pays an approved claim and gives it a reference (EXP-00001, ...).

Every reader of claims is an employee, a manager or finance, and an employee reads only their
own claims: the entity's read floor says so once for every projection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plugin_api import (
    Action,
    BatchPolicy,
    CreateAction,
    EffectHandler,
    Entity,
    Field,
    FieldType,
    Filter,
    ListOptions,
    PolicyHandler,
    Projection,
    ReadAccess,
    RowScope,
    Stamp,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    hookimpl,
)
from tessera_expenses.rules import CLAIM, monthly_cap, not_own, own_draft, pay

TESSERA_PLUGIN_API = "1.7"  # batch policies, dry_run_safe, ctx.data.history, read floors

EDITABLE = ("title", "amount", "category", "spent_at")

claim = Entity(
    fqn=CLAIM,
    fields=(
        Field(name="title", type=FieldType.STRING, max_length=120),
        Field(name="amount", type=FieldType.MONEY, currency="EUR"),
        Field(name="category", type=FieldType.ENUM, options=("travel", "meals", "office")),
        Field(name="spent_at", type=FieldType.DATETIME),
        Field(name="claimant", type=FieldType.STRING, nullable=True),
        Field(name="approver", type=FieldType.STRING, nullable=True),
        Field(name="reference", type=FieldType.STRING, nullable=True),
        Field(name="paid_at", type=FieldType.DATETIME, nullable=True),
        Field(
            name="state",
            type=FieldType.ENUM,
            options=("draft", "submitted", "approved", "rejected", "paid"),
        ),
    ),
    workflow=Workflow(
        state_field="state",
        initial="draft",
        transitions=(
            Transition(name="submit", sources=("draft",), target="submitted"),
            Transition(
                name="approve",
                sources=("submitted",),
                target="approved",
                stamps=(Stamp.actor("approver"),),
            ),
            Transition(name="reject", sources=("submitted",), target="rejected"),
            Transition(name="revise", sources=("rejected",), target="draft"),
            Transition(
                name="pay", sources=("approved",), target="paid", stamps=(Stamp.now("paid_at"),)
            ),
        ),
    ),
    access=ReadAccess(
        roles=("employee", "manager", "finance"),
        scope=RowScope(field="claimant", exempt=("manager", "finance")),
    ),
)


def _step(name: str, roles: tuple[str, ...], **more: object) -> TransitionAction:
    return TransitionAction(
        fqn=f"{CLAIM}.{name}",
        entity=CLAIM,
        transition=name,
        stampable=(),
        roles=roles,
        **more,  # type: ignore[arg-type]
    )


ACTIONS: tuple[Action, ...] = (
    CreateAction(
        fqn=f"{CLAIM}.file",
        entity=CLAIM,
        inputs=EDITABLE,
        stamps=(Stamp.actor("claimant"),),
        roles=("employee",),
    ),
    UpdateAction(
        fqn=f"{CLAIM}.edit",
        entity=CLAIM,
        patchable=EDITABLE,
        roles=("employee",),
        policies=("expenses.own_draft",),
    ),
    _step("submit", ("employee",), policies=("expenses.own_draft", "expenses.monthly_cap")),
    _step("approve", ("manager",), policies=("expenses.not_own",)),
    _step("reject", ("manager",), policies=("expenses.not_own",)),
    _step("revise", ("employee",)),
    _step("pay", ("finance",), effect="expenses.pay"),
)

PROJECTIONS: tuple[Projection, ...] = (
    Projection(
        fqn=f"{CLAIM}.mine",
        entity=CLAIM,
        fields=("id", "title", "amount", "category", "state", "spent_at"),
        actions=(f"{CLAIM}.file", f"{CLAIM}.submit"),
        listing=ListOptions(
            filters=(
                Filter(field="state"),
                Filter(field="category", operators=("eq", "in")),
                Filter(field="spent_at", operators=("gte", "lt")),
            ),
            sortable=("spent_at", "amount"),
            default_sort=("-spent_at",),
            search=("title",),
            default_page_size=50,
        ),
    ),
    Projection(
        fqn=f"{CLAIM}.detail",
        entity=CLAIM,
        fields=(
            "id",
            "title",
            "amount",
            "category",
            "spent_at",
            "claimant",
            "approver",
            "reference",
            "paid_at",
            "state",
            "created_at",
            "updated_at",
            "_version",
        ),
        actions=tuple(
            f"{CLAIM}.{name}" for name in ("edit", "submit", "approve", "reject", "revise", "pay")
        ),
    ),
    # What managers and finance work on.
    Projection(
        fqn=f"{CLAIM}.queue",
        entity=CLAIM,
        fields=("id", "title", "amount", "claimant", "state"),
        actions=(f"{CLAIM}.approve", f"{CLAIM}.reject", f"{CLAIM}.pay"),
        listing=ListOptions(
            filters=(Filter(field="state"), Filter(field="claimant")),
            sortable=("amount",),
            default_sort=("-amount",),
        ),
        access=ReadAccess(roles=("manager", "finance")),
    ),
)


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return (claim,)


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return ACTIONS


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return PROJECTIONS


@hookimpl
def tessera_policies() -> Mapping[str, PolicyHandler | BatchPolicy]:
    return {
        "expenses.own_draft": own_draft,
        "expenses.monthly_cap": monthly_cap,
        "expenses.not_own": not_own,
    }


@hookimpl
def tessera_effects() -> Mapping[str, EffectHandler]:
    return {"expenses.pay": pay}
