"""Version 3.1.0: version 3.0.0 with migration declarations (the removed option and state
mapped) and a default for the field made required, so that every row keeps its declared
rules."""

from __future__ import annotations

from collections.abc import Sequence

from plugin_api import (
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
    MapOptions,
    MapStates,
    Migration,
    Projection,
    Transition,
    TransitionAction,
    Workflow,
    hookimpl,
)

TESSERA_PLUGIN_API = "1.4"  # tessera_migrations

ITEM = Entity(
    fqn="evo.item",
    fields=(
        Field(name="title", type=FieldType.STRING, max_length=80),
        Field(name="size", type=FieldType.ENUM, options=("m", "l"), default="m"),
        Field(name="qty", type=FieldType.STRING, nullable=True),
        Field(name="code", type=FieldType.INTEGER, nullable=True),
        Field(name="price", type=FieldType.MONEY, currency="USD", nullable=True),
        Field(name="note", type=FieldType.STRING, default="-"),
        Field(name="status", type=FieldType.ENUM, options=("open", "closed")),
    ),
    workflow=Workflow(
        state_field="status",
        initial="open",
        transitions=(Transition(name="close", sources=("open",), target="closed"),),
    ),
)
INPUTS = ("title", "size", "qty", "code", "price", "note")


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return [ITEM]


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return [
        CreateAction(fqn="evo.item.create", entity="evo.item", inputs=INPUTS),
        TransitionAction(fqn="evo.item.close", entity="evo.item", transition="close"),
    ]


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return [
        Projection(
            fqn="evo.item.list",
            entity="evo.item",
            fields=("id", "status", *INPUTS),
            actions=("evo.item.close",),
        ),
    ]


@hookimpl
def tessera_migrations() -> Sequence[Migration]:
    return [
        MapOptions(entity="evo.item", field="size", mapping={"s": "m"}),
        MapStates(entity="evo.item", mapping={"archived": "closed"}),
    ]
