"""Merge every plugin's contributions into one validated, immutable :class:`Graph`.

:func:`compile_graph` reports every problem it finds (never only the first) in one
:class:`GraphError`; each message names the plugin (distribution and version) and the FQN or
name at fault.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, TypeVar

from host.graph.access import OPEN_ACCESS_FROM, check_access, is_open, opened, read_floor_warnings
from host.graph.canonical import canonical_form, graph_hash
from host.graph.checks import (
    TABLE_NAME_MAX_LENGTH,
    Legacy,
    Say,
    check_field,
    check_roles,
    check_stamps,
    check_workflow,
    dotted_problem,
    duplicates,
    names_of,
    table_name,
)
from host.graph.compat import ROLE_NAMES, SHOWN_FIELDS, Gates, Rule
from host.graph.deprecations import deprecation_warnings
from host.graph.follow import FOLLOWABLE_SYSTEM, follow, is_followed
from host.graph.grants import GRANTS_FROM, compile_grants
from host.graph.hidden import withheld_fields
from host.graph.labels import check_label, plugin_labels
from host.graph.listing import check_listing
from host.graph.migration_checks import compile_migrations
from host.graph.model import (
    CompiledAction,
    CompiledEntity,
    CompiledProjection,
    Graph,
    RegisteredHandler,
)
from host.graph.rules import (
    STAMPABLE_NOTHING_FROM,
    check_ownership,
    check_requirements,
    check_validator_names,
    resolve_stampable,
)
from host.graph.steps import steps_of
from host.graph.timers import compile_timers, with_timers
from host.plugin_version import requires_at_least
from host.plugins import LoadedPlugins, PluginContribution, PluginInfo, contributions
from plugin_api.definitions import (
    SYSTEM_FIELDS,
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
    Projection,
    Stamp,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
)
from plugin_api.events import Subscriber

__all__ = ["GraphError", "compile_graph"]

D = TypeVar("D", bound=Entity | Action | Projection)
_ACTION_TYPES = (CreateAction, TransitionAction, UpdateAction)


class GraphError(Exception):
    """The plugins do not form a coherent graph; ``errors`` holds every problem found."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors: tuple[str, ...] = tuple(errors)
        super().__init__("\n".join(self.errors))

    def __str__(self) -> str:
        return "\n".join(self.errors)


@dataclass(slots=True)
class _Errors:
    gates: Gates
    messages: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def about(self, plugin: PluginInfo, subject: str) -> Say:
        """A reporter prefixing the plugin and the definition at fault."""
        return lambda message: self.messages.append(f"{plugin.describe()}: {subject}: {message}")

    def legacy(self, plugin: PluginInfo, subject: str, rule: Rule) -> Legacy | None:
        """Where a breach of ``rule`` by ``plugin`` goes: ``None`` when the plugin requires
        the rule's plugin API (the breach is an error), else a warning reporter."""
        if self.gates.enforces(plugin, rule):
            return None
        return self.gates.warner(plugin, subject, rule, self.warnings.append)


def _merge(
    kind: str, items: Iterable[tuple[PluginInfo, D]], errors: _Errors
) -> dict[str, tuple[PluginInfo, D]]:
    """Index definitions by FQN; a second definition of an FQN is an error naming both."""
    merged: dict[str, tuple[PluginInfo, D]] = {}
    for plugin, definition in items:
        fqn = definition.fqn
        say = errors.about(plugin, f"{kind} {fqn!r}")
        problem = dotted_problem(fqn, min_parts=2)
        if problem is not None:
            say(f"FQN {problem}")
            if not isinstance(fqn, str):
                continue
        if fqn in merged:
            first = merged[fqn][0]
            if first == plugin:
                say(f"is defined twice by {plugin.describe()}")
            else:
                say(f"is also defined by {first.describe()}")
            continue
        merged[fqn] = (plugin, definition)
    return merged


def _handlers(
    kind: str, items: Iterable[tuple[PluginInfo, Mapping[str, Any]]], errors: _Errors
) -> dict[str, RegisteredHandler[Any]]:
    """Index named policies or effects; a name implemented twice names both plugins."""
    registry: dict[str, RegisteredHandler[Any]] = {}
    for plugin, handlers in items:
        for name, handler in handlers.items():
            problem = dotted_problem(name, min_parts=1)
            if problem is not None:
                errors.about(plugin, f"{kind} {name!r}")(f"name {problem}")
            if name in registry:
                first = registry[name].plugin
                errors.messages.append(
                    f"{kind} {name!r} is implemented by both {first.describe()} "
                    f"and {plugin.describe()}"
                )
                continue
            registry[name] = RegisteredHandler(name=name, plugin=plugin, handler=handler)
    return dict(sorted(registry.items()))


