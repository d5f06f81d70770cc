"""Alpha: one entity with a workflow, its actions, a projection, a policy and an effect."""

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
    hookimpl,
)

NOTE = Entity(
    fqn="alpha.note",
    fields=(
        Field(name="text", type=FieldType.STRING, max_length=200),
        Field(name="author", type=FieldType.STRING, nullable=True),
        Field(name="state", type=FieldType.ENUM, options=("draft", "done")),
    ),
    workflow=Workflow(
        state_field="state",
        initial="draft",
        transitions=(Transition(name="finish", sources=("draft",), target="done"),),
    ),
)


def _always(ctx: ActionContext) -> bool:
    return True


def _nothing(ctx: ActionContext) -> None:
    return None


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return [NOTE]


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return [
        CreateAction(
            fqn="alpha.note.create",
            entity="alpha.note",
            inputs=("text",),
            stamps=(Stamp.actor("author"),),
            policies=("alpha.always",),
        ),
        UpdateAction(fqn="alpha.note.edit", entity="alpha.note", patchable=("text",)),
        TransitionAction(
            fqn="alpha.note.finish",
            entity="alpha.note",
            transition="finish",
            effect="alpha.nothing",
        ),
    ]


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return [
        Projection(
            fqn="alpha.note.list",
            entity="alpha.note",
            fields=("id", "text", "state"),
            actions=("alpha.note.create", "alpha.note.finish"),
        )
    ]


@hookimpl
def tessera_policies() -> Mapping[str, PolicyHandler]:
    return {"alpha.always": _always}


@hookimpl
def tessera_effects() -> Mapping[str, EffectHandler]:
    return {"alpha.nothing": _nothing}
