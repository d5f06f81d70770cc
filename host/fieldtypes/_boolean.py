"""``boolean``: ``true`` or ``false``, stored as a boolean (SQLite hands back 0/1)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from host.fieldtypes._base import Ordering, Renderer, Schema, Unconvertible, ValueType, bad
from plugin_api.definitions import Field, FieldType
from plugin_api.errors import BadRequest

__all__ = ["BooleanType"]


def _render_boolean(value: object) -> object:
    if value is None or value is True or value is False:
        return value
    if value in (0, 1):  # SQLite hands back 0/1
        return bool(value)
    raise ValueError(f"not a stored boolean: {value!r}")


class BooleanType(ValueType):
    """``boolean``: strictly ``true`` or ``false`` (no 0/1, no text)."""

    name = "boolean"
    field_type = FieldType.BOOLEAN
    as_stored = False
    operators = ("eq", "ne", "null")
    ordering = Ordering.NATIVE

    def write(self, field: Field, value: object) -> object:
        if value is True or value is False:
            return value
        raise bad(field, "true or false", value)

    def operand(self, field: Field, value: object) -> object:
        if not isinstance(value, bool):
            raise BadRequest(f"Field {field.name!r} expects true or false")
        return value

    def parse_text(self, field: Field, text: str) -> object:
        if text not in ("true", "false"):
            raise BadRequest(f"Field {field.name!r} expects true or false, got {text!r}")
        return text == "true"

    def renderer(self, field: Field) -> Renderer:
        return _render_boolean

    def keyset_value(self, value: Any) -> Any:
        return None if value is None else bool(value)

    def column_type(self) -> sa.types.TypeEngine[Any]:
        return sa.Boolean(create_constraint=False)

    def accept(self, old: ValueType, shape: object, field: Field) -> object:
        # true/false (any case) as text; integers 0/1.
        if isinstance(shape, int) and not isinstance(shape, bool) and shape in (0, 1):
            return bool(shape)
        if isinstance(shape, str) and old.free_text:
            lowered = shape.strip().lower()
            if lowered in ("true", "false"):
                return lowered == "true"
        raise Unconvertible()

    def write_schema(self, field: Field) -> Schema:
        return {"type": "boolean"}

    def read_schema(self, field: Field) -> Schema:
        return {"type": "boolean"}
