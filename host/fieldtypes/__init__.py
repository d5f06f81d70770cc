"""The field-type registry: one class per type of stored value, owning everything about it.

A :class:`ValueType` says how a value is written (:meth:`~ValueType.write`), read
(:meth:`~ValueType.renderer`), stored (:meth:`~ValueType.column_type`), described
(:meth:`~ValueType.write_schema`, :meth:`~ValueType.read_schema`,
:meth:`~ValueType.type_options`), filtered and sorted (:attr:`~ValueType.operators`,
:attr:`~ValueType.ordering`, :meth:`~ValueType.operand`, :meth:`~ValueType.parse_text`,
:meth:`~ValueType.keyset_value`) and converted from another type
(:meth:`~ValueType.accept`). Every :class:`~plugin_api.definitions.FieldType` member has one
(:data:`FIELD_TYPES`); so do the system columns (:data:`IDENTITY`, :data:`TIMESTAMP`,
:data:`VERSION`, :data:`SYSTEM_STRING`), so a list column's type is always one of
:data:`REGISTRY`. docs/field-types.md says how to add one.

This package is the values layer: it imports only ``plugin_api`` and SQLAlchemy types.
"""

from host.fieldtypes._base import ORDERED, Ordering, Renderer, Schema, Unconvertible, ValueType
from host.fieldtypes._boolean import BooleanType
from host.fieldtypes._constraints import bound_of, check_constraints, constrained, pattern_of
from host.fieldtypes._datetime import (
    DATETIME_TEXT_LENGTH,
    DatetimeType,
    format_datetime,
    now_db,
    parse_datetime,
    render_datetime,
)
from host.fieldtypes._number import (
    DECIMAL_PATTERN,
    INT64_MAX,
    INT64_MIN,
    MONEY_TEXT_MAX_LENGTH,
    IntegerType,
    MoneyType,
)
from host.fieldtypes._registry import (
    BOOLEAN,
    DATETIME,
    ENUM,
    FIELD_TYPES,
    IDENTITY,
    INTEGER,
    MONEY,
    REFERENCE,
    REGISTRY,
    STRING,
    SYSTEM_STRING,
    TIMESTAMP,
    VERSION,
    coerce_default,
    coerce_write,
    column_type,
    named,
    of,
    render,
    render_field,
)
from host.fieldtypes._system import (
    ULID_LENGTH,
    ULID_PATTERN,
    IdentityType,
    SystemStringType,
    TimestampType,
    VersionType,
)
from host.fieldtypes._text import EnumType, ReferenceType, StringType

__all__ = [
    "BOOLEAN",
    "DATETIME",
    "DATETIME_TEXT_LENGTH",
    "DECIMAL_PATTERN",
    "ENUM",
    "FIELD_TYPES",
    "IDENTITY",
    "INT64_MAX",
    "INT64_MIN",
    "INTEGER",
    "MONEY",
    "MONEY_TEXT_MAX_LENGTH",
    "ORDERED",
    "REFERENCE",
    "REGISTRY",
    "STRING",
    "SYSTEM_STRING",
    "TIMESTAMP",
    "ULID_LENGTH",
    "ULID_PATTERN",
    "VERSION",
    "BooleanType",
    "DatetimeType",
    "EnumType",
    "IdentityType",
    "IntegerType",
    "MoneyType",
    "Ordering",
    "ReferenceType",
    "Renderer",
    "Schema",
    "StringType",
    "SystemStringType",
    "TimestampType",
    "Unconvertible",
    "ValueType",
    "VersionType",
    "bound_of",
    "check_constraints",
    "coerce_default",
    "coerce_write",
    "column_type",
    "constrained",
    "format_datetime",
    "named",
    "now_db",
    "of",
    "parse_datetime",
    "pattern_of",
    "render",
    "render_datetime",
    "render_field",
]
