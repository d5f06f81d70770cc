"""Field values: the wire shapes of spec 2.6 and their database form, in one place.

Write path: :func:`coerce_write` validates a write-shape value (as decoded by
:func:`host.jsonio.loads`, or a plain Python value from a plugin definition) and returns the
database value, raising :class:`~plugin_api.errors.BadRequest` naming the field otherwise.

Read path: :func:`render` turns a database value back into the JSON-ready read shape.

Database forms, chosen so both SQLite and PostgreSQL store them exactly:

* ``string`` / ``enum``: text (no NUL, no lone surrogate: PostgreSQL refuses both);
* ``integer``: signed 64-bit integer;
* ``boolean``: boolean;
* ``datetime``: canonical UTC text ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, fixed width (27), so text
  order is time order on every backend;
* ``reference``: the referenced row's id as text;
* ``money``: the exact decimal amount as plain text (no exponent, scale kept, at most 64
  characters); the currency is fixed per field and not stored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Final

import sqlalchemy as sa

from plugin_api.definitions import Field, FieldType
from plugin_api.errors import BadRequest

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

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
MONEY_TEXT_MAX_LENGTH: Final = 64
"""Longest plain-text money amount accepted (sign and decimal point included)."""
DATETIME_TEXT_LENGTH: Final = 27
"""Length of the canonical datetime text ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
ULID_LENGTH: Final = 26

# ---------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------

_SHOW_LIMIT: Final = 40
# NUL and UTF-16 surrogates (a str can only hold them as lone code points).
_BAD_TEXT: Final = re.compile("[\x00\ud800-\udfff]")
# A decimal number as text, ASCII digits only (Decimal() itself would accept "1_000",
# non-ASCII digits, "NaN" and "Infinity").
_NUMBER: Final = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_ASCII_SPACE: Final = " \t\n\r"


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


def _bad(field: Field, expected: str, value: object) -> BadRequest:
    return BadRequest(f"Field {field.name!r} expects {expected}, got {_show(value)}")


def _is_clean_text(value: str) -> bool:
    if value.isascii():
        return "\x00" not in value
    return _BAD_TEXT.search(value) is None


class _NumberOutOfRange(Exception):
    """A syntactically valid number whose exponent the decimal module cannot represent."""

    def __init__(self, *, tiny: bool) -> None:
        super().__init__()
        self.tiny = tiny
        """True when the magnitude is below 1 (a huge negative exponent)."""


def _parse_number_text(text: str) -> Decimal | None:
    """Parse a numeric string (ASCII whitespace stripped) exactly, or return None.

    Raises :class:`_NumberOutOfRange` for an exponent beyond the decimal module's limits.
    """
    text = text.strip(_ASCII_SPACE)
    if _NUMBER.fullmatch(text) is None:
        return None
    try:
        return Decimal(text)
    except InvalidOperation:
        mantissa, _, exponent = text.lower().partition("e")
        if not mantissa.strip("+-.0"):
            return Decimal(0)
        raise _NumberOutOfRange(tiny=exponent.startswith("-")) from None


# ---------------------------------------------------------------------------------------------
# Datetime
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Write path
# ---------------------------------------------------------------------------------------------


def _write_string(field: Field, value: object) -> object:
    if not isinstance(value, str):
        raise _bad(field, "a string", value)
    if not _is_clean_text(value):
        raise BadRequest(
            f"Field {field.name!r} contains a NUL character or a lone surrogate, "
            "which cannot be stored"
        )
    return value


_INT64_RANGE: Final = "an integer within the signed 64-bit range (out of range)"


def _int_in_range(field: Field, number: int, value: object) -> int:
    if INT64_MIN <= number <= INT64_MAX:
        return number
    raise _bad(field, _INT64_RANGE, value)


def _decimal_to_int(field: Field, number: Decimal, value: object) -> int:
    if not number.is_finite():
        raise _bad(field, "a finite number", value)
    if number.is_zero():
        return 0
    adjusted = number.adjusted()
    if adjusted < 0:  # |number| < 1
        return 0
    if adjusted > 18:  # |number| >= 10**19 > 2**63: never materialise the digits
        raise _bad(field, _INT64_RANGE, value)
    return _int_in_range(field, int(number), value)  # int() truncates toward zero


