"""Chores: parents add them, kids take them and finish them, and every finished chore gets a
receipt number (R-0001, R-0002, ...) the kid can show for their pocket money."""

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
    PolicyHandler,
    Projection,
    Stamp,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    WorkflowStateMismatch,
    hookimpl,
)

CHORE = "chores.chore"
EDITABLE = ("title", "notes", "points", "due_at", "reward", "outdoor")

chore = Entity(
    fqn=CHORE,
    fields=(
        Field(name="title", type=FieldType.STRING, max_length=80),
        Field(name="notes", type=FieldType.STRING, nullable=True),
        Field(name="points", type=FieldType.INTEGER, default=1),
        Field(name="due_at", type=FieldType.DATETIME, nullable=True),
        Field(name="reward", type=FieldType.MONEY, currency="EUR", nullable=True),
        Field(name="outdoor", type=FieldType.BOOLEAN, default=False),
        Field(name="state", type=FieldType.ENUM, options=("todo", "doing", "done")),
        Field(name="owner", type=FieldType.STRING, nullable=True),
        Field(name="assignee", type=FieldType.STRING, nullable=True),
        Field(name="done_at", type=FieldType.DATETIME, nullable=True),
        Field(name="receipt", type=FieldType.STRING, nullable=True),
    ),
    workflow=Workflow(
        state_field="state",
        initial="todo",
        transitions=(
            Transition(
                name="take", sources=("todo",), target="doing", stamps=(Stamp.actor("assignee"),)
            ),
            Transition(
                name="finish", sources=("doing",), target="done", stamps=(Stamp.now("done_at"),)
            ),
            Transition(
                name="redo",
                sources=("done",),
                target="todo",
                stamps=(Stamp.literal("done_at", None), Stamp.literal("assignee", None)),
            ),
        ),
    ),
)

ACTIONS: tuple[Action, ...] = (
    CreateAction(
        fqn=f"{CHORE}.add",
        entity=CHORE,
        inputs=EDITABLE,
        stamps=(Stamp.actor("owner"),),
        roles=("parent",),
    ),
    UpdateAction(fqn=f"{CHORE}.edit", entity=CHORE, patchable=EDITABLE, roles=("parent",)),
    # A kid may leave a note when taking a chore ("after school"): inputs naming a field are
    # stamped.
    TransitionAction(fqn=f"{CHORE}.take", entity=CHORE, transition="take", roles=("kid", "parent")),
    TransitionAction(
        fqn=f"{CHORE}.finish",
        entity=CHORE,
        transition="finish",
        stampable=("notes",),
        roles=("kid", "parent"),
        policies=("chores.assignee_only",),
        effect="chores.receipt",
    ),
    TransitionAction(
        fqn=f"{CHORE}.redo", entity=CHORE, transition="redo", stampable=(), roles=("parent",)
    ),
    UpdateAction(
        fqn=f"{CHORE}.double",
        entity=CHORE,
        patchable=(),
        roles=("parent",),
        effect="chores.double_points",
    ),
)

PROJECTIONS: tuple[Projection, ...] = (
    Projection(
        fqn=f"{CHORE}.board",
        entity=CHORE,
        fields=("id", "title", "points", "state", "assignee", "due_at", "created_at"),
        actions=(f"{CHORE}.add", f"{CHORE}.take", f"{CHORE}.finish"),
    ),
    Projection(
        fqn=f"{CHORE}.detail",
        entity=CHORE,
        fields=(
            "id",
            "title",
            "notes",
            "points",
            "due_at",
            "reward",
            "outdoor",
            "state",
            "owner",
            "assignee",
            "done_at",
            "receipt",
            "created_at",
            "updated_at",
            "_version",
        ),
        actions=tuple(f"{CHORE}.{name}" for name in ("edit", "take", "finish", "redo", "double")),
    ),
)


def assignee_only(ctx: ActionContext) -> bool:
    """Parents may finish any chore; a kid only the one they took."""
    if "parent" in ctx.roles:
        return True
    return ctx.subject is not None and ctx.subject.get("assignee") == ctx.actor_id


async def receipt(ctx: ActionContext) -> None:
    """Number the finished chore: R-0001, R-0002, ... per household (tenant)."""
    number = await ctx.next_sequence("chores.receipts")
    ctx.set("receipt", f"R-{number:04d}")


def double_points(ctx: ActionContext) -> None:
    """Double the points of a chore nobody finished yet."""
    assert ctx.subject is not None
    if ctx.subject["state"] == "done":
        raise WorkflowStateMismatch("A finished chore keeps its points")
    ctx.set("points", ctx.subject["points"] * 2)


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return (chore,)


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return ACTIONS


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return PROJECTIONS


@hookimpl
def tessera_policies() -> Mapping[str, PolicyHandler]:
    return {"chores.assignee_only": assignee_only}


@hookimpl
def tessera_effects() -> Mapping[str, EffectHandler]:
    return {"chores.receipt": receipt, "chores.double_points": double_points}
