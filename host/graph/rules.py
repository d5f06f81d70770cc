"""The compiler's checks of entity rules (plugin API 1.8): who may write an owned field
(``Field.written_by``), the default of a transition's stampable fields, and the entities'
validator names."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from host.graph.access import scope_field
from host.graph.checks import Say, check_roles, names_of
from host.graph.model import CompiledAction, CompiledEntity
from host.plugins import PluginInfo
from plugin_api.conditions import AnyOf, Condition, Operator
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
from plugin_api.errors import TesseraError
from plugin_api.requirements import Requirement, RuleValue

__all__ = [
    "check_ownership",
    "check_requirements",
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


_SYSTEM_CONDITION_FIELDS = ("id", "created_at", "updated_at")
_RULE_SOURCES = ("actor", "row", "input")


def _check_named(entity: CompiledEntity, name: object, what: str, say: Say) -> None:
    if name in _SYSTEM_CONDITION_FIELDS or scope_field(entity, name) is not None:
        return
    say(
        f"{what} {name!r} is not a field of {entity.fqn!r} nor a field of an entity one of "
        "its references points at"
    )


def _check_condition(entity: CompiledEntity, condition: object, where: str, say: Say) -> None:
    if not isinstance(condition, Condition):
        say(f"{where}: expected a Condition or AnyOf, got {type(condition).__name__}")
        return
    _check_named(entity, condition.field, f"{where}: condition field", say)
    if not isinstance(condition.operator, Operator):
        say(f"{where}: unknown operator {condition.operator!r}")
    value = condition.value
    if isinstance(value, RuleValue):
        if value.source not in _RULE_SOURCES:
            say(f"{where}: a RuleValue's source is one of {', '.join(_RULE_SOURCES)}")
        elif value.source == "row":
            _check_named(entity, value.name, f"{where}: row_field", say)
        elif value.source == "actor" and value.name != "id":
            say(f"{where}: the actor's value is its id (ACTOR_ID)")


def check_requirements(requirements: object, entity: CompiledEntity, what: str, say: Say) -> None:
    """Every declared requirement (an action's ``requires``, an entity's ``invariants``,
    plugin API 1.10) is a :class:`~plugin_api.requirements.Requirement` with a message, an
    error class of the taxonomy and conditions naming fields of ``entity`` (or one hop
    through a reference). Operators and literal values are checked against the field types
    when the runtime compiles them (:mod:`host.runtime.requirements`)."""
    if not isinstance(requirements, tuple):
        say(f"{what} must be a tuple of Requirement, got {type(requirements).__name__}")
        return
    for index, requirement in enumerate(requirements):
        where = f"{what}[{index}]"
        if not isinstance(requirement, Requirement):
            say(f"{where} must be a Requirement, got {type(requirement).__name__}")
            continue
        if not isinstance(requirement.message, str) or not requirement.message:
            say(f"{where}: message must be a non-empty string")
        refuse = requirement.refuse
        if not (isinstance(refuse, type) and issubclass(refuse, TesseraError)):
            say(f"{where}: refuse must be an error class of plugin_api.errors, got {refuse!r}")
        check_roles(requirement.exempt, say)
        items = requirement.items()
        if not items:
            say(f"{where}: when names no condition")
        for item in items:
            inner = item.conditions if isinstance(item, AnyOf) else (item,)
            for condition in inner:
                _check_condition(entity, condition, where, say)
