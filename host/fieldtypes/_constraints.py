"""Declared field constraints (plugin API 1.8): length, pattern and range rules a written
value must meet, checked on its database value after coercion (:func:`check_constraints`),
and how the graph compiler reads them (:func:`constraint_problems`)."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from plugin_api.definitions import Field, FieldType
from plugin_api.errors import BadRequest

__all__ = ["bound_of", "check_constraints", "constrained", "pattern_of"]


@lru_cache(maxsize=256)
def pattern_of(pattern: str) -> re.Pattern[str]:
    """The compiled ``pattern`` (:class:`re.error` when it does not compile)."""
    return re.compile(pattern)


def bound_of(field: Field, bound: object) -> Decimal | int | None:
    """A declared ``minimum``/``maximum`` as a number for ``field``'s type; ``None`` when
    it is not one (an integer field takes an int, a money field an int or decimal text)."""
    if isinstance(bound, bool):
        return None
    if isinstance(bound, int):
        return bound
    if field.type is FieldType.MONEY and isinstance(bound, str):
        try:
            number = Decimal(bound)
        except InvalidOperation:
            return None
        return number if number.is_finite() else None
    return None


def constrained(field: Field) -> bool:
    """Whether ``field`` declares any constraint."""
    return (
        field.min_length is not None
        or field.enforce_max_length
        or field.pattern is not None
        or field.minimum is not None
        or field.maximum is not None
    )


def check_constraints(field: Field, value: object) -> None:
    """Refuse a database ``value`` of ``field`` that breaks one of its constraints.

    :raises BadRequest: naming the field and the rule.
    """
    if value is None:
        return
    if isinstance(value, str) and field.type is FieldType.STRING:
        _check_text(field, value)
    elif field.type in (FieldType.INTEGER, FieldType.MONEY):
        _check_range(field, value)


def _check_text(field: Field, value: str) -> None:
    length = len(value)
    if field.min_length is not None and length < field.min_length:
        raise BadRequest(
            f"Field {field.name!r} must be at least {field.min_length} characters long "
            f"(min_length), got {length}"
        )
    if field.enforce_max_length and field.max_length is not None and length > field.max_length:
        raise BadRequest(
            f"Field {field.name!r} must be at most {field.max_length} characters long "
            f"(max_length), got {length}"
        )
    if field.pattern is not None and pattern_of(field.pattern).fullmatch(value) is None:
        raise BadRequest(f"Field {field.name!r} must match the pattern {field.pattern!r}")


def _check_range(field: Field, value: object) -> None:
    if field.minimum is None and field.maximum is None:
        return
    number = Decimal(value) if isinstance(value, str) else value
    assert isinstance(number, (int, Decimal))
    low, high = bound_of(field, field.minimum), bound_of(field, field.maximum)
    if low is not None and number < low:
        raise BadRequest(f"Field {field.name!r} must be at least {field.minimum} (minimum)")
    if high is not None and number > high:
        raise BadRequest(f"Field {field.name!r} must be at most {field.maximum} (maximum)")
