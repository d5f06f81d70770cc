"""JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of field values: the write shapes an
action accepts and the read shapes a row shows (spec 2.6), derived from the definitions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from host.systemfields import SYSTEM, SystemField
from host.values import INT64_MAX, INT64_MIN, MONEY_TEXT_MAX_LENGTH, ULID_LENGTH
from plugin_api.definitions import Field, FieldType

Schema = dict[str, Any]

ULID_PATTERN: Final = f"^[0-9A-HJKMNP-TV-Z]{{{ULID_LENGTH}}}$"
DECIMAL_PATTERN: Final = (
    r"^[ \t\n\r]*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?[ \t\n\r]*$"
)
"""A decimal number as text, as the service parses it (ASCII digits, optional exponent)."""

_TEXT_NOTE = "NUL characters and lone surrogates cannot be stored and are refused (400)."


def nullable(schema: Schema) -> Schema:
    """``schema`` or null."""
    if "enum" in schema:
        return {**schema, "enum": [*schema["enum"], None]}
    kind = schema.get("type")
    if isinstance(kind, str) and set(schema) <= {"type", "format", "maxLength", "minimum",
                                                 "maximum", "pattern", "description"}:  # fmt: skip
        return {**schema, "type": [kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def _money(field: Field, amount: Schema) -> Schema:
    return {
        "type": "object",
        "properties": {"amount": amount, "currency": {"const": field.currency}},
        "required": ["amount", "currency"],
        "additionalProperties": False,
    }


def _write_string(field: Field) -> Schema:
    schema: Schema = {"type": "string", "description": _TEXT_NOTE}
    if field.max_length is not None:
        schema["maxLength"] = field.max_length
        schema["description"] += " maxLength is advisory: the service does not enforce it."
    return schema


def _write_integer(_field: Field) -> Schema:
    return {
        "anyOf": [
            {"type": "integer", "format": "int64", "minimum": INT64_MIN, "maximum": INT64_MAX},
            {"type": "number", "minimum": INT64_MIN, "maximum": INT64_MAX},
            {"type": "string", "pattern": DECIMAL_PATTERN},
        ],
        "description": "An integer; a number with a fraction or a numeric string is "
        "truncated toward zero. Outside the signed 64-bit range: 400.",
    }


def _write_money(field: Field) -> Schema:
    amount = {
        "anyOf": [
            {"type": "string", "pattern": DECIMAL_PATTERN, "maxLength": MONEY_TEXT_MAX_LENGTH},
            {"type": "number"},
        ],
        "description": f"Exact decimal amount; at most {MONEY_TEXT_MAX_LENGTH} characters "
        "as plain decimal text.",
    }
    return _money(field, amount)


_WRITE: Final[Mapping[str, Callable[[Field], Schema]]] = {
    FieldType.STRING.value: _write_string,
    FieldType.INTEGER.value: _write_integer,
    FieldType.DATETIME.value: lambda _f: {
        "type": "string",
        "format": "date-time",
        "description": "RFC 3339; any offset, stored in UTC (years 0001-9999 after conversion).",
    },
    FieldType.ENUM.value: lambda f: {"enum": list(f.options)},
    FieldType.MONEY.value: _write_money,
    FieldType.BOOLEAN.value: lambda _f: {"type": "boolean"},
    FieldType.REFERENCE.value: lambda f: {
        **_write_string(f),
        "minLength": 1,
        "description": f"{_TEXT_NOTE} The id of a {f.target} row of the same tenant "
        "(checked on write).",
    },
}

_READ: Final[Mapping[str, Callable[[Field], Schema]]] = {
    FieldType.STRING.value: lambda _f: {"type": "string"},
    FieldType.INTEGER.value: lambda _f: {"type": "integer", "format": "int64"},
    FieldType.DATETIME.value: lambda _f: {"type": "string", "format": "date-time"},
    FieldType.ENUM.value: lambda f: {"enum": list(f.options)},
    FieldType.MONEY.value: lambda f: _money(
        f, {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]+)?$"}
    ),
    FieldType.BOOLEAN.value: lambda _f: {"type": "boolean"},
    FieldType.REFERENCE.value: lambda f: {
        "type": "string",
        "description": f"The id of a {f.target} row.",
    },
}


def _system_schema(field: SystemField) -> Schema:
    if field.datetime:
        return {"type": "string", "format": "date-time"}
    if field.length == ULID_LENGTH:
        return {"type": "string", "pattern": ULID_PATTERN}
    return {"type": "string"}


SYSTEM_SCHEMAS: Final[Mapping[str, Schema]] = {
    name: _system_schema(field) for name, field in SYSTEM.items()
}
"""Read shapes of the system fields (never null)."""


def _type_key(field: Field) -> str:
    return field.type.value if isinstance(field.type, FieldType) else str(field.type)


def _labelled(field: Field, schema: Schema) -> Schema:
    if field.label is not None:
        schema = {"title": field.label, **schema}
    return schema


def write_schema(field: Field) -> Schema:
    """What ``inputs[name]`` accepts for ``field``: its type, enum, format, length,
    nullability and default."""
    schema = _WRITE[_type_key(field)](field)
    if field.nullable:
        schema = nullable(schema)
    if field.has_default:
        schema["default"] = field.default
    return _labelled(field, schema)


def read_schema(field: Field) -> Schema:
    """What a row (or an action's outputs) shows for ``field``: its read shape or null."""
    return _labelled(field, nullable(_READ[_type_key(field)](field)))


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
