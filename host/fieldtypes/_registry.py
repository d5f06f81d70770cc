"""The registry: one :class:`ValueType` per field type and per system column type, looked up
by :class:`FieldType` member or name; and the field-level entry points (null handling)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Final

import sqlalchemy as sa

from host.fieldtypes._base import ValueType, null_write
from host.fieldtypes._boolean import BooleanType
from host.fieldtypes._constraints import check_constraints
from host.fieldtypes._datetime import DatetimeType
from host.fieldtypes._number import IntegerType, MoneyType
from host.fieldtypes._system import IdentityType, SystemStringType, TimestampType, VersionType
from host.fieldtypes._text import EnumType, ReferenceType, StringType
from plugin_api.definitions import Field, FieldType

__all__ = [
    "BOOLEAN",
    "DATETIME",
    "ENUM",
    "FIELD_TYPES",
    "IDENTITY",
    "INTEGER",
    "MONEY",
    "REFERENCE",
    "REGISTRY",
    "STRING",
    "SYSTEM_STRING",
    "TIMESTAMP",
    "VERSION",
    "coerce_default",
    "coerce_write",
    "column_type",
    "named",
    "of",
    "render",
    "render_field",
]

STRING: Final = StringType()
INTEGER: Final = IntegerType()
DATETIME: Final = DatetimeType()
ENUM: Final = EnumType()
MONEY: Final = MoneyType()
BOOLEAN: Final = BooleanType()
REFERENCE: Final = ReferenceType()
IDENTITY: Final = IdentityType()
TIMESTAMP: Final = TimestampType()
VERSION: Final = VersionType()
SYSTEM_STRING: Final = SystemStringType()

_BY_MEMBER: Final = {
    t.field_type: t for t in (STRING, INTEGER, DATETIME, ENUM, MONEY, BOOLEAN, REFERENCE)
}
_MISSING: Final = [member.value for member in FieldType if member not in _BY_MEMBER]
if _MISSING:
    raise RuntimeError(f"FieldType members without a class in host.fieldtypes: {_MISSING}")
FIELD_TYPES: Final[Mapping[FieldType, ValueType]] = MappingProxyType(
    {member: _BY_MEMBER[member] for member in FieldType}
)
"""The type of each :class:`FieldType` member, in the enum's order."""

REGISTRY: Final[Mapping[str, ValueType]] = MappingProxyType(
    {t.name: t for t in (*FIELD_TYPES.values(), IDENTITY, TIMESTAMP, VERSION, SYSTEM_STRING)}
)
"""Every type by name: the field types, then the system column types."""

_LOOKUP: Final[Mapping[str, ValueType]] = MappingProxyType(
    {**REGISTRY, **{member: value_type for member, value_type in FIELD_TYPES.items()}}
)
# A str-mixin enum member hashes like its value only on some Python versions: key both.


def named(name: str) -> ValueType:
    """The type named ``name`` (a :class:`FieldType` member or a type name).

    :raises ValueError: no such type.
    """
    try:
        return _LOOKUP[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown field type {name!r}") from None


def of(field: Field) -> ValueType:
    """The type of a declared field."""
    return named(field.type)


def coerce_write(field: Field, value: object) -> object:
    """Validate a write-shape ``value`` for ``field`` and return its database value.

    Raises :class:`~plugin_api.errors.BadRequest` naming the field and what it expects when
    the value does not fit (including ``None`` for a field that is not nullable) or breaks
    one of the field's declared constraints (:mod:`host.fieldtypes._constraints`).
    """
    if value is None:
        return null_write(field)
    written = named(field.type).write(field, value)
    check_constraints(field, written)
    return written


@lru_cache(maxsize=1024)
def _cached_default(field: Field) -> object:
    return coerce_write(field, field.default)


def coerce_default(field: Field) -> object:
    """The database value of ``field``'s declared default (``field.has_default`` must hold).

    Raises :class:`~plugin_api.errors.BadRequest` if the declared default does not fit the
    field, so the graph compiler can call it once per field at startup to report bad
    definitions.
    """
    if not field.has_default:
        raise ValueError(f"field {field.name!r} has no default")
    try:
        hash(field)
    except TypeError:  # a default holding a dict (money): not cacheable
        return coerce_write(field, field.default)
    return _cached_default(field)


def render(field_type: str, value: object, currency: str | None = None) -> object:
    """Database value -> JSON-ready read shape of spec 2.6 (``None`` reads back as ``None``).

    ``field_type`` is any type's name or member; ``currency`` is required for ``money`` (an
    empty or null money column renders as ``None``).
    """
    value_type = named(field_type)
    field = Field(name=value_type.name, type=value_type.written_as, currency=currency)
    return value_type.renderer(field)(value)


def render_field(field: Field, value: object) -> object:
    """:func:`render` for a declared field."""
    return of(field).renderer(field)(value)


def column_type(field: Field) -> sa.types.TypeEngine[Any]:
    """The SQLAlchemy column type storing ``field``'s database value (a fresh instance)."""
    return of(field).column_type()
