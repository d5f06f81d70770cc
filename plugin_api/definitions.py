"""Definitions a plugin contributes: fields, entities, workflows, actions, projections.

All definitions are immutable (frozen, keyword-only dataclasses holding tuples; a list given
for a tuple is stored as a tuple, and an enum's plain value as its member). The host
validates them when it compiles the metadata graph and refuses to start on any incoherence, so a
plugin author gets every mistake reported at startup, never at request time.

Names follow strict patterns because they become SQL identifiers:

* a *name* (field, transition) matches ``[a-z][a-z0-9]*(_[a-z0-9]+)*`` (lower snake case, no
  double or trailing underscore), at most 63 characters;
* an *FQN* is two or more names joined by dots, for example ``helpdesk.ticket`` (an entity) or
  ``helpdesk.ticket.create`` (an action or projection).
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeAlias, Union

from plugin_api._base import JSONScalar as JSONScalar  # public here, defined below access
from plugin_api._base import _as_tuples

if TYPE_CHECKING:
    from plugin_api.access import ReadAccess
    from plugin_api.listing import ListOptions
    from plugin_api.requirements import Requirement

JSONValue: TypeAlias = Union[JSONScalar, "Mapping[str, JSONValue]", "tuple[JSONValue, ...]"]
"""A JSON-compatible value as written in a definition (defaults, stamp literals)."""


class _NoDefault(enum.Enum):
    NO_DEFAULT = "NO_DEFAULT"

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Final = _NoDefault.NO_DEFAULT
"""Sentinel for a field without a default (distinct from a default of ``None``)."""

SYSTEM_FIELDS: Final[tuple[str, ...]] = ("id", "tenant_id", "created_at", "updated_at", "_version")
"""Columns every entity has, managed by the host. A plugin may not declare them."""


def _as_member(definition: object, name: str, kind: type[enum.Enum]) -> None:
    """Replace a plain value of enum ``kind`` (``"string"``) by its member; leave anything
    else for the graph compiler to report."""
    value = getattr(definition, name)
    if not isinstance(value, kind):
        with contextlib.suppress(ValueError, TypeError):
            object.__setattr__(definition, name, kind(value))


class WrittenBy(str, enum.Enum):
    """Who may write a field (plugin API 1.8, :attr:`Field.written_by`). The *owner* is the
    plugin that defines the entity."""

    OWNER = "owner"
    """Only the owning plugin: its actions (inputs, stamps, transitions), its effects
    (:meth:`~plugin_api.ActionContext.set`, the data API) and its subscribers. Another
    plugin's data-API write naming the field, or another plugin's action listing it, is
    refused."""
    OWNER_EFFECTS = "owner_effects"
    """As :attr:`OWNER`, and never from a request's inputs: only the owning plugin's stamps,
    effects and subscribers write it (a value the plugin computes, such as a number)."""


class FieldType(str, enum.Enum):
    """The writable field types: the six of the interface (spec 2.6) and ``reference``.

    A ``reference`` field holds the id of a row of another entity (its ``target``), in the
    same tenant: read and written as that id (a string), checked to exist on every write.
    """

    STRING = "string"
    INTEGER = "integer"
    DATETIME = "datetime"
    ENUM = "enum"
    MONEY = "money"
    BOOLEAN = "boolean"
    REFERENCE = "reference"


@dataclass(frozen=True, kw_only=True, slots=True)
class Field:
    """A typed, declared field of an entity.

    :param name: the field name (also its column name).
    :param type: one of :class:`FieldType` (its value, ``"string"``, is taken as the member).
    :param label: explicit label; without one, renderers get the humanised name
        (``due_at`` -> ``Due at``).
    :param nullable: whether the field accepts and stores null.
    :param default: a raw default in the write shape of the type, or :data:`NO_DEFAULT`.
        A field that is not nullable and has no default is *required* on create.
    :param max_length: advisory maximum length of a ``string`` (not enforced, as the
        interface says) unless ``enforce_max_length`` is set.
    :param options: the closed, ordered set of values of an ``enum``.
    :param currency: the ISO 4217 currency code of a ``money`` field.
    :param target: the FQN of the entity a ``reference`` field points at (any plugin's).
        Rows are never deleted by the v0.1 actions, so a referenced row cannot disappear;
        a future delete must refuse to remove a row that is still referenced.

    Constraints (plugin API 1.8), enforced on every write through the runtime (action
    inputs, stamps, :meth:`~plugin_api.ActionContext.set`, the data API); a value that
    breaks one is a 400 ``BadRequest`` naming the field and the rule. ``None`` (the
    default) declares nothing; null values are not checked (``nullable`` says whether null
    is allowed).

    :param min_length: minimum length of a ``string`` (in code points).
    :param enforce_max_length: make ``max_length`` a rule (``string``).
    :param pattern: a regular expression (Python :mod:`re` syntax) a ``string`` value must
        match as a whole (``re.fullmatch``).
    :param minimum: the smallest value of an ``integer`` (an int), or the smallest amount
        of a ``money`` field (an int or decimal text such as ``"0.01"``).
    :param maximum: the largest value, as ``minimum``.
    :param written_by: who may write the field (:class:`WrittenBy`); ``None``: anyone
        who may write the row.
    """

    name: str
    type: FieldType
    label: str | None = None
    nullable: bool = False
    default: JSONValue | _NoDefault = NO_DEFAULT
    max_length: int | None = None
    options: tuple[str, ...] = ()
    currency: str | None = None
    target: str | None = None
    min_length: int | None = None
    enforce_max_length: bool = False
    pattern: str | None = None
    minimum: int | str | None = None
    maximum: int | str | None = None
    written_by: WrittenBy | None = None

    def __post_init__(self) -> None:
        _as_member(self, "type", FieldType)
        _as_tuples(self, "options")
        if self.written_by is not None:
            _as_member(self, "written_by", WrittenBy)

    @property
    def has_default(self) -> bool:
        """True when the field declares a default (possibly ``None``)."""
        return self.default is not NO_DEFAULT

    @property
    def required(self) -> bool:
        """True when the field is not nullable and has no default."""
        return not self.nullable and not self.has_default


class StampSource(str, enum.Enum):
    """Where a stamped value comes from."""

    LITERAL = "literal"
    """A fixed value given in the definition (``None`` clears the field)."""
    ACTOR = "actor"
    """The acting actor's id (``X-Actor-Id``, ``anon`` by default)."""
    NOW = "now"
    """The current UTC time (datetime fields only)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Stamp:
    """A value the runtime writes into a field when an action runs.

    Use the constructors :meth:`literal`, :meth:`actor` and :meth:`now`.
    """

    field: str
    source: StampSource
    value: JSONValue = None

    def __post_init__(self) -> None:
        _as_member(self, "source", StampSource)

    @classmethod
    def literal(cls, field: str, value: JSONValue) -> Stamp:
        """Set ``field`` to ``value`` (a write-shape value; ``None`` clears it)."""
        return cls(field=field, source=StampSource.LITERAL, value=value)

    @classmethod
    def actor(cls, field: str) -> Stamp:
        """Set ``field`` to the acting actor's id."""
        return cls(field=field, source=StampSource.ACTOR)

    @classmethod
    def now(cls, field: str) -> Stamp:
        """Set ``field`` to the current UTC time."""
        return cls(field=field, source=StampSource.NOW)


@dataclass(frozen=True, kw_only=True, slots=True)
class Transition:
    """A move of the workflow from one of ``sources`` to ``target``, stamping fields.

    :param name: the transition name, unique within its workflow.
    :param sources: the states the transition may start from (one or more).
    :param target: the state it ends in.
    :param stamps: values written when the transition runs.
    """

    name: str
    sources: tuple[str, ...]
    target: str
    stamps: tuple[Stamp, ...] = ()

    def __post_init__(self) -> None:
        _as_tuples(self, "sources", "stamps")


@dataclass(frozen=True, kw_only=True, slots=True)
class Workflow:
    """The state machine of an entity.

    :param state_field: an ``enum`` field of the entity whose options are exactly the
        workflow's states, in order; it is seeded with ``initial`` on create.
    :param initial: the state of a newly created row.
    :param transitions: the allowed moves.
    """

    state_field: str
    initial: str
    transitions: tuple[Transition, ...]

    def __post_init__(self) -> None:
        _as_tuples(self, "transitions")

    @property
    def states(self) -> tuple[str, ...]:
        """Every state named by ``initial`` or a transition, in first-mention order."""
        seen: dict[str, None] = {self.initial: None}
        for transition in self.transitions:
            for state in (*transition.sources, transition.target):
                seen.setdefault(state, None)
        return tuple(seen)


@dataclass(frozen=True, kw_only=True, slots=True)
class Entity:
    """A stored entity: a table of typed fields, optionally governed by a workflow.

    :param fqn: dotted name, for example ``helpdesk.ticket``.
    :param fields: the declared fields, in declaration order (system fields are implicit).
    :param workflow: the entity's workflow, if any.
    :param access: the read floor of the entity (:class:`~plugin_api.access.ReadAccess`):
        every projection of the entity requires its roles, applies its row scope and its read
        policies, in addition to the projection's own ``access``. The floor also guards the
        entity's rows read through a reference of another entity (``project.key``): a reader
        it does not admit to a row reads null there. ``None``: no floor.
    :param display: the declared ``string`` or ``enum`` field that names a row as text
        (plugin API 1.8): a reference to the entity renders as this field's value in the
        ViewSchema 1.4.0 (``_display``) and in the console. ``None``: references to it
        render as the id.
    :param validators: names of entity validators (``tessera_validators``, plugin API 1.8)
        run on every create, update and transition of a row of the entity, whoever writes
        it (an action or any plugin's data API), in the writing transaction; any of them may
        refuse the write (:mod:`plugin_api.validators`).
    :param invariants: declared rules every write of a row of the entity meets, whoever
        writes it (:class:`~plugin_api.requirements.Requirement`, plugin API 1.10), checked
        on the row as it will be written, before the validators.
    :param label: the words a person reads for it (plugin API 1.10): console headings and
        links, the ViewSchema 1.5.0 ``labels`` and the OpenAPI summaries. ``None``: the
        humanised last part of the FQN (``ticket`` -> ``Ticket``).
    """

    fqn: str
    fields: tuple[Field, ...]
    workflow: Workflow | None = None
    access: ReadAccess | None = None
    display: str | None = None
    validators: tuple[str, ...] = ()
    invariants: tuple[Requirement, ...] = ()
    label: str | None = None

    def __post_init__(self) -> None:
        _as_tuples(self, "fields", "validators", "invariants")


@dataclass(frozen=True, kw_only=True, slots=True)
class CreateAction:
    """An action that creates a row.

    :param fqn: dotted name, for example ``helpdesk.ticket.create``.
    :param entity: FQN of the entity it creates.
    :param inputs: the declared fields it accepts, in order; any other input key is a 400.
    :param stamps: values stamped on the new row (for example the requester).
    :param roles: any-of role list; empty means no role is required.
    :param policies: names of custom policies (see ``tessera_policies``), all must allow.
    :param accepts_delegation: another plugin's effect may run this action (``ctx.data.run``)
        as the current caller, when that plugin declares it
        (:class:`~plugin_api.grants.RunsAction` with ``Authority.CALLER``; plugin API 1.9).
        Without it another plugin runs the action only as its own system identity.
    :param effect: name of a custom effect (see ``tessera_effects``) run after the insert
        values are prepared, in the same transaction.
    :param requires: declared conditions the action runs under
        (:class:`~plugin_api.requirements.Requirement`, plugin API 1.10), checked before its
        effect wherever it runs and foreseen by availability and dry runs. The same parameter
        exists on every action kind.
    :param label: the words a person reads for it (plugin API 1.10): console headings and
        links, the ViewSchema 1.5.0 ``labels`` and the OpenAPI summaries. ``None``: the
        humanised last part of the FQN (``create`` -> ``Create``).
    """

    fqn: str
    entity: str
    inputs: tuple[str, ...]
    stamps: tuple[Stamp, ...] = ()
    roles: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    effect: str | None = None
    accepts_delegation: bool = False
    requires: tuple[Requirement, ...] = ()
    label: str | None = None

    def __post_init__(self) -> None:
        _as_tuples(self, "inputs", "stamps", "roles", "policies", "requires")


class _AnyField(enum.Enum):
    ANY_FIELD = "ANY_FIELD"

    def __repr__(self) -> str:
        return "ANY_FIELD"


ANY_FIELD: Final = _AnyField.ANY_FIELD
"""``TransitionAction(stampable=ANY_FIELD)``: a request's inputs may set every declared field
but the workflow state field (and fields another plugin owns, or only effects write); the
default of plugins requiring plugin API 1.7 or older (plugin API 1.8)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TransitionAction:
    """An action that performs a workflow transition on an existing row.

    A request may carry arbitrary inputs: keys in ``stampable`` are validated and written
    to the row; every other key is accepted and kept only in the audit record. The
    transition's own stamps are written after the inputs, so they win.

    :param transition: the name of the workflow transition it performs.
    :param stampable: the fields a request's inputs may set. Unspecified (``None``): for a
        plugin that requires plugin API 1.8 or later (``TESSERA_PLUGIN_API``), no field
        (only the transition's declared stamps are written); for an older plugin, as
        :data:`ANY_FIELD`. Name the fields explicitly, or give :data:`ANY_FIELD` to let
        the inputs set every declared field but the state field.
    :param label: as :attr:`CreateAction.label` (plugin API 1.10).
    """

    fqn: str
    entity: str
    transition: str
    stampable: tuple[str, ...] | _AnyField | None = None
    roles: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    effect: str | None = None
    accepts_delegation: bool = False
    requires: tuple[Requirement, ...] = ()
    label: str | None = None

    def __post_init__(self) -> None:
        _as_tuples(self, "stampable", "roles", "policies", "requires")


@dataclass(frozen=True, kw_only=True, slots=True)
class UpdateAction:
    """An action that patches an existing row (partial-patch semantics).

    :param patchable: the closed list of fields a request may change, in order; it may be
        empty (an action whose custom effect does the work).
    :param label: as :attr:`CreateAction.label` (plugin API 1.10).
    """

    fqn: str
    entity: str
    patchable: tuple[str, ...]
    roles: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    effect: str | None = None
    accepts_delegation: bool = False
    requires: tuple[Requirement, ...] = ()
    label: str | None = None

    def __post_init__(self) -> None:
        _as_tuples(self, "patchable", "roles", "policies", "requires")


Action: TypeAlias = CreateAction | TransitionAction | UpdateAction
"""Any action definition."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Projection:
    """A read-only view of an entity, rendered as a ViewSchema.

    :param fqn: dotted name, for example ``helpdesk.ticket.queue``.
    :param entity: FQN of the entity it shows.
    :param fields: field names shown, in order; system fields are allowed, and (plugin API 1.8)
        a *followed field* ``"<reference>.<field>"`` (``"project.key"``): the field of the
        row a reference field of the entity points at, one hop, read-only, null when the
        reference is null or the reader may not read that row (its entity's read floor).
    :param actions: FQNs of actions offered with the view, in order (same entity).
    :param listing: what a client may filter, sort and search in the list form, and its
        page sizes (:class:`plugin_api.listing.ListOptions`); ``None``: nothing but paging.
    :param access: who may read it and which rows (:class:`plugin_api.access.ReadAccess`);
        ``None``: anyone who names the tenant reads every row, as in v0.1.
    :param label: the words a person reads for it (plugin API 1.10): console headings and
        links, the ViewSchema 1.5.0 ``labels`` and the OpenAPI summaries. ``None``: the
        humanised last part of the FQN (``queue`` -> ``Queue``).
    """

    fqn: str
    entity: str
    fields: tuple[str, ...]
    actions: tuple[str, ...] = ()
    listing: ListOptions | None = None
    access: ReadAccess | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        _as_tuples(self, "fields", "actions")
