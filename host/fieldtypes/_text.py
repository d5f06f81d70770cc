"""The text types: ``string``, ``enum`` and ``reference``, stored as text (no NUL, no lone
surrogate: PostgreSQL refuses both)."""

from __future__ import annotations

import re
from typing import Any, Final

import sqlalchemy as sa

from host.fieldtypes._base import ORDERED, Ordering, Renderer, Schema, ValueType, bad
from plugin_api.definitions import Field, FieldType
from plugin_api.errors import BadRequest

__all__ = ["EnumType", "ReferenceType", "StringType", "TextType", "render_text", "text_of"]

# NUL and UTF-16 surrogates (a str can only hold them as lone code points).
_BAD_TEXT: Final = re.compile("[\x00\ud800-\udfff]")
TEXT_NOTE: Final = "NUL characters and lone surrogates cannot be stored and are refused (400)."
ADVISORY_MAX_LENGTH: Final = "x-tessera-advisory-max-length"
"""The JSON Schema extension keyword of an advisory ``max_length`` (not enforced)."""


def _is_clean_text(value: str) -> bool:
    if value.isascii():
        return "\x00" not in value
    return _BAD_TEXT.search(value) is None


def write_text(field: Field, value: object) -> str:
    """A string that can be stored, else 400."""
    if not isinstance(value, str):
        raise bad(field, "a string", value)
    if not _is_clean_text(value):
        raise BadRequest(
            f"Field {field.name!r} contains a NUL character or a lone surrogate, "
            "which cannot be stored"
        )
    return value


def render_text(value: object) -> object:
    """Stored text reads back as stored (``None`` stays ``None``)."""
    if value is None or isinstance(value, str):
        return value
    return str(value)


def text_of(shape: object) -> str:
    """A read-shape value as text: booleans as ``true``/``false``, money as its amount."""
    if isinstance(shape, bool):
        return "true" if shape else "false"
    if isinstance(shape, dict):  # money
        return str(shape["amount"])
    return str(shape)


def _string_schema(field: Field) -> Schema:
    schema: Schema = {"type": "string", "description": TEXT_NOTE}
    if field.max_length is not None and field.enforce_max_length:
        schema["maxLength"] = field.max_length
        schema["description"] += " maxLength is enforced (400 beyond it)."
    elif field.max_length is not None:
        # Advisory (spec 2.6): renderers limit their input, the service stores longer text,
        # so it is no rule of the request (a gateway validating it would refuse what the
        # service accepts).
        schema[ADVISORY_MAX_LENGTH] = field.max_length
        schema["description"] += (
            f" At most {field.max_length} characters is advisory (typeOptions.maxLength): "
            "the service stores longer text."
        )
    # Declared constraints (plugin API 1.8) only: an undeclared field's schema is unchanged.
    if field.min_length is not None:
        schema["minLength"] = field.min_length
    if field.pattern is not None:
        schema["pattern"] = f"^(?:{field.pattern})$"  # JSON Schema patterns are unanchored
    return schema


class TextType(ValueType):
    """A value stored and read as text."""

    written_as = FieldType.STRING
    as_stored = True
    ordering = Ordering.TEXT

    def write(self, field: Field, value: object) -> object:
        return write_text(field, value)

    def renderer(self, field: Field) -> Renderer:
        return render_text

    def column_type(self) -> sa.types.TypeEngine[Any]:
        return sa.Text()

    def write_schema(self, field: Field) -> Schema:
        return {"type": "string"}

    def read_schema(self, field: Field) -> Schema:
        return {"type": "string"}


class StringType(TextType):
    """``string``: any storable text; ``max_length`` is advisory."""

    name = "string"
    field_type = FieldType.STRING
    operators = (*ORDERED, "contains", "null")
    free_text = True
    type_option_schemas = {"maxLength": {"type": "integer"}}

    def accept(self, old: ValueType, shape: object, field: Field) -> object:
        return text_of(shape)  # every type (booleans as true/false, money as its amount)

    def write_schema(self, field: Field) -> Schema:
        return _string_schema(field)

    def type_options(self, field: Field) -> dict[str, Any] | None:
        return {} if field.max_length is None else {"maxLength": field.max_length}


class EnumType(TextType):
    """``enum``: one of the field's options, stored as its text; sorted by option position."""

    name = "enum"
    field_type = FieldType.ENUM
    operators = (*ORDERED, "null")
    ordering = Ordering.OPTION_RANK
    free_text = True
    type_option_schemas = {"options": {"type": "array", "items": {"type": "string"}}}

    def write(self, field: Field, value: object) -> object:
        if isinstance(value, str) and value in field.options:
            return value
        options = ", ".join(repr(option) for option in field.options)
        raise bad(field, f"one of {options}", value)

    def accept(self, old: ValueType, shape: object, field: Field) -> object:
        return text_of(shape)  # any value whose text is one of the options

    def write_schema(self, field: Field) -> Schema:
        return {"enum": list(field.options)}

    def read_schema(self, field: Field) -> Schema:
        return {"enum": list(field.options)}

    def type_options(self, field: Field) -> dict[str, Any] | None:
        return {"options": list(field.options)}


class ReferenceType(TextType):
    """``reference``: the id of a row of the field's ``target`` entity in the same tenant
    (its existence is checked by the runtime, which needs the database)."""

    name = "reference"
    field_type = FieldType.REFERENCE
    operators = ("eq", "ne", "in", "null")
    type_option_schemas = {
        "entity": {"type": "string", "description": "a reference's target entity"}
    }

    def write(self, field: Field, value: object) -> object:
        if not isinstance(value, str) or not value:
            raise bad(field, f"the id of a {field.target} row (a string)", value)
        return write_text(field, value)

    def write_schema(self, field: Field) -> Schema:
        return {
            **_string_schema(field),
            "minLength": 1,
            "description": f"{TEXT_NOTE} The id of a {field.target} row of the same tenant "
            "(checked on write).",
        }

    def read_schema(self, field: Field) -> Schema:
        return {"type": "string", "description": f"The id of a {field.target} row."}

    def type_options(self, field: Field) -> dict[str, Any] | None:
        return {"entity": field.target}
