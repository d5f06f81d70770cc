"""The number types: ``integer`` (a signed 64-bit integer) and ``money`` (the exact decimal
amount as plain text, no exponent, scale kept, at most 64 characters; the currency is fixed
per field and not stored)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, Final

import sqlalchemy as sa

from host.fieldtypes._base import ORDERED, Ordering, Renderer, Schema, Unconvertible, ValueType, bad
from host.fieldtypes._constraints import bound_of
from host.fieldtypes._ranges import decimal_text_pattern, integer_text_pattern
from host.fieldtypes._text import text_of
from plugin_api.definitions import Field, FieldType
from plugin_api.errors import BadRequest

__all__ = [
    "DECIMAL_PATTERN",
    "INT64_MAX",
    "INT64_MIN",
    "MONEY_TEXT_MAX_LENGTH",
    "IntegerType",
    "MoneyType",
]

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
MONEY_TEXT_MAX_LENGTH: Final = 64
"""Longest plain-text money amount accepted (sign and decimal point included)."""
DECIMAL_PATTERN: Final = (
    r"^[ \t\n\r]*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?[ \t\n\r]*$"
)
"""A decimal number as text, as the service parses it (ASCII digits, optional exponent)."""

# A decimal number as text, ASCII digits only (Decimal() itself would accept "1_000",
# non-ASCII digits, "NaN" and "Infinity").
_NUMBER: Final = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_ASCII_SPACE: Final = " \t\n\r"


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


def _integral(text: str) -> str:
    """Numeric text with no fraction, as integer text; else :class:`Unconvertible`."""
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        raise Unconvertible() from None
    if not number.is_finite() or number != number.to_integral_value():
        raise Unconvertible()
    return format(number.to_integral_value(), "f")


# -- integer ------------------------------------------------------------------------------------

_INT64_RANGE: Final = "an integer within the signed 64-bit range (out of range)"


def _int_in_range(field: Field, number: int, value: object) -> int:
    if INT64_MIN <= number <= INT64_MAX:
        return number
    raise bad(field, _INT64_RANGE, value)


def _decimal_to_int(field: Field, number: Decimal, value: object) -> int:
    if not number.is_finite():
        raise bad(field, "a finite number", value)
    if number.is_zero():
        return 0
    adjusted = number.adjusted()
    if adjusted < 0:  # |number| < 1
        return 0
    if adjusted > 18:  # |number| >= 10**19 > 2**63: never materialise the digits
        raise bad(field, _INT64_RANGE, value)
    return _int_in_range(field, int(number), value)  # int() truncates toward zero


def integer_bounds(field: Field) -> tuple[int, int]:
    """The range of ``field``'s values: its declared bounds within int64."""
    low = field.minimum if isinstance(field.minimum, int) else INT64_MIN
    high = field.maximum if isinstance(field.maximum, int) else INT64_MAX
    return max(low, INT64_MIN), min(high, INT64_MAX)


def truncated_bounds(low: int, high: int) -> dict[str, int]:
    """JSON Schema bounds of the numbers whose truncation toward zero lies from ``low`` to
    ``high``: 5.9 truncates to 5, -3.9 to -3."""
    bounds = {"minimum": low} if low > 0 else {"exclusiveMinimum": low - 1}
    bounds.update({"maximum": high} if high < 0 else {"exclusiveMaximum": high + 1})
    return bounds


def _decimal(bound: Decimal | int | None) -> Decimal | None:
    return None if bound is None else Decimal(bound)


def _json_number(bound: Decimal | int) -> int | float:
    """A bound as a JSON number (a fraction as the nearest binary float)."""
    if isinstance(bound, int) or bound == bound.to_integral_value():
        return int(bound)
    return float(bound)


def _render_integer(value: object) -> object:
    if value is None or type(value) is int:
        return value
    if isinstance(value, (int, str, Decimal, float)):
        return int(value)
    raise ValueError(f"not a stored integer: {value!r}")


