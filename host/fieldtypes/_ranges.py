"""Regular expressions of numeric text within bounds: what a numeric string the service
accepts for an integer or a money field looks like, as a JSON Schema ``pattern`` (ECMA 262
and Python ``re`` alike: classes, groups, alternation, counted repeats; no lookaround).

The service parses numeric text as plain decimal (``5``, ``-0.5``, ``.5``, ``5.``, ASCII
whitespace around) or with an exponent (``5e0``). A pattern describes the plain forms
exactly; numbers in exponent form cannot be bounded by a regular expression (``0.0...05e9``
has as many zeros as it likes), so the patterns leave them out: they are accepted when their
value fits, and documented in words.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Final

__all__ = ["decimal_text_pattern", "integer_text_pattern"]

_SPACE: Final = "[ \\t\\n\\r]*"
_ANY_FRACTION: Final = "(?:\\.[0-9]*)?"


def _group(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def _digit_class(low: int, high: int) -> str:
    return str(low) if low == high else f"[{low}-{high}]"


def _same_length(low: str, high: str) -> str:
    """Digit strings of ``len(low)`` between ``low`` and ``high`` (same length, low <= high)."""
    if low == high:
        return low
    if low[0] == high[0]:
        return low[0] + _same_length(low[1:], high[1:])
    rest = len(low) - 1
    starts_full = low[1:] == "0" * rest
    ends_full = high[1:] == "9" * rest
    parts = []
    if not starts_full:
        parts.append(low[0] + _same_length(low[1:], "9" * rest))
    first = int(low[0]) if starts_full else int(low[0]) + 1
    last = int(high[0]) if ends_full else int(high[0]) - 1
    if first <= last:
        parts.append(_digit_class(first, last) + (f"[0-9]{{{rest}}}" if rest else ""))
    if not ends_full:
        parts.append(high[0] + _same_length("0" * rest, high[1:]))
    return _group(parts)


def _whole(low: int, high: int | None) -> str:
    """Integer digits (leading zeros allowed, at least one digit) of a value from ``low`` to
    ``high`` (``None``: no upper bound); ``0 <= low <= high``."""
    parts = []
    if low == 0:
        parts.append("0")
        low = 1
    if high is not None and low > high:
        return "0*" + _group(parts)
    full: list[int] = []  # lengths whose every value is in range: one [1-9][0-9]{m,n}
    top = len(str(high)) if high is not None else len(str(low))
    for length in range(len(str(low)), top + 1):
        first = low if length == len(str(low)) else 10 ** (length - 1)
        last = high if high is not None and length == len(str(high)) else 10**length - 1
        if first == 10 ** (length - 1) and last == 10**length - 1:
            full.append(length)
        else:
            parts.append(_same_length(str(first), str(last)))
    if high is None:
        parts.append(f"[1-9][0-9]{{{(full[0] if full else len(str(low)) + 1) - 1},}}")
    elif full:
        shortest, longest = full[0] - 1, full[-1] - 1
        repeat = (
            ""
            if longest == 0
            else f"[0-9]{{{shortest}}}"
            if shortest == longest
            else (f"[0-9]{{{shortest},{longest}}}")
        )
        parts.append("[1-9]" + repeat)
    return "0*" + _group(parts)


def _fraction_at_least(digits: str) -> str:
    """Fraction digits ``f`` with ``0.f >= 0.digits`` (``digits`` not all zeros)."""
    head, rest = digits[0], digits[1:].rstrip("0")
    parts = []
    if head != "9":
        parts.append(f"{_digit_class(int(head) + 1, 9)}[0-9]*")
    parts.append(head + (_fraction_at_least(rest) if rest else "[0-9]*"))
    return _group(parts)


def _fraction_at_most(digits: str, *, empty: bool) -> str:
    """Fraction digits ``f`` with ``0.f <= 0.digits`` (``empty``: ``f`` may be empty)."""
    digits = digits.rstrip("0")
    if not digits:
        return "0*" if empty else "0+"
    head, rest = digits[0], digits[1:]
    parts = [""] if empty else []
    if head != "0":
        parts.append(f"{_digit_class(0, int(head) - 1)}[0-9]*")
    parts.append(head + _fraction_at_most(rest, empty=True))
    return _group(parts)


def _fraction_between(low: str, high: str) -> str:
    """Fraction digits ``f`` with ``0.low <= 0.f <= 0.high`` (``low`` not all zeros, at
    least one digit)."""
    low, high = low.rstrip("0"), high.rstrip("0")
    assert high, "an empty range"
    if low[0] == high[0]:
        rest_low = low[1:]
        if not rest_low:
            return low[0] + _fraction_at_most(high[1:], empty=True)
        return low[0] + _fraction_between(rest_low, high[1:])
    parts = [low[0] + (_fraction_at_least(low[1:]) if low[1:] else "[0-9]*")]
    if int(low[0]) + 1 <= int(high[0]) - 1:
        parts.append(f"{_digit_class(int(low[0]) + 1, int(high[0]) - 1)}[0-9]*")
    parts.append(high[0] + _fraction_at_most(high[1:], empty=True))
    return _group(parts)


def _split(value: Decimal) -> tuple[int, str]:
    """A non-negative decimal's integer part and fraction digits (no trailing zeros)."""
    whole, _, fraction = format(value, "f").partition(".")
    return int(whole), fraction.rstrip("0")


