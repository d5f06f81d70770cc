"""Former home of the field values; they live in :mod:`host.fieldtypes` now.

Every name this module exported is re-exported (the same objects, no copy), so code written
against it keeps working; ``host/runtime/engine.py`` and ``host/http/app.py`` still import it.
Import from :mod:`host.fieldtypes` instead; this module goes once nothing imports it.
"""

from host.fieldtypes import (
    DATETIME_TEXT_LENGTH,
    INT64_MAX,
    INT64_MIN,
    MONEY_TEXT_MAX_LENGTH,
    ULID_LENGTH,
    coerce_default,
    coerce_write,
    column_type,
    format_datetime,
    now_db,
    parse_datetime,
    render,
    render_datetime,
    render_field,
)

__all__ = [
    "DATETIME_TEXT_LENGTH",
    "INT64_MAX",
    "INT64_MIN",
    "MONEY_TEXT_MAX_LENGTH",
    "ULID_LENGTH",
    "coerce_default",
    "coerce_write",
    "column_type",
    "format_datetime",
    "now_db",
    "parse_datetime",
    "render",
    "render_datetime",
    "render_field",
]
