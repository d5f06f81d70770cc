"""Migration declarations: how a plugin version carries its stored data across a change.

A plugin returns them from :func:`~plugin_api.hookspecs.tessera_migrations`. They are read by
``tessera migrate --plan`` / ``--apply`` (and by the startup check) when the database's
recorded graph differs from the installed one. They are *not* part of the graph's hash: a
declaration only says how to get from an older graph to this one, so a plugin keeps
shipping it (it is ignored once no database needs it).

Every declaration names the entity and fields by their **installed** (new) names. A
declaration is matched against the database's recorded graph, never against a plugin
version number, so it works from any older version the database may be at:

* :class:`ConvertField` applies when the recorded field has type ``from_type`` and the
  installed one ``to_type``;
* :class:`RenameField` / :class:`RenameEntity` apply when the recorded graph has the old
  name and not the new one (renames chain: ``a -> b`` and ``b -> c`` take ``a`` to ``c``);
* :class:`MapOptions` / :class:`MapStates` apply to the options or workflow states the
  installed field no longer has, for the rows still holding them.

Values: a conversion receives the stored value in its *read shape* (what the HTTP surface
shows: ``"HIGH"``, ``3``, ``True``, ``{"amount": "1.50", "currency": "EUR"}``, RFC 3339
text) and returns one in the *write shape* of the new type (what an action input carries);
the host validates it as it validates an input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeAlias

from plugin_api.definitions import FieldType, JSONScalar, JSONValue, _as_member

__all__ = [
    "CannotConvert",
    "ConvertField",
    "ConvertFunction",
    "MapOptions",
    "MapStates",
    "Migration",
    "RenameEntity",
    "RenameField",
]


class CannotConvert(Exception):
    """Raised by a :data:`ConvertFunction`: this value has no equivalent in the new type.

    The message (optional) is shown in the plan as the reason. The row is then treated as
    unconvertible: ``--apply`` needs ``--allow unconvertible`` and fills the field with its
    default (or null when it is nullable), and refuses when the field has neither.
    """


ConvertFunction: TypeAlias = Callable[[JSONValue], JSONValue]
"""Old value (read shape, never ``None``) -> new value (write shape of the new type, or
``None`` for null). Raise :class:`CannotConvert` for a value that has no equivalent; any other
exception counts the same, with its text as the reason. It must be a pure function: the
host calls it once per stored value while planning and again while applying."""


def _frozen(definition: object, name: str) -> None:
    value = getattr(definition, name)
    if isinstance(value, Mapping) and not isinstance(value, MappingProxyType):
        object.__setattr__(definition, name, MappingProxyType(dict(value)))


@dataclass(frozen=True, kw_only=True, slots=True)
class ConvertField:
    """How the values of ``entity.field`` are converted when its type changes.

    Give exactly one of ``mapping`` and ``function``.

    :param entity: the entity's FQN (its installed name).
    :param field: the field's installed name.
    :param from_type: the type the database's recorded field has.
    :param to_type: the installed field's type (a declaration whose ``to_type`` is not the
        field's type is a startup error: it could never apply).
    :param mapping: old value (read shape: the text of a string or enum, an integer, a
        boolean) -> new value (write shape). A value missing from it cannot be converted.
    :param function: a :data:`ConvertFunction`, for conversions a table cannot express.
    """

    entity: str
    field: str
    from_type: FieldType
    to_type: FieldType
    mapping: Mapping[JSONScalar, JSONValue] | None = None
    function: ConvertFunction | None = None

    def __post_init__(self) -> None:
        _as_member(self, "from_type", FieldType)
        _as_member(self, "to_type", FieldType)
        _frozen(self, "mapping")


@dataclass(frozen=True, kw_only=True, slots=True)
class RenameField:
    """``entity.old`` is now called ``new``: the column is renamed, its values kept.

    :param entity: the entity's FQN (its installed name).
    :param old: the field's name in the older graph.
    :param new: the installed field's name.
    """

    entity: str
    old: str
    new: str


@dataclass(frozen=True, kw_only=True, slots=True)
class RenameEntity:
    """Entity ``old`` is now ``new``: the table is renamed, its rows kept.

    Audit records are never rewritten: those written before the rename keep naming ``old``
    (the database's graph history records the rename).
    """

    old: str
    new: str


@dataclass(frozen=True, kw_only=True, slots=True)
class MapOptions:
    """Rows holding an option ``entity.field`` no longer has get ``mapping[option]``.

    :param mapping: removed option -> one of the installed options (or ``None`` when the
        field is nullable). A removed option held by rows and missing here makes
        ``--apply`` refuse, naming the rows.
    """

    entity: str
    field: str
    mapping: Mapping[str, str | None]

    def __post_init__(self) -> None:
        _frozen(self, "mapping")


@dataclass(frozen=True, kw_only=True, slots=True)
class MapStates:
    """Rows sitting in a workflow state the installed workflow no longer has move to
    ``mapping[state]`` (the state field of ``entity``'s workflow). Unmapped removed states
    with rows in them make ``--apply`` refuse, naming the rows."""

    entity: str
    mapping: Mapping[str, str]

    def __post_init__(self) -> None:
        _frozen(self, "mapping")


Migration: TypeAlias = ConvertField | RenameField | RenameEntity | MapOptions | MapStates
"""Any migration declaration."""
