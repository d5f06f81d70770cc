"""Version 1.2.0: version 1.0.0 whose item list sorts on the title (a new list index)."""

from __future__ import annotations

from collections.abc import Sequence

from plugin_api import (
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
    ListOptions,
    Projection,
    Transition,
    TransitionAction,
    Workflow,
    hookimpl,
)

ITEM = Entity(
    fqn="evo.item",
    fields=(
        Field(name="title", type=FieldType.STRING, max_length=80),
        Field(name="size", type=FieldType.ENUM, options=("s", "m", "l"), default="m"),
        Field(name="color", type=FieldType.STRING, nullable=True),
        Field(name="qty", type=FieldType.INTEGER, nullable=True),
        Field(name="code", type=FieldType.STRING, nullable=True),
        Field(name="price", type=FieldType.MONEY, currency="EUR", nullable=True),
        Field(name="note", type=FieldType.STRING, nullable=True),
        Field(name="status", type=FieldType.ENUM, options=("open", "closed", "archived")),
    ),
    workflow=Workflow(
        state_field="status",
        initial="open",
        transitions=(
            Transition(name="close", sources=("open",), target="closed"),
            Transition(name="archive", sources=("closed",), target="archived"),
        ),
    ),
)
TAG = Entity(fqn="evo.tag", fields=(Field(name="name", type=FieldType.STRING),))
INPUTS = ("title", "size", "color", "qty", "code", "price", "note")


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return [ITEM, TAG]


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return [
        CreateAction(fqn="evo.item.create", entity="evo.item", inputs=INPUTS),
        TransitionAction(fqn="evo.item.close", entity="evo.item", transition="close"),
        TransitionAction(fqn="evo.item.archive", entity="evo.item", transition="archive"),
        CreateAction(fqn="evo.tag.create", entity="evo.tag", inputs=("name",)),
    ]


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return [
        Projection(
            fqn="evo.item.list",
            entity="evo.item",
            fields=("id", "status", *INPUTS),
            actions=("evo.item.close",),
            listing=ListOptions(sortable=("title",)),
        ),
        Projection(fqn="evo.tag.list", entity="evo.tag", fields=("id", "name")),
    ]
