"""``datetime``: stored as canonical UTC text ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, fixed width
(27), so text order is time order on every backend; read as RFC 3339 with ``Z``."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar, Final

import sqlalchemy as sa

from host.fieldtypes._base import ORDERED, Ordering, Renderer, Schema, Unconvertible, ValueType, bad
from plugin_api.definitions import Field, FieldType

__all__ = [
    "DATETIME_TEXT_LENGTH",
    "DatetimeType",
    "format_datetime",
    "now_db",
    "parse_datetime",
    "render_datetime",
]

DATETIME_TEXT_LENGTH: Final = 27
"""Length of the canonical datetime text ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""

_DATETIME: Final = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})[Tt ]"
    r"(?P<h>[0-9]{2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?:\.(?P<f>[0-9]+))?)?"
    r"(?:(?P<z>[Zz])|(?P<oh>[+-][0-9]{2}):?(?P<om>[0-9]{2}))?",
    re.ASCII,
)


def parse_datetime(text: str) -> datetime | None:
    """Parse an RFC 3339 / ISO 8601 date-time into a naive UTC datetime, or None if invalid.

    Accepted: ``YYYY-MM-DD(T|t| )HH:MM[:SS[.fraction]]`` with an optional ``Z``/``z``,
    ``+HH:MM`` or ``+HHMM`` offset (no offset means UTC). The fraction is truncated to
    microseconds. None for a malformed text, an impossible date or time, an offset of 24 hours
    or more, or a result outside years 1-9999 after conversion to UTC.
    """
    match = _DATETIME.fullmatch(text)
    if match is None:
        return None
    y, mo, d, h, mi, s, f, _z, oh, om = match.groups()
    micro = int(f[:6].ljust(6, "0")) if f else 0
    try:
        value = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s) if s else 0, micro)
    except ValueError:
        return None
    if oh is not None:
        hours, minutes = int(oh[1:]), int(om)
        if hours > 23 or minutes > 59:
            return None
        offset = timedelta(hours=hours, minutes=minutes)
        try:
            value = value - offset if oh[0] == "+" else value + offset
        except OverflowError:
            return None
    return value


def format_datetime(value: datetime) -> str:
    """The canonical database text of ``value`` (naive values are taken as UTC)."""
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc)
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:"
        f"{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}Z"
    )


def now_db() -> str:
    """The current UTC time as canonical database datetime text."""
    return format_datetime(datetime.now(timezone.utc))


def _is_canonical_datetime(text: str) -> bool:
    return (
        len(text) == DATETIME_TEXT_LENGTH
        and text[26] == "Z"
        and text[19] == "."
        and text[10] == "T"
        and text[4] == "-"
    )


def render_datetime(value: object) -> str | None:
    """Database datetime -> RFC 3339 UTC text with ``Z``: ``2030-01-02T03:04:00Z``.

    The fraction is omitted when zero and otherwise has its trailing zeros stripped
    (``...:05.12Z``). Accepts canonical text (the normal case), any text
    :func:`parse_datetime` accepts, or a ``datetime``. ``None`` stays ``None``.
    """
    if value is None:
        return None
    if isinstance(value, str) and _is_canonical_datetime(value):
        text = value
    elif isinstance(value, datetime):
        text = format_datetime(value)
    else:
        parsed = parse_datetime(value) if isinstance(value, str) else None
        if parsed is None:
            raise ValueError(f"not a stored datetime: {value!r}")
        text = format_datetime(parsed)
    fraction = text[20:26].rstrip("0")
    if not fraction:
        return text[:19] + "Z"
    return f"{text[:20]}{fraction}Z"


class DatetimeType(ValueType):
    """``datetime``: an RFC 3339 date-time with any offset, stored in UTC."""

    name = "datetime"
    field_type: ClassVar[FieldType | None] = FieldType.DATETIME
    as_stored = False
    operators = (*ORDERED, "null")
    ordering = Ordering.TEXT

    def write(self, field: Field, value: object) -> object:
        if not isinstance(value, str):
            raise bad(field, "an RFC 3339 date-time string", value)
        parsed = parse_datetime(value)
        if parsed is None:
            raise bad(
                field,
                "an RFC 3339 date-time string such as '2030-01-02T03:04:05Z' "
                "(valid date and time, years 0001-9999)",
                value,
            )
        return format_datetime(parsed)

    def renderer(self, field: Field) -> Renderer:
        return render_datetime

    def column_type(self) -> sa.types.TypeEngine[Any]:
        return sa.String(DATETIME_TEXT_LENGTH)

    def accept(self, old: ValueType, shape: object, field: Field) -> object:
        if old.free_text:  # RFC 3339 text
            return shape
        raise Unconvertible()

    def write_schema(self, field: Field) -> Schema:
        return {
            "type": "string",
            "format": "date-time",
            "description": "RFC 3339; any offset, stored in UTC "
            "(years 0001-9999 after conversion; a leap second, :60, is refused). The service "
            "also reads a space for T, no seconds and no offset (UTC).",
        }

    def read_schema(self, field: Field) -> Schema:
        return {"type": "string", "format": "date-time"}