class IntegerType(ValueType):
    """``integer``: a number with a fraction or a numeric string is truncated toward zero."""

    name = "integer"
    field_type = FieldType.INTEGER
    as_stored = False
    operators = (*ORDERED, "null")
    ordering = Ordering.NATIVE

    def write(self, field: Field, value: object) -> object:
        if isinstance(value, bool):
            raise bad(field, "an integer or a numeric string", value)
        if isinstance(value, int):
            return _int_in_range(field, value, value)
        if isinstance(value, Decimal):
            return _decimal_to_int(field, value, value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise bad(field, "a finite number", value)
            return _int_in_range(field, int(value), value)
        if isinstance(value, str):
            try:
                number = _parse_number_text(value)
            except _NumberOutOfRange as exc:
                if exc.tiny:
                    return 0
                raise bad(field, _INT64_RANGE, value) from None
            if number is None:
                raise bad(field, "an integer or a numeric string", value)
            return _decimal_to_int(field, number, value)
        raise bad(field, "an integer or a numeric string", value)

    def renderer(self, field: Field) -> Renderer:
        return _render_integer

    def column_type(self) -> sa.types.TypeEngine[Any]:
        return sa.BigInteger()

    def accept(self, old: ValueType, shape: object, field: Field) -> object:
        # Integral numbers as text or money amount; booleans as 1/0.
        if isinstance(shape, bool):
            return int(shape)
        if isinstance(shape, int):
            return shape
        if old.field_type is FieldType.DATETIME:
            raise Unconvertible()
        return _integral(text_of(shape))

    def write_schema(self, field: Field) -> Schema:
        # Declared bounds (plugin API 1.8) narrow the range; without them it is int64's. A
        # number or a numeric string is truncated toward zero (spec 2.6) and the bounds apply
        # to the truncated value: 5.9 fits a maximum of 5, "9" does not.
        low, high = integer_bounds(field)
        return {
            "anyOf": [
                {"type": "integer", "format": "int64", "minimum": low, "maximum": high},
                {"type": "number", **truncated_bounds(low, high)},
                {"type": "string", "pattern": integer_text_pattern(low, high)},
            ],
            "description": "An integer; a number with a fraction, or a numeric string, is "
            f"truncated toward zero, and the truncated value must lie from {low} to {high} "
            "(400 otherwise). A numeric string may also use an exponent (`5e0`), accepted "
            "when its truncated value fits; the pattern describes the plain forms only.",
        }

    def read_schema(self, field: Field) -> Schema:
        return {"type": "integer", "format": "int64"}


# -- money --------------------------------------------------------------------------------------


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
        raise bad(field, expected, amount)
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
            raise bad(field, _MONEY_RANGE, amount) from None
    else:
        number = None
    if number is None or not number.is_finite():
        raise bad(field, expected, amount)
    if number.is_zero():
        exponent = number.as_tuple().exponent
        assert isinstance(exponent, int)
        # No negative zero; a zero with a positive exponent is plain "0".
        number = Decimal(0) if exponent >= 0 else number.copy_abs()
    # Check the length before formatting: Decimal("1e999999999") has a billion digits.
    if _plain_length(number) > MONEY_TEXT_MAX_LENGTH:
        raise bad(field, _MONEY_RANGE, amount)
    return format(number, "f")


def _money_object(field: Field, amount: Schema) -> Schema:
    return {
        "type": "object",
        "properties": {"amount": amount, "currency": {"const": field.currency}},
        "required": ["amount", "currency"],
        "additionalProperties": False,
    }


class MoneyType(ValueType):
    """``money``: ``{"amount": "10.50", "currency": "EUR"}`` in the field's currency; the
    amount is stored exactly as written (scale kept) and compared as a number."""

    name = "money"
    field_type = FieldType.MONEY
    as_stored = False
    operators = (*ORDERED, "null")
    ordering = Ordering.NUMERIC_TEXT
    type_option_schemas = {"currency": {"type": "string"}}

    def write(self, field: Field, value: object) -> object:
        if not isinstance(value, Mapping):
            raise bad(field, "an object with 'amount' and 'currency'", value)
        if len(value) != 2 or "amount" not in value or "currency" not in value:
            keys = ", ".join(sorted(repr(key) for key in value))
            raise BadRequest(
                f"Field {field.name!r} expects an object with exactly the keys 'amount' and "
                f"'currency', got keys [{keys[:200]}]"
            )
        currency = value["currency"]
        if not isinstance(currency, str) or currency != field.currency:
            raise bad(field, f"currency {field.currency!r}", currency)
        return _money_amount(field, value["amount"])

    def operand(self, field: Field, value: object) -> object:
        """A condition gives the compound value, or the amount alone (in the field's
        currency)."""
        if isinstance(value, Mapping):
            return self.write(field, value)
        return self.write(field, {"amount": str(value), "currency": field.currency})

    def parse_text(self, field: Field, text: str) -> object:
        """A URL filter value is the amount alone (in the field's currency)."""
        return self.write(field, {"amount": text, "currency": field.currency})

    def renderer(self, field: Field) -> Renderer:
        currency = field.currency

        def render_money(value: object) -> object:
            if value is None or value == "":
                return None
            if currency is None:
                raise ValueError("rendering a money value needs the field's currency")
            amount = value if isinstance(value, str) else format(Decimal(str(value)), "f")
            return {"amount": amount, "currency": currency}

        return render_money

    def column_type(self) -> sa.types.TypeEngine[Any]:
        return sa.Text()

    def accept(self, old: ValueType, shape: object, field: Field) -> object:
        # Integers and numeric text, in the new field's currency.
        if isinstance(shape, bool) or old.field_type in (FieldType.DATETIME, FieldType.BOOLEAN):
            raise Unconvertible()
        return {"amount": text_of(shape), "currency": field.currency}

    def write_schema(self, field: Field) -> Schema:
        low, high = bound_of(field, field.minimum), bound_of(field, field.maximum)
        bounds = {
            key: _json_number(bound)
            for key, bound in (("minimum", low), ("maximum", high))
            if bound is not None
        }
        text = decimal_text_pattern(_decimal(low), _decimal(high))
        amount = {
            "anyOf": [
                {"type": "string", "pattern": text, "maxLength": MONEY_TEXT_MAX_LENGTH},
                {"type": "number", **bounds},
            ],
            "description": f"Exact decimal amount; at most {MONEY_TEXT_MAX_LENGTH} characters "
            "as plain decimal text"
            + (f", from {field.minimum}" if low is not None else "")
            + (f" to {field.maximum}" if high is not None else "")
            + (" (400 otherwise)" if bounds else "")
            + ". A text may also use an exponent (`1e2`), accepted when its value fits; the "
            "pattern describes the plain forms only.",
        }
        return _money_object(field, amount)

    def read_schema(self, field: Field) -> Schema:
        return _money_object(field, {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]+)?$"})

    def type_options(self, field: Field) -> dict[str, Any] | None:
        return {"currency": field.currency}
