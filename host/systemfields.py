"""The system fields every entity has, described once.

The names are public (:data:`plugin_api.definitions.SYSTEM_FIELDS`); this module says, for
each, its ViewSchema type, its column type and how its stored value reads back. The entity
tables (:mod:`host.storage.schema`), the row renderers (:mod:`host.runtime.rows`) and the
ViewSchema descriptors (:mod:`host.http.viewschema`) all take them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

import sqlalchemy as sa
from ulid import ULID

from host.values import DATETIME_TEXT_LENGTH, ULID_LENGTH, render_datetime
from plugin_api.definitions import SYSTEM_FIELDS

__all__ = ["SYSTEM", "TABLE_KEY", "SystemField", "new_ulid", "render_system"]


@dataclass(frozen=True, kw_only=True, slots=True)
class SystemField:
    """One system field.

    :param name: the field (and column) name.
    :param view_type: its type in a ViewSchema (``identity``, ``version``, ``system_string``).
    :param length: the fixed length of its text column, ``None`` for unbounded text.
    :param datetime: stored as canonical datetime text and read as RFC 3339 (otherwise
        read as the stored text).
    """

    name: str
    view_type: str
    length: int | None
    datetime: bool = False

    def column_type(self) -> sa.types.TypeEngine[str]:
        """A fresh column type for this field."""
        return sa.Text() if self.length is None else sa.String(self.length)

    def render(self, value: object) -> object:
        """The read shape of a stored value (``None`` stays ``None``)."""
        if self.datetime:
            return render_datetime(value)
        if value is None or isinstance(value, str):
            return value
        return str(value)


_DESCRIBED: Final = (
    SystemField(name="id", view_type="identity", length=ULID_LENGTH),
    SystemField(name="tenant_id", view_type="system_string", length=None),
    SystemField(
        name="created_at", view_type="system_string", length=DATETIME_TEXT_LENGTH, datetime=True
    ),
    SystemField(
        name="updated_at", view_type="system_string", length=DATETIME_TEXT_LENGTH, datetime=True
    ),
    SystemField(name="_version", view_type="version", length=ULID_LENGTH),
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


def new_ulid() -> str:
    """A new ULID as its canonical 26-character string (new row ids and versions, event ids)."""
    return str(ULID())