# ---------------------------------------------------------------------------------------------
# Entities
# ---------------------------------------------------------------------------------------------


def _compile_entity(entity: Entity, plugin: PluginInfo, errors: _Errors) -> CompiledEntity:
    say = errors.about(plugin, f"entity {entity.fqn!r}")
    name = table_name(entity.fqn)
    if len(name) > TABLE_NAME_MAX_LENGTH:
        say(f"table name {name!r} is longer than {TABLE_NAME_MAX_LENGTH} characters")
    fields: dict[str, Field] = {}
    declared = entity.fields if isinstance(entity.fields, tuple) else ()
    if not isinstance(entity.fields, tuple):
        say(f"fields must be a tuple of Field, got {type(entity.fields).__name__}")
    for item in declared:
        if not isinstance(item, Field):
            say(f"field {item!r} is not a Field")
            continue
        check_field(item, errors.about(plugin, f"entity {entity.fqn!r} field {item.name!r}"))
        if isinstance(item.name, str):
            if item.name in fields:
                say(f"field {item.name!r} is declared twice")
            else:
                fields[item.name] = item
    _check_display(entity.display, fields, say)
    transitions = {}
    if isinstance(entity.workflow, Workflow):
        transitions = check_workflow(entity.workflow, fields, say)
    elif entity.workflow is not None:
        say(f"workflow must be a Workflow or None, got {type(entity.workflow).__name__}")
    return CompiledEntity(
        definition=entity,
        plugin=plugin,
        fields=MappingProxyType(fields),
        table_name=name,
        transitions=MappingProxyType(transitions),
    )


_DISPLAY_TYPES: Final = frozenset({FieldType.STRING, FieldType.ENUM})
"""The field types a display field may have: those whose value renders as text."""


def _check_display(display: object, fields: Mapping[str, Field], say: Say) -> None:
    if display is None:
        return
    field = fields.get(display) if isinstance(display, str) else None
    if field is None:
        say(f"display {display!r} is not a declared field of the entity")
    elif field.type not in _DISPLAY_TYPES:
        say(f"display field {display!r} must be a string or enum field (it renders as text)")


def _check_references(entities: Mapping[str, CompiledEntity], errors: _Errors) -> None:
    """Every reference field's target is an entity some installed plugin defines; each
    entity learns its targets (:attr:`CompiledEntity.targets`)."""
    for fqn, entity in entities.items():
        for item in entity.fields.values():
            target = item.target
            if item.type is not FieldType.REFERENCE or not isinstance(target, str):
                continue
            if target in entities:
                entity.targets[item.name] = entities[target]
            else:
                say = errors.about(entity.plugin, f"entity {fqn!r} field {item.name!r}")
                say(f"references entity {target!r}, which no installed plugin defines")


def _check_shown_field(entity: CompiledEntity, name: str, say: Say) -> None:
    """A projection field: a field of the entity, a system field, or a followed field."""
    if name in entity.fields or name in SYSTEM_FIELDS:
        return
    followed = follow(entity, name)
    if followed is None:
        if is_followed(name):
            reference = name.partition(".")[0]
            say(f"shows {name!r}, but {reference!r} is not a reference field of {entity.fqn!r}")
        else:
            say(f"shows {name!r}, which is not a field of entity {entity.fqn!r}")
        return
    _, target, field = followed
    if field not in target.fields and field not in FOLLOWABLE_SYSTEM:
        say(f"shows {name!r}, but {field!r} is not a field of entity {target.fqn!r}")


# ---------------------------------------------------------------------------------------------
# Actions
# ---------------------------------------------------------------------------------------------


def _state_field(entity: CompiledEntity) -> str | None:
    workflow = entity.workflow
    return workflow.state_field if isinstance(workflow, Workflow) else None


