"""The compiled, immutable metadata graph the runtime and the HTTP layer work from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from host.graph.migrations import Migrations
from host.graph.steps import ALWAYS, STEP_ERRORS, Step, declared_refusals
from host.graph.timerdefs import Timers
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
from plugin_api.errors import TesseraError
from plugin_api.events import Subscriber
from plugin_api.grants import RunsAction
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
    steps: tuple[Step, ...] = ()
    """The steps its chain runs, in order (:func:`host.graph.steps.steps_of`): the engine
    runs those and no other, the OpenAPI document lists their errors (:meth:`refusals`)."""

    @property
    def fqn(self) -> str:
        return self.definition.fqn

    def refusals(self) -> tuple[type[TesseraError], ...]:
        """Every error its chain can answer with: those of every action, of each of its
        :attr:`steps`, and of its declared conditions; each class once, in that order."""
        found: list[type[TesseraError]] = [*ALWAYS]
        for step in self.steps:
            found += STEP_ERRORS[step]
        if Step.CONDITIONS in self.steps or Step.INVARIANTS in self.steps:
            found += declared_refusals(self.definition, self.entity.definition)
        return tuple(dict.fromkeys(found))

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
    withheld: frozenset[str] = frozenset()
    """Fields whose declared filter and search the list does not offer: it does not show
    them, and its plugin requires a plugin API older than the rule that refuses such a
    listing (1.7; :mod:`host.graph.hidden`)."""

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
class PluginGrants:
    """What one plugin declared about other plugins' actions and entities (``tessera_grants``,
    plugin API 1.9; :mod:`plugin_api.grants`)."""

    held: bool
    """Whether the plugin requires plugin API 1.9, so that its declarations bind it (an older
    plugin keeps the earlier behaviour: nested actions as the caller, reads without floors)."""
    runs: Mapping[str, RunsAction] = field(default_factory=dict)
    """Another plugin's action FQN -> how this plugin may run it."""
    reads: frozenset[str] = frozenset()
    """Other plugins' entities this plugin reads whole (:class:`~plugin_api.SystemRead`)."""


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
    grants: Mapping[str, PluginGrants] = field(default_factory=dict)
    """Plugin name -> its declared authority over other plugins' actions and entities
    (plugin API 1.9; not part of :attr:`canonical`, listed by ``tessera graph``)."""
    timers: Timers = field(default_factory=Timers)
    """The plugins' timers (plugin API 1.10; :mod:`host.graph.timers`; in :attr:`canonical`)."""
    warnings: tuple[str, ...] = ()
    """What compiles but is probably a mistake (``tessera check`` prints them, a start logs
    them); not part of :attr:`canonical`."""
    plugin_apis: Mapping[str, str] = field(default_factory=dict)
    """The plugin API each plugin requires, by plugin name ("1.0" when it requires nothing):
    a rule added later applies to it only from that version on (docs/compatibility.md)."""
    plugin_labels: Mapping[str, str] = field(default_factory=dict)
    """Plugin name -> its label for people (plugin API 1.10, :mod:`host.graph.labels`); not
    part of :attr:`canonical`."""
