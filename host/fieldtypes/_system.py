"""The types of the system columns (:mod:`host.systemfields`): written by the host only, read
as text (the timestamps as RFC 3339)."""

from __future__ import annotations

from typing import Any, ClassVar, Final, NoReturn

import sqlalchemy as sa

from host.fieldtypes._base import ORDERED, Ordering, Schema, Unconvertible, ValueType
from host.fieldtypes._datetime import DatetimeType
from host.fieldtypes._text import TextType
from plugin_api.definitions import Field, FieldType

__all__ = [
    "ULID_LENGTH",
    "ULID_PATTERN",
    "IdentityType",
    "SystemStringType",
    "TimestampType",
    "VersionType",
]

ULID_LENGTH: Final = 26
ULID_PATTERN: Final = f"^[0-9A-HJKMNP-TV-Z]{{{ULID_LENGTH}}}$"


class _System(ValueType):
    """A system column's type: no public field type, never an action input, never the
    target of a type change."""

    field_type: ClassVar[FieldType | None] = None

    def write_schema(self, field: Field) -> NoReturn:
        raise TypeError(f"{self.name} columns are written by the host only")

    def accept(self, old: ValueType, shape: object, field: Field) -> NoReturn:
        raise Unconvertible()


class _Ulid(_System, TextType):
    """A ULID: 26 characters of Crockford's base 32."""

    def column_type(self) -> sa.types.TypeEngine[Any]:
        return sa.String(ULID_LENGTH)

    def read_schema(self, field: Field) -> Schema:
        return {"type": "string", "pattern": ULID_PATTERN}


class IdentityType(_Ulid):
    """``id``: a ULID; sorted as its primary key is indexed."""

    name = "identity"
    operators = ORDERED
    ordering = Ordering.NATIVE


class TimestampType(_System, DatetimeType):
    """``created_at``/``updated_at``: a datetime, never null."""

    name = "timestamp"
    operators = ORDERED


class VersionType(_Ulid):
    """``_version``: a ULID, new on every write (optimistic locking)."""

    name = "version"
    operators = ()


class SystemStringType(_System, TextType):
    """``tenant_id``: text."""

    name = "system_string"
    operators = ()