def _field_list(names: object, what: str, entity: CompiledEntity, say: Say) -> tuple[str, ...]:
    """Check a list of writable field names (create inputs, update patchable, stampable)."""
    listed = names_of(names, what, say)
    for name in listed:
        if name not in entity.fields:
            system = " (a system field, not writable)" if name in SYSTEM_FIELDS else ""
            say(f"{what} name {name!r}, which is not a field of entity {entity.fqn!r}{system}")
        elif name == _state_field(entity):
            say(f"{what} name the workflow state field {name!r}, which only transitions change")
    for name in duplicates(listed):
        say(f"{what} name {name!r} twice")
    return listed


def _check_create(action: CreateAction, entity: CompiledEntity, say: Say) -> None:
    inputs = set(_field_list(action.inputs, "inputs", entity, say))
    state_field = _state_field(entity)
    check_stamps(action.stamps, entity.fields, state_field, say)
    stamps = action.stamps if isinstance(action.stamps, tuple) else ()
    stamped = {stamp.field for stamp in stamps if isinstance(stamp, Stamp)}
    for name, item in entity.fields.items():
        if item.required and name != state_field and name not in inputs | stamped:
            say(f"required field {name!r} of entity {entity.fqn!r} is neither an input nor stamped")


def _check_action_kind(action: Action, entity: CompiledEntity, say: Say) -> Transition | None:
    """Check what depends on the kind of action; return the transition it performs."""
    if isinstance(action, CreateAction):
        _check_create(action, entity, say)
    elif isinstance(action, UpdateAction):
        _field_list(action.patchable, "patchable", entity, say)
    elif entity.workflow is None:
        say(f"is a transition action, but entity {entity.fqn!r} has no workflow")
    else:
        if action.stampable is not None:
            _field_list(action.stampable, "stampable", entity, say)
        transition = entity.transitions.get(action.transition)
        if transition is not None:
            return transition
        known = ", ".join(entity.transitions) or "none"
        say(
            f"transition {action.transition!r} is not a transition of the workflow of "
            f"entity {entity.fqn!r} (known: {known})"
        )
    return None


def _check_handlers(
    action: Action,
    plugin: PluginInfo,
    policies: Mapping[str, object],
    effects: Mapping[str, object],
    errors: _Errors,
) -> None:
    used = f"used by action {action.fqn!r} of {plugin.describe()}"
    say = errors.about(plugin, f"action {action.fqn!r}")
    for name in names_of(action.policies, "policies", say):
        if name not in policies:
            errors.messages.append(
                f"custom policy {name!r} {used} is implemented by no installed plugin"
            )
    effect = action.effect
    if effect is not None and not isinstance(effect, str):
        say(f"effect must be a name or None, got {effect!r}")
    elif effect is not None and effect not in effects:
        errors.messages.append(
            f"custom effect {effect!r} {used} is implemented by no installed plugin"
        )


def _compile_action(
    action: Action,
    plugin: PluginInfo,
    entities: Mapping[str, CompiledEntity],
    errors: _Errors,
) -> CompiledAction | None:
    say = errors.about(plugin, f"action {action.fqn!r}")
    check_roles(action.roles, say, errors.legacy(plugin, f"action {action.fqn!r}", ROLE_NAMES))
    entity = entities.get(action.entity) if isinstance(action.entity, str) else None
    if entity is None:
        say(f"refers to entity {action.entity!r}, which no installed plugin defines")
        return None
    transition = _check_action_kind(action, entity, say)
    check_ownership(action, plugin, entity, say)
    return CompiledAction(
        definition=action,
        plugin=plugin,
        entity=entity,
        transition=transition,
        steps=steps_of(action, entity.definition, transition),
    )


# ---------------------------------------------------------------------------------------------
# Projections
# ---------------------------------------------------------------------------------------------


