"""Tessera test plugin beta: a plain entity without a workflow (the module is the plugin)."""

from __future__ import annotations

from collections.abc import Sequence

from plugin_api import Action, CreateAction, Entity, Field, FieldType, hookimpl


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return [Entity(fqn="beta.item", fields=(Field(name="label", type=FieldType.STRING),))]


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return [CreateAction(fqn="beta.item.create", entity="beta.item", inputs=("label",))]
