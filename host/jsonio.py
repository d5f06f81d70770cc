"""Strict JSON request decoding and fast response encoding.

Quart's own ``get_json`` turns invalid UTF-8 and deeply nested bodies into 500s and accepts
``NaN``; :func:`loads` turns every malformed body into a :class:`BadRequest` instead, and
decodes numbers with a fraction or exponent as exact :class:`~decimal.Decimal` values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from types import MappingProxyType
from typing import Final, NoReturn

import orjson

from plugin_api.errors import BadRequest

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "dumps", "loads", "loads_object"]

MAX_DEPTH: Final = 64
"""Deepest nesting of arrays and objects accepted (the top-level container is depth 1)."""
MAX_INT_DIGITS: Final = 4300
"""Longest integer literal accepted (Python 3.11+'s own limit, applied on every version)."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_WHITESPACE: Final = " \t\n\r"


def _reject_constant(name: str) -> NoReturn:
    raise BadRequest(f"Request body is not valid JSON: {name} is not a JSON number")


def _parse_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise BadRequest(f"Request body contains an integer with more than {MAX_INT_DIGITS} digits")
    return int(text)


_DECODER: Final = json.JSONDecoder(
    parse_float=Decimal, parse_int=_parse_int, parse_constant=_reject_constant
)


def _has_surrogate(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def _check_structure(value: object) -> None:
    """Enforce :data:`MAX_DEPTH` and reject lone surrogates (iteratively, no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if any(_has_surrogate(key) for key in node):
                raise _surrogate_error()
            children: list[object] = list(node.values())
        elif isinstance(node, list):
            children = node
        else:
            if isinstance(node, str) and _has_surrogate(node):
                raise _surrogate_error()
            continue
        if depth > MAX_DEPTH:
            raise _too_deep()
        stack.extend((child, depth + 1) for child in children)


def _holds_float(node: object, depth: int = 1) -> bool:
    """Whether a value orjson decoded is or holds a ``float`` (at any depth); raises
    :class:`BadRequest` for a container past :data:`MAX_DEPTH` (so the recursion stays that
    shallow). No surrogate check: orjson refuses a lone surrogate."""
    if not isinstance(node, (dict, list)):
        return isinstance(node, float)
    if depth > MAX_DEPTH:
        raise _too_deep()
    found = False
    for child in node.values() if isinstance(node, dict) else node:
        if isinstance(child, (dict, list)):
            found = _holds_float(child, depth + 1) or found
        elif isinstance(child, float):
            found = True
    return found


def _surrogate_error() -> BadRequest:
    return BadRequest("Request body contains a lone surrogate escape, which is not valid Unicode")


def _too_deep() -> BadRequest:
    return BadRequest(f"Request body is nested too deeply (at most {MAX_DEPTH} levels)")


def loads(raw: bytes) -> object:
    """Decode a request body strictly (:func:`_loads_exact`'s rules and answers).

    orjson decodes first (an action's body in 6 us instead of 30: the standard library's
    decoder calls back per number, and the structure check walks every node): a body it
    accepts without a number with a fraction or exponent, or beyond 64 bits (both of which
    it makes ``float``), decodes to the same values. Every other body (a ``float``, or
    anything orjson refuses: invalid UTF-8, a BOM, ``NaN``, a lone surrogate, bad syntax,
    or nested past :data:`MAX_DEPTH`) is decoded again by :func:`_loads_exact`, which gives
    the values and the error messages of before."""
    try:
        value: object = orjson.loads(raw)
        exact = _holds_float(value)
    except (orjson.JSONDecodeError, BadRequest):
        exact = True  # the error to raise is the one the exact decoder meets first
    return _loads_exact(raw) if exact else value


def _loads_exact(raw: bytes) -> object:
    """Decode a request body strictly: UTF-8 (a BOM is tolerated), then JSON.

    Numbers with a fraction or exponent become :class:`Decimal`, integers ``int``. Raises
    :class:`BadRequest` for an empty body, invalid UTF-8, invalid JSON, ``NaN``/``Infinity``,
    an integer over :data:`MAX_INT_DIGITS` digits, an exponent the decimal module cannot hold,
    nesting deeper than :data:`MAX_DEPTH`, or a lone surrogate escape (``"\\ud800"``).
    """
    try:
        text = raw.decode("utf-8-sig")  # strict; drops one leading BOM
    except UnicodeDecodeError:
        raise BadRequest("Request body is not valid UTF-8") from None
    if not text.strip(_WHITESPACE):
        raise BadRequest("Request body is empty; expected a JSON object")
    try:
        value: object = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"Request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise _too_deep() from None
    except InvalidOperation:
        raise BadRequest("Request body contains a number out of range") from None
    except ValueError as exc:  # e.g. the interpreter's own integer digit limit
        raise BadRequest(f"Request body contains an unreadable number: {exc}") from None
    _check_structure(value)
    return value


def loads_object(raw: bytes) -> dict[str, object]:
    """:func:`loads`, requiring the top level to be a JSON object."""
    value = loads(raw)
    if not isinstance(value, dict):
        raise BadRequest("Request body must be a JSON object")
    return value


def _default(value: object) -> object:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (MappingProxyType, Mapping)):
        return dict(value)
    if isinstance(value, (set, frozenset)):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: object) -> bytes:
    """Serialise a response value to compact UTF-8 JSON bytes (orjson).

    ``Decimal`` becomes its string form; tuples, read-only mappings and sets are supported.
    Values orjson refuses but JSON can express (a lone surrogate, an integer beyond 64 bits)
    fall back to the standard library encoder.
    """
    try:
        return orjson.dumps(value, default=_default)
    except orjson.JSONEncodeError as exc:
        # orjson refuses lone surrogates and integers beyond 64 bits; the standard library
        # writes both as valid JSON text.
        try:
            text = json.dumps(
                value, default=_default, ensure_ascii=True, allow_nan=False, separators=(",", ":")
            )
        except (TypeError, ValueError, RecursionError):
            raise exc from None
        return text.encode("ascii")
