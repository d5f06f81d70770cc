"""Version 2.0.0: additive (a new entity, new fields with a default or nullable, a new option)."""

from __future__ import annotations

from collections.abc import Sequence

from plugin_api import (
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
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
        Field(name="size", type=FieldType.ENUM, options=("s", "m", "l", "xl"), default="m"),
        Field(name="color", type=FieldType.STRING, nullable=True),
        Field(name="qty", type=FieldType.INTEGER, nullable=True),
        Field(name="code", type=FieldType.STRING, nullable=True),
        Field(name="price", type=FieldType.MONEY, currency="EUR", nullable=True),
        Field(name="note", type=FieldType.STRING, nullable=True),
        Field(name="status", type=FieldType.ENUM, options=("open", "closed", "archived")),
        Field(name="priority", type=FieldType.INTEGER, default=3),
        Field(name="flagged", type=FieldType.BOOLEAN, default=False),
        Field(
            name="budget",
            type=FieldType.MONEY,
            currency="EUR",
            default={"amount": "9.50", "currency": "EUR"},
        ),
        Field(name="memo", type=FieldType.STRING, nullable=True),
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
BIN = Entity(fqn="evo.bin", fields=(Field(name="label", type=FieldType.STRING),))
TAG = Entity(fqn="evo.tag", fields=(Field(name="name", type=FieldType.STRING),))
INPUTS = ("title", "size", "color", "qty", "code", "price", "note", "priority", "memo")


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return [ITEM, TAG, BIN]


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return [
        CreateAction(fqn="evo.item.create", entity="evo.item", inputs=INPUTS),
        TransitionAction(fqn="evo.item.close", entity="evo.item", transition="close"),
        TransitionAction(fqn="evo.item.archive", entity="evo.item", transition="archive"),
        CreateAction(fqn="evo.tag.create", entity="evo.tag", inputs=("name",)),
        CreateAction(fqn="evo.bin.create", entity="evo.bin", inputs=("label",)),
    ]


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return [
        Projection(
            fqn="evo.item.list",
            entity="evo.item",
            fields=("id", "status", "flagged", "budget", *INPUTS),
            actions=("evo.item.close",),
        ),
        Projection(fqn="evo.tag.list", entity="evo.tag", fields=("id", "name")),
        Projection(fqn="evo.bin.list", entity="evo.bin", fields=("id", "label")),
    ]
