"""What every value type provides (:class:`ValueType`), how its values compare
(:class:`Ordering`), and the helpers its write path shares."""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, ClassVar, Final

import sqlalchemy as sa

from plugin_api.definitions import Field, FieldType
from plugin_api.errors import BadRequest

__all__ = [
    "ORDERED",
    "Ordering",
    "Renderer",
    "Schema",
    "Unconvertible",
    "ValueType",
    "bad",
    "null_write",
]

Renderer = Callable[[Any], Any]
"""A stored value -> its JSON-ready read shape (``None`` stays ``None``)."""
Schema = dict[str, Any]
"""A JSON Schema (2020-12, as OpenAPI 3.1 uses them)."""

ORDERED: Final[tuple[str, ...]] = ("eq", "ne", "in", "lt", "lte", "gt", "gte")
"""The operators of every type with an order, in :class:`~plugin_api.FilterOperator` order."""


class Ordering(enum.Enum):
    """How the values of a column compare and sort; the storage dialect renders it as SQL
    (:func:`host.storage.listsql.sort_expression`)."""

    NATIVE = "native"
    """The column as stored: integers, booleans, and ``id`` (ULIDs are ASCII upper case and
    digits, in the same order in every collation; sorted as its primary key is indexed)."""
    TEXT = "text"
    """Text in code-point order (``COLLATE "C"`` on PostgreSQL, SQLite's own order)."""
    NUMERIC_TEXT = "numeric_text"
    """Decimal text compared as a number (``CAST AS NUMERIC``): equal amounts may be stored
    as different texts (``10.50``, ``10.5``)."""
    OPTION_RANK = "option_rank"
    """The position of an enum option in the field's options; a stored value outside the
    options (left by an evolution) sorts as null."""


class Unconvertible(Exception):
    """The stored value has no lossless equivalent in the new type (the message, when there
    is one, says why)."""


class ValueType(abc.ABC):
    """Everything about one type of stored value: a field type (:class:`FieldType`) or the
    type of a system column. One instance per type, found in the registry
    (:mod:`host.fieldtypes`)."""

    name: ClassVar[str]
    """The type's name: the wire name of a field type, else ``identity``, ``timestamp``,
    ``version``, ``system_string``."""
    field_type: ClassVar[FieldType | None]
    """The public :class:`FieldType` member; ``None`` for a system column's type."""
    written_as: ClassVar[FieldType]
    """The field type whose write rules the values follow: a field type's own member (set
    for it), else the type of a system column's stand-in field (``id`` is written as a
    string, the timestamps as datetimes)."""
    as_stored: ClassVar[bool]
    """A stored ``str`` (or null) reads back unchanged, so a row renderer may copy it."""
    operators: ClassVar[tuple[str, ...]]
    """The list and row-condition operators that fit, in :class:`FilterOperator` order;
    empty when a list cannot filter or sort on the type."""
    ordering: ClassVar[Ordering]
    """How values compare and sort."""
    free_text: ClassVar[bool] = False
    """Values are text a person wrote or chose (another type may parse them when a field
    changes type, see :meth:`accept`)."""
    type_option_schemas: ClassVar[Mapping[str, Schema]] = {}
    """The keys :meth:`type_options` may give, with their JSON Schemas."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        field_type = cls.__dict__.get("field_type")
        if field_type is not None:  # a field type is written as itself
            cls.written_as = field_type

    def __repr__(self) -> str:
        return f"<value type {self.name}>"

    # -- write ----------------------------------------------------------------------------

    @abc.abstractmethod
    def write(self, field: Field, value: object) -> object:
        """A write-shape ``value`` (not null) -> the database value.

        :raises BadRequest: naming the field and what it expects.
        """

    def operand(self, field: Field, value: object) -> object:
        """A row condition's value (write shape, possibly null) -> the database value it is
        compared with."""
        if value is None:
            return null_write(field)
        return self.write(field, value)

    def parse_text(self, field: Field, text: str) -> object:
        """A URL filter value (``filter.due_at.lt=...``) -> the database value."""
        return self.write(field, text)

    def stand_in(self, name: str) -> Field:
        """A declared field of this type named ``name`` (for a system column: the field its
        values are parsed and reported as)."""
        return Field(name=name, type=self.written_as)

    # -- read -----------------------------------------------------------------------------

    @abc.abstractmethod
    def renderer(self, field: Field) -> Renderer:
        """The function turning stored values of ``field`` into their read shape (spec 2.6).

        :raises ValueError: (when called) on a value this type never stores.
        """

    def keyset_value(self, value: Any) -> Any:
        """A stored value (as the driver returns it) as a cursor key and as the operand it is
        compared with."""
        return value

    # -- storage --------------------------------------------------------------------------

    @abc.abstractmethod
    def column_type(self) -> sa.types.TypeEngine[Any]:
        """The SQLAlchemy column type holding the database value (a fresh instance)."""

    def accept(self, old: ValueType, shape: object, field: Field) -> object:
        """A value of the ``old`` type in read shape -> a write shape of ``field`` (this
        type), when the conversion loses nothing.

        :raises Unconvertible: otherwise (the default: this type accepts no other type).
        """
        raise Unconvertible()

    # -- documents ------------------------------------------------------------------------

    @abc.abstractmethod
    def write_schema(self, field: Field) -> Schema:
        """What an action input of ``field`` accepts (without null, default or title)."""

    @abc.abstractmethod
    def read_schema(self, field: Field) -> Schema:
        """What a row shows for ``field`` (without null or title)."""

    def type_options(self, field: Field) -> dict[str, Any] | None:
        """The ViewSchema ``typeOptions`` of ``field``; ``None`` when the type has none."""
        return None


# -- write helpers ------------------------------------------------------------------------------

_SHOW_LIMIT: Final = 40


def _show(value: object) -> str:
    """A short, safe rendering of a rejected value for an error message."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, str):
        # repr() escapes NUL, surrogates and other unprintables; never echo a huge payload.
        text = repr(value[:_SHOW_LIMIT])
        return text if len(value) <= _SHOW_LIMIT else text[:-1] + "..." + text[-1]
    if isinstance(value, int) and value.bit_length() > 256:  # str() may refuse or be slow
        return "a very large integer"
    if isinstance(value, (int, float, Decimal)):
        text = str(value)
        return text if len(text) <= _SHOW_LIMIT else text[:_SHOW_LIMIT] + "..."
    return f"a value of type {type(value).__name__}"


def bad(field: Field, expected: str, value: object) -> BadRequest:
    """``Field 'x' expects <expected>, got <value>``."""
    return BadRequest(f"Field {field.name!r} expects {expected}, got {_show(value)}")


def null_write(field: Field) -> object:
    """The database value of null for ``field``.

    :raises BadRequest: the field is not nullable.
    """
    if field.nullable:
        return None
    raise BadRequest(f"Field {field.name!r} is required and cannot be null")
