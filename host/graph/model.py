"""The compiled, immutable metadata graph the runtime and the HTTP layer work from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from host.graph.migrations import Migrations
from host.plugins import PluginInfo
from plugin_api.access import ReadPolicyHandler
from plugin_api.context import EffectHandler, PolicyHandler
from plugin_api.definitions import (
    Action,
    CreateAction,
    Entity,
    Field,
    Projection,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
)
from plugin_api.events import Subscriber
from plugin_api.validators import ValidatorHandler

H = TypeVar("H", EffectHandler, PolicyHandler, ReadPolicyHandler, Subscriber, ValidatorHandler)


@dataclass(frozen=True, kw_only=True, slots=True)
class CompiledEntity:
    """An entity with its fields indexed by name and its SQL table name."""

    definition: Entity
    plugin: PluginInfo
    fields: Mapping[str, Field]
    """Declared fields by name, in declaration order."""
    table_name: str
    transitions: Mapping[str, Transition]
    """Workflow transitions by name (empty without a workflow)."""
    targets: dict[str, CompiledEntity] = field(default_factory=dict, compare=False, repr=False)
    """Reference field name -> the entity it points at; filled by the compiler once every
    entity is compiled (references may form cycles), never changed afterwards."""

    @property
    def fqn(self) -> str:
        return self.definition.fqn

    @property
    def workflow(self) -> Workflow | None:
        return self.definition.workflow


@dataclass(frozen=True, kw_only=True, slots=True)
class CompiledAction:
    """An action bound to its entity (and to its transition, for a transition action)."""

    definition: Action
    plugin: PluginInfo
    entity: CompiledEntity
    transition: Transition | None = None

    @property
    def fqn(self) -> str:
        return self.definition.fqn

    @property
    def name(self) -> str:
        """The last segment of the FQN."""
        return self.definition.fqn.rsplit(".", 1)[-1]

    @property
    def kind(self) -> str:
        """``create``, ``transition`` or ``update``."""
        if isinstance(self.definition, CreateAction):
            return "create"
        if isinstance(self.definition, TransitionAction):
            return "transition"
        assert isinstance(self.definition, UpdateAction)
        return "update"

    @property
    def input_fields(self) -> tuple[Field, ...]:
        """The fields listed as inputs (create) or patchable (update); empty otherwise."""
        definition = self.definition
        if isinstance(definition, CreateAction):
            names = definition.inputs
        elif isinstance(definition, UpdateAction):
            names = definition.patchable
        else:
            names = ()
        return tuple(self.entity.fields[name] for name in names)


@dataclass(frozen=True, kw_only=True, slots=True)
class CompiledProjection:
    """A projection bound to its entity and its actions, in declared order."""

    definition: Projection
    plugin: PluginInfo
    entity: CompiledEntity
    actions: tuple[CompiledAction, ...]

    @property
    def fqn(self) -> str:
        return self.definition.fqn


@dataclass(frozen=True, kw_only=True, slots=True)
class RegisteredHandler(Generic[H]):
    """A named custom policy, effect, read policy, event subscriber or entity validator and
    the plugin that implements it."""

    name: str
    plugin: PluginInfo
    handler: H


@dataclass(frozen=True, kw_only=True, slots=True)
class Graph:
    """The merged, validated contributions of every plugin, with its canonical hash."""

    plugins: tuple[PluginInfo, ...]
    entities: Mapping[str, CompiledEntity]
    actions: Mapping[str, CompiledAction]
    projections: Mapping[str, CompiledProjection]
    policies: Mapping[str, RegisteredHandler[PolicyHandler]]
    effects: Mapping[str, RegisteredHandler[EffectHandler]]
    read_policies: Mapping[str, RegisteredHandler[ReadPolicyHandler]]
    subscribers: Mapping[str, RegisteredHandler[Subscriber]]
    """Event subscribers by name (not part of the canonical form: they change no schema and
    no HTTP contract)."""
    canonical: bytes
    """The canonical serialisation the hash is computed over (UTF-8 JSON)."""
    hash: str
    """Lower-case hex SHA-256 of :attr:`canonical`."""
    migrations: Migrations = field(default_factory=Migrations)
    """The plugins' migration declarations (not part of :attr:`canonical`)."""
    validators: Mapping[str, RegisteredHandler[ValidatorHandler]] = field(default_factory=dict)
    """Entity validators by name (plugin API 1.8; their names are in :attr:`canonical`)."""
    warnings: tuple[str, ...] = ()
    """What compiles but is probably a mistake (``tessera check`` prints them, a start logs
    them); not part of :attr:`canonical`."""
