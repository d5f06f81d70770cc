"""Converting stored values when a field changes type.

A value is read back in its old type (:func:`host.values.render`), turned into a write shape
of the new type when that loses nothing, and validated by :func:`host.values.coerce_write`.
Anything else (a fraction to an integer, a word to a datetime, a value outside the new enum's
options) is *unconvertible*: the caller reports it and, only when allowed, leaves it null.

==============  ==========================================================================
to              from
==============  ==========================================================================
``string``      every type (booleans as ``true``/``false``, money as its amount)
``enum``        any value whose text is one of the options
``integer``     integral numbers as text or money amount; booleans as 1/0
``boolean``     ``true``/``false`` (any case) as text; integers 0/1
``datetime``    RFC 3339 text
``money``       integers and numeric text, in the new field's currency
==============  ==========================================================================
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Final

from host.values import coerce_write, render
from plugin_api.definitions import Field
from plugin_api.errors import BadRequest

__all__ = ["Unconvertible", "convert_value"]

_TEXT_TYPES: Final = frozenset({"string", "enum"})


class Unconvertible(Exception):
    """The stored value has no lossless equivalent in the new type."""


def _text(old_type: str, shape: object) -> str:
    if isinstance(shape, bool):
        return "true" if shape else "false"
    if isinstance(shape, dict):  # money
        return str(shape["amount"])
    return str(shape)


def _integral(text: str) -> str:
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        raise Unconvertible() from None
    if not number.is_finite() or number != number.to_integral_value():
        raise Unconvertible()
    return format(number.to_integral_value(), "f")


def _write_shape(old_type: str, shape: object, new: Field) -> object:
    target = new.type.value
    if target in _TEXT_TYPES:
        return _text(old_type, shape)
    if target == "integer":
        if isinstance(shape, bool):
            return int(shape)
        if isinstance(shape, int):
            return shape
        if old_type == "datetime":
            raise Unconvertible()
        return _integral(_text(old_type, shape))
    if target == "boolean":
        if isinstance(shape, int) and not isinstance(shape, bool) and shape in (0, 1):
            return bool(shape)
        if isinstance(shape, str) and old_type in _TEXT_TYPES:
            lowered = shape.strip().lower()
            if lowered in ("true", "false"):
                return lowered == "true"
        raise Unconvertible()
    if target == "datetime":
        if old_type in _TEXT_TYPES:
            return shape
        raise Unconvertible()
    if target == "money":
        if isinstance(shape, bool) or old_type in ("datetime", "boolean"):
            raise Unconvertible()
        return {"amount": _text(old_type, shape), "currency": new.currency}
    raise Unconvertible()


def convert_value(old_type: str, old_currency: str | None, value: object, new: Field) -> object:
    """The database value of ``new`` for a database ``value`` of the old type.

    ``None`` stays ``None``. :raises Unconvertible: when no lossless conversion exists.
    """
    if value is None:
        return None
    try:
        shape = render(old_type, value, old_currency)
        if shape is None:
            return None
        return coerce_write(new, _write_shape(old_type, shape, new))
    except (BadRequest, ValueError, ArithmeticError) as exc:
        raise Unconvertible() from exc