def _compile_projection(
    projection: Projection,
    plugin: PluginInfo,
    entities: Mapping[str, CompiledEntity],
    actions: Mapping[str, CompiledAction],
    read_policies: Mapping[str, object],
    errors: _Errors,
    others: Sequence[Projection],
) -> CompiledProjection | None:
    """``others``: every projection of the graph (what the older form of the shown-fields
    rule asks, :mod:`host.graph.hidden`)."""
    say = errors.about(plugin, f"projection {projection.fqn!r}")
    entity = entities.get(projection.entity) if isinstance(projection.entity, str) else None
    if entity is None:
        say(f"refers to entity {projection.entity!r}, which no installed plugin defines")
    shown = names_of(projection.fields, "fields", say)
    if entity is not None:
        for name in shown:
            _check_shown_field(entity, name, say)
    for name in duplicates(shown):
        say(f"shows field {name!r} twice")
    offered = names_of(projection.actions, "actions", say)
    for name in duplicates(offered):
        say(f"offers action {name!r} twice")
    compiled: list[CompiledAction] = []
    for name in dict.fromkeys(offered):
        action = actions.get(name)
        if action is None:
            say(f"offers action {name!r}, which no installed plugin defines")
        elif entity is not None and action.entity.fqn != entity.fqn:
            say(f"offers action {name!r} of entity {action.entity.fqn!r}, not {entity.fqn!r}")
        else:
            compiled.append(action)
    if entity is None:
        return None
    legacy = errors.legacy(plugin, f"projection {projection.fqn!r}", SHOWN_FIELDS)
    hidden: dict[str, list[str]] | None = None if legacy is None else {}
    check_listing(projection.listing, entity, say, shown, hidden)
    withheld = withheld_fields(hidden, projection, others, legacy) if legacy and hidden else None
    check_access(projection.access, entity, read_policies, say)
    return CompiledProjection(
        definition=projection,
        plugin=plugin,
        entity=entity,
        actions=tuple(compiled),
        withheld=withheld or frozenset(),
    )


# ---------------------------------------------------------------------------------------------
# The whole graph
# ---------------------------------------------------------------------------------------------


def _of(
    contribs: Sequence[PluginContribution], pick: Callable[[PluginContribution], Iterable[D]]
) -> list[tuple[PluginInfo, D]]:
    return [(c.plugin, item) for c in contribs for item in pick(c)]


def _valid(
    items: Iterable[tuple[PluginInfo, D]],
    kinds: type | tuple[type, ...],
    what: str,
    errors: _Errors,
) -> list[tuple[PluginInfo, D]]:
    """Drop (and report) definitions of the wrong class; plugins are third-party code."""
    good = []
    for plugin, item in items:
        if isinstance(item, kinds):
            good.append((plugin, item))
        else:
            errors.messages.append(f"{plugin.describe()}: {item!r} is not {what} definition")
    return good


def _subscribers(
    contribs: Sequence[PluginContribution],
    entities: Mapping[str, CompiledEntity],
    actions: Mapping[str, CompiledAction],
    errors: _Errors,
) -> dict[str, RegisteredHandler[Subscriber]]:
    """Index event subscribers by name; each must name existing actions and entities."""
    registry = _handlers(
        "subscriber",
        ((c.plugin, {s.name: s for s in c.subscribers}) for c in contribs),
        errors,
    )
    for name, registered in registry.items():
        say = errors.about(registered.plugin, f"subscriber {name!r}")
        subscriber = registered.handler
        if not callable(subscriber.handler):
            say("handler must be an async function")
        for fqn in subscriber.actions:
            if fqn not in actions:
                say(f"no action {fqn!r} in the graph")
        for fqn in subscriber.entities:
            if fqn not in entities:
                say(f"no entity {fqn!r} in the graph")
        for fqn in subscriber.states:
            if fqn not in entities or entities[fqn].workflow is None:
                say(f"states names {fqn!r}, which is not an entity with a workflow")
        timeout = subscriber.timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            say(f"timeout_s must be a positive number of seconds, got {timeout!r}")
    return registry


