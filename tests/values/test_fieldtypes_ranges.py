"""The patterns of numeric text within bounds (:mod:`host.fieldtypes._ranges`) match exactly
the plain decimal texts whose value (integers: truncated toward zero) lies within the bounds,
as the service parses them."""

from __future__ import annotations

import re
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from host.fieldtypes import INT64_MAX, INT64_MIN, IntegerType, MoneyType
from host.fieldtypes._ranges import decimal_text_pattern, integer_text_pattern
from plugin_api.definitions import Field, FieldType
from plugin_api.errors import BadRequest

_DIGITS = st.text("0123456789", max_size=6)
TEXTS = st.builds(
    lambda space, sign, whole, dot, fraction, tail: f"{space}{sign}{whole}{dot}{fraction}{tail}",
    st.sampled_from(["", " ", "\t"]),
    st.sampled_from(["", "+", "-"]),
    _DIGITS,
    st.sampled_from(["", "."]),
    _DIGITS,
    st.sampled_from(["", " ", "\n"]),
).filter(lambda text: re.fullmatch(r"\s*[+-]?(\d+\.?\d*|\.\d+)\s*", text) is not None)
"""Plain decimal texts, as the service reads them (leading zeros, ``5.``, ``.5``, spaces)."""

BOUNDS = st.integers(-1200, 1200)
AMOUNTS = st.decimals(-1000, 1000, places=3)


def _value(text: str) -> Decimal:
    return Decimal(text.strip(" \t\n\r"))


@settings(max_examples=400, deadline=None)
@given(TEXTS, BOUNDS, BOUNDS)
def test_integer_text_within_truncated_bounds(text: str, one: int, other: int) -> None:
    low, high = sorted((one, other))
    within = low <= int(_value(text)) <= high
    assert (re.match(integer_text_pattern(low, high), text) is not None) == within


@settings(max_examples=400, deadline=None)
@given(TEXTS, st.none() | AMOUNTS, st.none() | AMOUNTS)
def test_decimal_text_within_bounds(text: str, one: Decimal | None, other: Decimal | None) -> None:
    if one is not None and other is not None and one > other:
        one, other = other, one
    value = _value(text)
    within = (one is None or value >= one) and (other is None or value <= other)
    assert (re.match(decimal_text_pattern(one, other), text) is not None) == within


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_the_patterns_agree_with_the_fields_write(text: str) -> None:
    """The undeclared bounds: an integer's int64 range, any money amount (64 characters)."""
    integer = Field(name="n", type=FieldType.INTEGER)
    money = Field(name="m", type=FieldType.MONEY, currency="EUR")
    try:
        IntegerType().write(integer, text)
        accepted = True
    except BadRequest:
        accepted = False
    assert (re.match(integer_text_pattern(INT64_MIN, INT64_MAX), text) is not None) == accepted
    try:
        MoneyType().write(money, {"amount": text, "currency": "EUR"})
        accepted = True
    except BadRequest:
        accepted = False
    assert (re.match(decimal_text_pattern(None, None), text) is not None) == accepted


def test_the_int64_edges() -> None:
    pattern = re.compile(integer_text_pattern(INT64_MIN, INT64_MAX))
    for text in ("9223372036854775807", "9223372036854775807.99", "-9223372036854775808.5",
                 "000009223372036854775807", "-0.9", "+0"):  # fmt: skip
        assert pattern.match(text), text
    for text in ("9223372036854775808", "-9223372036854775809", "99999999999999999999", "1e3"):
        assert not pattern.match(text), text
