"""Tessera test plugin declaring the entry-point name ``alpha``, which another dist uses."""

from __future__ import annotations

from collections.abc import Sequence

from plugin_api import Entity, Field, FieldType, hookimpl


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return [Entity(fqn="clash.thing", fields=(Field(name="x", type=FieldType.STRING),))]
