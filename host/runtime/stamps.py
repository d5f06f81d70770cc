"""Values the runtime writes by itself: new ids and versions, stamps."""

from __future__ import annotations

from typing import Any

from host.fieldtypes import coerce_write
from host.graph.model import CompiledEntity
from host.runtime.actor import Actor
from plugin_api.definitions import Field, Stamp, StampSource


def stamp_value(entity: CompiledEntity, stamp: Stamp, actor: Actor, now: str) -> Any:
    """The database value ``stamp`` writes into its field of ``entity``."""
    field: Field = entity.fields[stamp.field]
    if stamp.source is StampSource.NOW:
        return now
    if stamp.source is StampSource.ACTOR:
        return coerce_write(field, actor.actor_id)
    return coerce_write(field, stamp.value)
