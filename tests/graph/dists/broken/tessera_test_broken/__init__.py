"""Tessera test plugin with several mistakes, each of which the compiler must report."""

from __future__ import annotations

from collections.abc import Sequence

from plugin_api import (
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
    Projection,
    TransitionAction,
    hookimpl,
)


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return [
        Entity(
            fqn="broken.thing",
            fields=(
                Field(name="name", type=FieldType.STRING),
                Field(name="size", type=FieldType.ENUM, options=("s", "m"), default="xl"),
            ),
        )
    ]


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return [
        CreateAction(fqn="broken.ghost.create", entity="broken.ghost", inputs=("name",)),
        CreateAction(fqn="broken.thing.create", entity="broken.thing", inputs=("size",)),
        TransitionAction(
            fqn="broken.thing.close", entity="broken.thing", transition="close", effect="broken.fx"
        ),
    ]


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return [Projection(fqn="broken.thing.list", entity="broken.thing", fields=("id", "colour"))]