def compile_graph(loaded: LoadedPlugins) -> Graph:
    """Validate and merge the contributions of ``loaded`` into an immutable graph.

    :raises GraphError: listing every problem, including the loader's errors.
    """
    errors = _Errors(Gates(loaded), list(loaded.errors))
    contribs = contributions(loaded)
    for contribution in contribs:
        errors.messages.extend(contribution.errors)
    policies = _handlers("policy", ((c.plugin, c.policies) for c in contribs), errors)
    effects = _handlers("effect", ((c.plugin, c.effects) for c in contribs), errors)
    read_policies = _handlers(
        "read policy", ((c.plugin, c.read_policies) for c in contribs), errors
    )
    validators = _handlers("validator", ((c.plugin, c.validators) for c in contribs), errors)
    modern = {
        info.name
        for info, plugin in loaded.plugins
        if requires_at_least(plugin, STAMPABLE_NOTHING_FROM)
    }

    entity_defs = _merge(
        "entity", _valid(_of(contribs, lambda c: c.entities), Entity, "an entity", errors), errors
    )
    opening = {  # an empty ReadAccess() is open on purpose (host.graph.access)
        info.name for info, plugin in loaded.plugins if requires_at_least(plugin, OPEN_ACCESS_FROM)
    }
    entities = {
        fqn: _compile_entity(opened(entity, plugin.name in opening), plugin, errors)
        for fqn, (plugin, entity) in sorted(entity_defs.items())
    }
    _check_references(entities, errors)
    migrations = compile_migrations(
        ((c.plugin, item) for c in contribs for item in c.migrations), entities, errors.messages
    )
    action_defs = _merge(
        "action",
        _valid(_of(contribs, lambda c: c.actions), _ACTION_TYPES, "an action", errors),
        errors,
    )
    actions: dict[str, CompiledAction] = {}
    for fqn, (plugin, declared) in sorted(action_defs.items()):
        action = resolve_stampable(declared, plugin.name in modern)
        _check_handlers(action, plugin, policies, effects, errors)
        compiled_action = _compile_action(action, plugin, entities, errors)
        if compiled_action is not None:
            actions[fqn] = compiled_action
    projection_defs = _merge(
        "projection",
        _valid(_of(contribs, lambda c: c.projections), Projection, "a projection", errors),
        errors,
    )
    projections: dict[str, CompiledProjection] = {}
    every_projection = [projection for _, projection in projection_defs.values()]
    declared_open = {
        fqn
        for fqn, (plugin, projection) in projection_defs.items()
        if plugin.name in opening and is_open(projection.access)
    }
    for fqn, (plugin, projection) in sorted(projection_defs.items()):
        compiled_projection = _compile_projection(
            opened(projection, plugin.name in opening),
            plugin,
            entities,
            actions,
            read_policies,
            errors,
            every_projection,
        )
        if compiled_projection is not None:
            projections[fqn] = compiled_projection
    subscribers = _subscribers(contribs, entities, actions, errors)
    held = frozenset(
        info.name for info, plugin in loaded.plugins if requires_at_least(plugin, GRANTS_FROM)
    )
    grants = compile_grants(contribs, held, actions, entities, errors.messages.append)
    timers = compile_timers(contribs, entities, actions, errors.messages.append)
    for fqn, entity in entities.items():
        say = errors.about(entity.plugin, f"entity {fqn!r}")
        check_access(entity.definition.access, entity, read_policies, say)
        check_requirements(entity.definition.invariants, entity, "invariants", say)
    for fqn, bound in actions.items():
        say = errors.about(bound.plugin, f"action {fqn!r}")
        check_requirements(bound.definition.requires, bound.entity, "requires", say)
    check_validator_names(entities.values(), validators, errors.messages.append)
    labelled: list[CompiledEntity | CompiledAction | CompiledProjection] = [
        *entities.values(),
        *actions.values(),
        *projections.values(),
    ]
    for item in labelled:
        check_label(item.definition.label, errors.about(item.plugin, repr(item.fqn)))
    labels = plugin_labels(loaded, lambda plugin: errors.about(plugin, "TESSERA_PLUGIN_LABEL"))
    if errors.messages:
        raise GraphError(errors.messages)

    try:
        canonical = canonical_form(
            entities=[e.definition for e in entities.values()],
            actions=[a.definition for a in actions.values()],
            projections=[p.definition for p in projections.values()],
            policies=policies,
            effects=effects,
            read_policies=read_policies,
            validators=validators,
        )
        canonical = with_timers(canonical, timers)
    except (TypeError, ValueError) as exc:  # a value JSON cannot hold exactly
        raise GraphError([f"the graph has no canonical JSON form: {exc}"]) from exc
    return Graph(
        plugins=tuple(info for info, _ in loaded.plugins),
        entities=MappingProxyType(entities),
        actions=MappingProxyType(actions),
        projections=MappingProxyType(projections),
        policies=MappingProxyType(policies),
        effects=MappingProxyType(effects),
        read_policies=MappingProxyType(read_policies),
        subscribers=MappingProxyType(subscribers),
        validators=MappingProxyType(validators),
        grants=MappingProxyType(grants),
        timers=timers,
        canonical=canonical,
        hash=graph_hash(canonical),
        migrations=migrations,
        plugin_apis=errors.gates.declared,
        plugin_labels=MappingProxyType(dict(labels)),
        warnings=(
            *errors.warnings,
            *read_floor_warnings(entities, projections, declared_open),
            *deprecation_warnings(loaded),
        ),
    )
