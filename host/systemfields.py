"""The system fields every entity has, described once.

The names are public (:data:`plugin_api.definitions.SYSTEM_FIELDS`); this module says, for
each, its ViewSchema type and its value type in the registry (:mod:`host.fieldtypes`), which
gives its column type and how its stored value reads back. The entity tables
(:mod:`host.storage.schema`), the row renderers (:mod:`host.storage.rows`), the lists
(:mod:`host.query.spec`) and the ViewSchema descriptors (:mod:`host.http.viewschema`) all take
them from here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

import sqlalchemy as sa

from host.fieldtypes import IDENTITY, SYSTEM_STRING, TIMESTAMP, VERSION, ValueType
from host.ulids import new_ulid
from plugin_api.definitions import SYSTEM_FIELDS, Field, FieldType

__all__ = ["SYSTEM", "TABLE_KEY", "SystemField", "new_ulid", "render_system"]


@dataclass(frozen=True, kw_only=True, slots=True)
class SystemField:
    """One system field.

    :param name: the field (and column) name.
    :param view_type: its type in a ViewSchema (``identity``, ``version``, ``system_string``).
    :param type: its value type (``identity``, ``timestamp``, ``version``, ``system_string``).
    """

    name: str
    view_type: str
    type: ValueType
    field: Field = dataclasses.field(init=False, repr=False, compare=False)
    """The stand-in declared field its values are parsed and reported as (``id``: a string,
    the timestamps: datetimes)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "field", self.type.stand_in(self.name))

    @property
    def datetime(self) -> bool:
        """Stored as canonical datetime text and read as RFC 3339."""
        return self.type.written_as is FieldType.DATETIME

    def column_type(self) -> sa.types.TypeEngine[Any]:
        """A fresh column type for this field."""
        return self.type.column_type()

    def render(self, value: object) -> object:
        """The read shape of a stored value (``None`` stays ``None``)."""
        return self.type.renderer(self.field)(value)


_DESCRIBED: Final = (
    SystemField(name="id", view_type="identity", type=IDENTITY),
    SystemField(name="tenant_id", view_type="system_string", type=SYSTEM_STRING),
    SystemField(name="created_at", view_type="system_string", type=TIMESTAMP),
    SystemField(name="updated_at", view_type="system_string", type=TIMESTAMP),
    SystemField(name="_version", view_type="version", type=VERSION),
)

SYSTEM: Final[Mapping[str, SystemField]] = MappingProxyType(
    {name: {f.name: f for f in _DESCRIBED}[name] for name in SYSTEM_FIELDS}
)
"""Every system field by name, in :data:`~plugin_api.definitions.SYSTEM_FIELDS` order."""

TABLE_KEY: Final = ("tenant_id", "id")
"""The primary key of every entity table, in index order (per-tenant scans in id order)."""


def render_system(name: str, value: object) -> object:
    """Render the stored value of system field ``name``."""
    return SYSTEM[name].render(value)