def _write_integer(field: Field, value: object) -> object:
    if isinstance(value, bool):
        raise _bad(field, "an integer or a numeric string", value)
    if isinstance(value, int):
        return _int_in_range(field, value, value)
    if isinstance(value, Decimal):
        return _decimal_to_int(field, value, value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _bad(field, "a finite number", value)
        return _int_in_range(field, int(value), value)
    if isinstance(value, str):
        try:
            number = _parse_number_text(value)
        except _NumberOutOfRange as exc:
            if exc.tiny:
                return 0
            raise _bad(field, _INT64_RANGE, value) from None
        if number is None:
            raise _bad(field, "an integer or a numeric string", value)
        return _decimal_to_int(field, number, value)
    raise _bad(field, "an integer or a numeric string", value)


def _write_datetime(field: Field, value: object) -> object:
    if not isinstance(value, str):
        raise _bad(field, "an RFC 3339 date-time string", value)
    parsed = parse_datetime(value)
    if parsed is None:
        raise _bad(
            field,
            "an RFC 3339 date-time string such as '2030-01-02T03:04:05Z' "
            "(valid date and time, years 0001-9999)",
            value,
        )
    return format_datetime(parsed)


def _write_enum(field: Field, value: object) -> object:
    if isinstance(value, str) and value in field.options:
        return value
    options = ", ".join(repr(option) for option in field.options)
    raise _bad(field, f"one of {options}", value)


def _plain_length(number: Decimal) -> int:
    """Length of ``format(number, "f")``, computed without formatting (finite; a zero must
    have a non-positive exponent)."""
    adjusted = number.adjusted()
    if not -MONEY_TEXT_MAX_LENGTH <= adjusted <= MONEY_TEXT_MAX_LENGTH:
        return MONEY_TEXT_MAX_LENGTH + 1  # too long either way; skip the digit tuple
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    sign = 1 if number.is_signed() else 0
    if exponent >= 0:
        return sign + adjusted + 1
    return sign + max(adjusted + 1, 1) + 1 - exponent


_MONEY_RANGE: Final = (
    f"an amount of at most {MONEY_TEXT_MAX_LENGTH} characters as plain decimal text (out of range)"
)


def _money_amount(field: Field, amount: object) -> str:
    expected = "a decimal amount (string or number)"
    if isinstance(amount, bool):
        raise _bad(field, expected, amount)
    number: Decimal | None
    if isinstance(amount, Decimal):
        number = amount
    elif isinstance(amount, int):
        number = Decimal(amount)
    elif isinstance(amount, float):  # only from definitions: exact via the shortest repr
        number = Decimal(repr(amount))
    elif isinstance(amount, str):
        try:
            number = _parse_number_text(amount)
        except _NumberOutOfRange:
            raise _bad(field, _MONEY_RANGE, amount) from None
    else:
        number = None
    if number is None or not number.is_finite():
        raise _bad(field, expected, amount)
    if number.is_zero():
        exponent = number.as_tuple().exponent
        assert isinstance(exponent, int)
        # No negative zero; a zero with a positive exponent is plain "0".
        number = Decimal(0) if exponent >= 0 else number.copy_abs()
    # Check the length before formatting: Decimal("1e999999999") has a billion digits.
    if _plain_length(number) > MONEY_TEXT_MAX_LENGTH:
        raise _bad(field, _MONEY_RANGE, amount)
    return format(number, "f")


def _write_money(field: Field, value: object) -> object:
    if not isinstance(value, Mapping):
        raise _bad(field, "an object with 'amount' and 'currency'", value)
    if len(value) != 2 or "amount" not in value or "currency" not in value:
        keys = ", ".join(sorted(repr(key) for key in value))
        raise BadRequest(
            f"Field {field.name!r} expects an object with exactly the keys 'amount' and "
            f"'currency', got keys [{keys[:200]}]"
        )
    currency = value["currency"]
    if not isinstance(currency, str) or currency != field.currency:
        raise _bad(field, f"currency {field.currency!r}", currency)
    return _money_amount(field, value["amount"])


def _write_reference(field: Field, value: object) -> object:
    # The row's existence in the tenant is checked by the runtime (it needs the database).
    if not isinstance(value, str) or not value:
        raise _bad(field, f"the id of a {field.target} row (a string)", value)
    return _write_string(field, value)


def _write_boolean(field: Field, value: object) -> object:
    if value is True or value is False:
        return value
    raise _bad(field, "true or false", value)


_WRITERS: Final[Mapping[FieldType, Callable[[Field, object], object]]] = MappingProxyType(
    {
        FieldType.STRING: _write_string,
        FieldType.INTEGER: _write_integer,
        FieldType.DATETIME: _write_datetime,
        FieldType.ENUM: _write_enum,
        FieldType.MONEY: _write_money,
        FieldType.BOOLEAN: _write_boolean,
        FieldType.REFERENCE: _write_reference,
    }
)
"""Writers by field type (a definition's type is always a member: see ``Field``)."""


def _lookup(table: Mapping[Any, Callable[..., object]], field_type: str) -> Callable[..., object]:
    try:
        return table[field_type]
    except KeyError:
        raise ValueError(f"unknown field type {field_type!r}") from None


def coerce_write(field: Field, value: object) -> object:
    """Validate a write-shape ``value`` for ``field`` and return its database value.

    Raises :class:`BadRequest` naming the field and what it expects when the value does not
    fit (including ``None`` for a field that is not nullable).
    """
    if value is None:
        if field.nullable:
            return None
        raise BadRequest(f"Field {field.name!r} is required and cannot be null")
    return _lookup(_WRITERS, field.type)(field, value)


@lru_cache(maxsize=1024)
def _cached_default(field: Field) -> object:
    return coerce_write(field, field.default)


def coerce_default(field: Field) -> object:
    """The database value of ``field``'s declared default (``field.has_default`` must hold).

    Raises :class:`BadRequest` if the declared default does not fit the field, so the graph
    compiler can call it once per field at startup to report bad definitions.
    """
    if not field.has_default:
        raise ValueError(f"field {field.name!r} has no default")
    try:
        hash(field)
    except TypeError:  # a default holding a dict (money): not cacheable
        return coerce_write(field, field.default)
    return _cached_default(field)


# ---------------------------------------------------------------------------------------------
# Read path
# ---------------------------------------------------------------------------------------------


def _render_text(value: object, _currency: str | None) -> object:
    if value is None or isinstance(value, str):
        return value
    return str(value)


def _render_integer(value: object, _currency: str | None) -> object:
    if value is None or type(value) is int:
        return value
    if isinstance(value, (int, str, Decimal, float)):
        return int(value)
    raise ValueError(f"not a stored integer: {value!r}")


def _render_boolean(value: object, _currency: str | None) -> object:
    if value is None or value is True or value is False:
        return value
    if value in (0, 1):  # SQLite hands back 0/1
        return bool(value)
    raise ValueError(f"not a stored boolean: {value!r}")


def _render_datetime(value: object, _currency: str | None) -> object:
    return render_datetime(value)


def _render_money(value: object, currency: str | None) -> object:
    if value is None or value == "":
        return None
    if currency is None:
        raise ValueError("rendering a money value needs the field's currency")
    amount = value if isinstance(value, str) else format(Decimal(str(value)), "f")
    return {"amount": amount, "currency": currency}


def _by_name(table: dict[str, Callable[..., object]]) -> Mapping[str, Callable[..., object]]:
    # :func:`render` takes a type name or a member: a str-mixin enum member hashes like its
    # value only on some Python versions, so key the members too.
    for member in FieldType:
        table[member] = table[member.value]
    return MappingProxyType(table)


_RENDERERS: Final = _by_name(
    {
        FieldType.STRING.value: _render_text,
        FieldType.INTEGER.value: _render_integer,
        FieldType.DATETIME.value: _render_datetime,
        FieldType.ENUM.value: _render_text,
        FieldType.MONEY.value: _render_money,
        FieldType.BOOLEAN.value: _render_boolean,
        FieldType.REFERENCE.value: _render_text,
        "identity": _render_text,
        "version": _render_text,
        "system_string": _render_text,
    }
)


def render(field_type: str, value: object, currency: str | None = None) -> object:
    """Database value -> JSON-ready read shape of spec 2.6 (``None`` reads back as ``None``).

    ``currency`` is required for ``money``; an empty or null money column renders as ``None``.
    ``field_type`` is one of the six field types or ``identity``, ``version``,
    ``system_string`` (rendered as text; system fields: :mod:`host.systemfields`).
    """
    return _lookup(_RENDERERS, field_type)(value, currency)


def render_field(field: Field, value: object) -> object:
    """:func:`render` for a declared field (passes its currency)."""
    return _lookup(_RENDERERS, field.type.value)(value, field.currency)


# ---------------------------------------------------------------------------------------------
# Column types
# ---------------------------------------------------------------------------------------------


def column_type(field: Field) -> sa.types.TypeEngine[Any]:
    """The SQLAlchemy column type storing ``field``'s database value (a fresh instance).

    ``enum`` is plain text (no database enum: options may evolve); ``money`` is the exact
    decimal amount as text; ``datetime`` is the fixed-width canonical UTC text.
    """
    key = field.type.value
    column: sa.types.TypeEngine[Any]
    if key in ("string", "enum", "money", "reference"):
        column = sa.Text()
    elif key == "integer":
        column = sa.BigInteger()
    elif key == "datetime":
        column = sa.String(DATETIME_TEXT_LENGTH)
    elif key == "boolean":
        column = sa.Boolean(create_constraint=False)
    else:
        raise ValueError(f"unknown field type {field.type!r}")
    return column
