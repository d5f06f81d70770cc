"""Converting stored values when a field changes type.

A value is read back in its old type (its type's renderer, :mod:`host.fieldtypes`), turned
into a write shape of the new type when that loses nothing (the new type's
:meth:`~host.fieldtypes.ValueType.accept`), and validated by
:func:`host.fieldtypes.coerce_write`. Anything else (a fraction to an integer, a word to a
datetime, a value outside the new enum's options) is *unconvertible*: the caller reports it
and, only when allowed, leaves it null.

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

from collections.abc import Callable

from host.fieldtypes import Unconvertible, coerce_write, named, of, render
from plugin_api.definitions import Field
from plugin_api.errors import BadRequest
from plugin_api.migrations import CannotConvert, ConvertField

__all__ = ["Converter", "Unconvertible", "builtin_converter", "convert_value", "plugin_converter"]

Converter = Callable[[object], object]
"""Database value of the old type -> database value of the new one (``None``: null).
:raises Unconvertible: the value has no equivalent."""


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
        return coerce_write(new, of(new).accept(named(old_type), shape, new))
    except (BadRequest, ValueError, ArithmeticError) as exc:
        raise Unconvertible() from exc


def builtin_converter(old_type: str, old_currency: str | None, new: Field) -> Converter:
    """The host's own conversion (the table above)."""
    return lambda value: convert_value(old_type, old_currency, value, new)


def plugin_converter(
    declaration: ConvertField, old_type: str, old_currency: str | None, new: Field
) -> Converter:
    """A plugin's :class:`~plugin_api.ConvertField`: the value is read in its old type, given
    to the mapping or the function, and the result validated as an input of ``new``."""
    mapping, function = declaration.mapping, declaration.function

    def convert(value: object) -> object:
        shape = render(old_type, value, old_currency) if value is not None else None
        if shape is None:
            return None
        try:
            if mapping is not None:
                if not isinstance(shape, (str, int)) or shape not in mapping:
                    raise Unconvertible(f"{shape!r} is not in the mapping")
                result = mapping[shape]
            else:
                assert function is not None
                result = function(shape)  # type: ignore[arg-type]
        except Unconvertible:
            raise
        except CannotConvert as exc:
            raise Unconvertible(str(exc) or f"{shape!r}: CannotConvert") from exc
        except Exception as exc:  # plugin code: counted, never a crash of the plan
            raise Unconvertible(f"{shape!r}: {type(exc).__name__}: {exc}") from exc
        if result is None:
            return None
        try:
            return coerce_write(new, result)
        except (BadRequest, ValueError, ArithmeticError) as exc:
            raise Unconvertible(f"{shape!r} -> {result!r}: not a valid {new.type.value}") from exc

    return convert
