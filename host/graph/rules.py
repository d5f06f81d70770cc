"""The compiler's checks of entity rules (plugin API 1.8): who may write an owned field
(``Field.written_by``), the default of a transition's stampable fields, and the entities'
validator names."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from host.graph.checks import Say, names_of
from host.graph.model import CompiledAction, CompiledEntity
from host.plugins import PluginInfo
from plugin_api.definitions import (
    ANY_FIELD,
    Action,
    CreateAction,
    Field,
    Stamp,
    TransitionAction,
    UpdateAction,
    WrittenBy,
)

__all__ = [
    "check_ownership",
    "check_validator_names",
    "may_write",
    "resolve_stampable",
    "stampable_fields",
]

STAMPABLE_NOTHING_FROM = "1.8"
"""Plugins requiring this plugin API or later get ``stampable=()`` when they leave it out."""


def resolve_stampable(action: Action, modern: bool) -> Action:
    """A transition action with its ``stampable`` made explicit: ``None`` (unspecified) is
    ``()`` for a ``modern`` plugin (one requiring plugin API 1.8 or later), and both
    ``None`` of an older plugin and :data:`~plugin_api.ANY_FIELD` are ``None`` ("every
    field"), the form the graph's hash has always given it."""
    if not isinstance(action, TransitionAction):
        return action
    if action.stampable is ANY_FIELD:
        return dataclasses.replace(action, stampable=None)
    if action.stampable is None and modern:
        return dataclasses.replace(action, stampable=())
    return action


def may_write(
    entity: CompiledEntity, field: Field, plugin: PluginInfo | None, *, from_inputs: bool
) -> bool:
    """Whether ``plugin`` may write ``field`` of ``entity`` (``from_inputs``: from a
    request's inputs). ``None``: no plugin (a write nobody owns)."""
    if field.written_by is None:
        return True
    if plugin is None or plugin.name != entity.plugin.name:
        return False
    return not (from_inputs and field.written_by is WrittenBy.OWNER_EFFECTS)


def stampable_fields(action: CompiledAction) -> tuple[str, ...]:
    """The fields a transition action's inputs may set: its ``stampable`` as compiled, or
    for ``None`` every declared field but the state field and those its plugin may not
    write from inputs."""
    definition = action.definition
    assert isinstance(definition, TransitionAction)
    if isinstance(definition.stampable, tuple):
        return definition.stampable
    entity = action.entity
    workflow = entity.workflow
    state = workflow.state_field if workflow else None
    return tuple(
        name
        for name, field in entity.fields.items()
        if name != state and may_write(entity, field, action.plugin, from_inputs=True)
    )


def _written(action: Action) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fields ``action`` writes from a request's inputs, and those it stamps."""
    if isinstance(action, CreateAction):
        stamps = action.stamps if isinstance(action.stamps, tuple) else ()
        stamped = tuple(
            s.field for s in stamps if isinstance(s, Stamp) and isinstance(s.field, str)
        )
        return action.inputs, stamped
    if isinstance(action, UpdateAction):
        return action.patchable, ()
    stampable = action.stampable
    return (stampable if isinstance(stampable, tuple) else ()), ()


def check_ownership(action: Action, plugin: PluginInfo, entity: CompiledEntity, say: Say) -> None:
    """An action writes an owned field only if its plugin owns the entity, and a field
    only effects write never from the inputs; a transition of an entity whose state field
    is owned belongs to the owner."""
    owner = entity.plugin
    foreign = plugin.name != owner.name
    inputs, stamped = _written(action)
    for via, names in (("takes as input", inputs), ("stamps", stamped)):
        for name in names if isinstance(names, tuple) else ():
            field = entity.fields.get(name) if isinstance(name, str) else None
            if field is None or field.written_by is None:
                continue
            if foreign:
                say(
                    f"{via} field {name!r} of entity {entity.fqn!r}, which only "
                    f"{owner.describe()} writes (written_by={field.written_by.value})"
                )
            elif field.written_by is WrittenBy.OWNER_EFFECTS and via == "takes as input":
                say(
                    f"takes as input field {name!r} of entity {entity.fqn!r}, which only "
                    "stamps and effects write (written_by=owner_effects)"
                )
    workflow = entity.workflow
    if foreign and isinstance(action, TransitionAction) and workflow is not None:
        state = entity.fields.get(workflow.state_field)
        if state is not None and state.written_by is not None:
            say(
                f"moves the workflow of entity {entity.fqn!r}, whose state field "
                f"{state.name!r} only {owner.describe()} writes"
            )


def check_validator_names(
    entities: Iterable[CompiledEntity], validators: Mapping[str, object], said: Say
) -> None:
    """Every validator an entity names is implemented by some installed plugin."""
    for entity in entities:
        for name in names_of(entity.definition.validators, "validators", said):
            if name not in validators:
                said(
                    f"{entity.plugin.describe()}: entity {entity.fqn!r}: validator {name!r} "
                    "is implemented by no installed plugin"
                )