def _with_whole(whole: str, fraction: str, zero: bool, zero_fraction: str) -> str:
    """``whole`` then ``fraction`` (a segment starting with its dot, or optional); when the
    whole part may be 0, also the form with no whole digits (``.5``): ``zero_fraction``."""
    parts = [whole + fraction]
    if zero:
        parts.append(zero_fraction)
    return _group(parts)


def _up_to(whole: int, fraction: str) -> str:
    """Plain text of a value from ``whole`` to ``whole.fraction``."""
    at_most = f"(?:\\.{_fraction_at_most(fraction, empty=True)})?"
    dotted = "\\." + _fraction_at_most(fraction, empty=False)
    return _with_whole(_whole(whole, whole), at_most, whole == 0, dotted)


def _magnitude(low: Decimal, high: Decimal | None) -> str:
    """Plain decimal text (no sign) of a value from ``low`` to ``high`` (``None``: no upper
    bound), ``0 <= low <= high``, compared exactly."""
    low_whole, low_fraction = _split(low)
    high_whole, high_fraction = (None, "") if high is None else _split(high)
    if low_whole == high_whole and not low_fraction:
        return _up_to(low_whole, high_fraction)
    if low_whole == high_whole:
        between = "\\." + _fraction_between(low_fraction, high_fraction)
        return _with_whole(_whole(low_whole, low_whole), between, low_whole == 0, between)
    parts = []
    first = low_whole
    if low_fraction:
        at_least = "\\." + _fraction_at_least(low_fraction)
        parts.append(_with_whole(_whole(low_whole, low_whole), at_least, low_whole == 0, at_least))
        first += 1
    last = None if high_whole is None else high_whole - 1
    if last is None or first <= last:
        parts.append(_with_whole(_whole(first, last), _ANY_FRACTION, first == 0, "\\.[0-9]+"))
    if high_whole is not None:
        parts.append(_up_to(high_whole, high_fraction))
    return _group(parts)


def _signed(positive: str | None, negative: str | None) -> str:
    parts = []
    if positive is not None:
        parts.append("\\+?" + positive)
    if negative is not None:
        parts.append("-" + negative)
    return f"^{_SPACE}{_group(parts)}{_SPACE}$"


def decimal_text_pattern(low: Decimal | None, high: Decimal | None) -> str:
    """Plain decimal text whose exact value lies from ``low`` to ``high`` (``None``: no
    bound on that side); ``low <= high``."""
    zero = Decimal(0)
    positive = negative = None
    if high is None or high >= zero:
        positive = _magnitude(max(low, zero) if low is not None else zero, high)
    if low is None or low <= zero:
        floor = zero if high is None else max(-high, zero)
        negative = _magnitude(floor, None if low is None else -low)
    return _signed(positive, negative)


def _truncated(low: int, high: int) -> str:
    """Plain decimal text (no sign) whose integer part is from ``low`` to ``high``."""
    return _with_whole(_whole(low, high), _ANY_FRACTION, low == 0, "\\.[0-9]+")


def integer_text_pattern(low: int, high: int) -> str:
    """Plain decimal text whose value truncated toward zero lies from ``low`` to ``high``
    (``low <= high``): what an integer field accepts as a numeric string."""
    positive = _truncated(max(low, 0), high) if high >= 0 else None
    negative = _truncated(max(-high, 0), -low) if low <= 0 else None
    return _signed(positive, negative)
