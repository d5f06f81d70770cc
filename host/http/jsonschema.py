"""JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of field values: the write shapes an
action accepts and the read shapes a row shows (spec 2.6), derived from the definitions.

Each type's own schemas come from the registry (:meth:`host.fieldtypes.ValueType.write_schema`
and :meth:`~host.fieldtypes.ValueType.read_schema`); this module adds what every field
shares: null, the default and the label."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from host.fieldtypes import Schema, of
from host.systemfields import SYSTEM
from plugin_api.definitions import Field

__all__ = [
    "SYSTEM_SCHEMAS",
    "Schema",
    "column_schema",
    "nullable",
    "object_schema",
    "read_schema",
    "write_schema",
]


def nullable(schema: Schema) -> Schema:
    """``schema`` or null."""
    if "enum" in schema:
        return {**schema, "enum": [*schema["enum"], None]}
    kind = schema.get("type")
    if isinstance(kind, str) and set(schema) <= {"type", "format", "maxLength", "minimum",
                                                 "maximum", "pattern", "description"}:  # fmt: skip
        return {**schema, "type": [kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


SYSTEM_SCHEMAS: Final[Mapping[str, Schema]] = {
    name: field.type.read_schema(field.field) for name, field in SYSTEM.items()
}
"""Read shapes of the system fields (never null)."""


def _labelled(field: Field, schema: Schema) -> Schema:
    if field.label is not None:
        schema = {"title": field.label, **schema}
    return schema


def write_schema(field: Field) -> Schema:
    """What ``inputs[name]`` accepts for ``field``: its type, enum, format, length,
    nullability and default."""
    schema = of(field).write_schema(field)
    if field.nullable:
        schema = nullable(schema)
    if field.has_default:
        schema["default"] = field.default
    return _labelled(field, schema)


def read_schema(field: Field) -> Schema:
    """What a row (or an action's outputs) shows for ``field``: its read shape or null."""
    return _labelled(field, nullable(of(field).read_schema(field)))


def column_schema(fields: Mapping[str, Field], name: str) -> Schema:
    """The read shape of a declared or system field of an entity."""
    if name in SYSTEM_SCHEMAS:
        return dict(SYSTEM_SCHEMAS[name])
    return read_schema(fields[name])


def object_schema(
    properties: Mapping[str, Schema], required: list[str], *, closed: bool = True
) -> Schema:
    """An object with these properties (``closed``: no other key)."""
    schema: Schema = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = required
    if closed:
        schema["additionalProperties"] = False
    return schema
