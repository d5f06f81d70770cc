"""host.jsonio: strict request decoding and response encoding."""

from __future__ import annotations

import json
import time

# The guards against pathological inputs measure this thread's CPU time, not wall time: a
# loaded machine (CI runs environments side by side) must not fail them.
from decimal import Decimal
from types import MappingProxyType

import pytest

from host.jsonio import MAX_DEPTH, MAX_INT_DIGITS, dumps, loads, loads_object
from plugin_api.errors import BadRequest


def bad(raw: bytes, fragment: str) -> str:
    with pytest.raises(BadRequest) as info:
        loads(raw)
    assert fragment in info.value.message
    return info.value.message


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"{}", {}),
        (b'{"a": 1}', {"a": 1}),
        (b' \n\t{"a": [1, "x", null, true, false]}\r\n', {"a": [1, "x", None, True, False]}),
        (b"[]", []),
        (b"0", 0),
        (b'"s"', "s"),
        (b"null", None),
        (b'{"s": "caf\xc3\xa9 \\u00e9 \\ud83d\\ude00 \xf0\x9f\x98\x80"}', {"s": "café é 😀 😀"}),
        (b'{"nul": "a\\u0000b"}', {"nul": "a\x00b"}),
        (b'{"a": 1, "a": 2}', {"a": 2}),
        (b"\xef\xbb\xbf{}", {}),
        (b'\xef\xbb\xbf {"a": 1}', {"a": 1}),
    ],
)
def test_loads_accepts(raw: bytes, expected: object) -> None:
    assert loads(raw) == expected


def test_fractions_and_exponents_are_exact_decimals() -> None:
    value = loads(b'{"a": 0.1, "b": 1e3, "c": -0.0, "d": 12.50, "e": 1E-7, "f": 3}')
    assert value == {
        "a": Decimal("0.1"),
        "b": Decimal("1E+3"),
        "c": Decimal("-0.0"),
        "d": Decimal("12.50"),
        "e": Decimal("1E-7"),
        "f": 3,
    }
    assert isinstance(value, dict)
    assert all(type(v) is Decimal for k, v in value.items() if k != "f")
    assert str(value["d"]) == "12.50"
    assert type(value["f"]) is int


def test_big_integers() -> None:
    assert loads(b"[9223372036854775808, -9223372036854775809]") == [2**63, -(2**63) - 1]
    digits = b"9" * MAX_INT_DIGITS
    assert loads(digits) == int(digits)
    bad(b"9" * (MAX_INT_DIGITS + 1), "more than 4300 digits")
    bad(b"[-" + b"9" * 100_000 + b"]", "digits")


def test_huge_exponents() -> None:
    assert loads(b"1e999999999") == Decimal("1e999999999")
    bad(b"[1e99999999999999999999999]", "out of range")
    bad(b"[1e-99999999999999999999999]", "out of range")


@pytest.mark.parametrize("raw", [b"", b" ", b"\n\r\t ", b"\xef\xbb\xbf", b"\xef\xbb\xbf  "])
def test_empty_body(raw: bytes) -> None:
    assert bad(raw, "empty") == "Request body is empty; expected a JSON object"


@pytest.mark.parametrize(
    "raw",
    [
        b"\xff",
        b'{"a": "\xff"}',
        b'{"a": "\xc3"}',
        b'{"a": "\xc0\xaf"}',  # overlong
        b'{"a": "\xed\xa0\x80"}',  # encoded surrogate
        b'{"a": "\xf4\x90\x80\x80"}',  # above U+10FFFF
        b"\xfe\xff\x00{",
        b"\xff\xfe{\x00}\x00",  # UTF-16
    ],
)
def test_invalid_utf8(raw: bytes) -> None:
    assert bad(raw, "UTF-8") == "Request body is not valid UTF-8"


@pytest.mark.parametrize(
    "raw",
    [b"NaN", b"[NaN]", b'{"a": Infinity}', b"[-Infinity]", b'{"a": [1, NaN]}'],
)
def test_non_finite_constants_are_rejected(raw: bytes) -> None:
    bad(raw, "is not a JSON number")


@pytest.mark.parametrize(
    ("raw", "position"),
    [
        (b"{", "line 1 column 2 (char 1)"),
        (b'{"a": 1,}', "line 1 column"),  # the exact column differs on Python 3.13
        (b"[1,]", "line 1 column"),
        (b"{'a': 1}", "char 1"),
        (b'{"a": 1} x', "Extra data"),
        (b'{"a": 01}', "char"),
        (b'{"a": "\x01"}', "Invalid control character"),
        (b'{"a": "\\x"}', "Invalid \\escape"),
        (b"\xef\xbb\xbf\xef\xbb\xbf{}", "char 0"),  # a second BOM is not whitespace
        (b"undefined", "char 0"),
        (b"+1", "char 0"),
        (b".5", "char 0"),
    ],
)
def test_malformed_json(raw: bytes, position: str) -> None:
    message = bad(raw, "Request body is not valid JSON: ")
    assert position in message


def test_lone_surrogate_escapes_are_rejected() -> None:
    for raw in (
        b'"\\ud800"',
        b'{"a": ["x\\udc00"]}',
        b'{"\\udfff": 1}',
        b'{"a": "\\ude00\\ud83d"}',
    ):
        bad(raw, "lone surrogate")


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 100, 1_000, 100_000, 1_000_000])
@pytest.mark.parametrize(
    ("opener", "inner", "closer"), [(b"[", b"", b"]"), (b'{"a":', b"1", b"}"), (b"[", b"{}", b"]")]
)
def test_deep_nesting_is_a_bad_request_and_fast(
    levels: int, opener: bytes, inner: bytes, closer: bytes
) -> None:
    start = time.thread_time()
    message = bad(opener * levels + inner + closer * levels, "nested too deeply")
    assert message == f"Request body is nested too deeply (at most {MAX_DEPTH} levels)"
    with pytest.raises(BadRequest):  # truncated: either message is fine, but never a crash
        loads(opener * levels)
    assert time.thread_time() - start < 1.0


def test_nesting_at_the_limit_is_accepted() -> None:
    value = loads(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
    depth = 0
    while isinstance(value, list):
        depth += 1
        value = value[0] if value else None
    assert depth == MAX_DEPTH
    mixed = b'{"a":' * (MAX_DEPTH - 1) + b"[1]" + b"}" * (MAX_DEPTH - 1)
    assert isinstance(loads(mixed), dict)
    with pytest.raises(BadRequest, match="nested too deeply"):
        loads(b'{"a":' * MAX_DEPTH + b"[1]" + b"}" * MAX_DEPTH)


def test_wide_documents_are_fine() -> None:
    raw = json.dumps({f"k{i}": [i, {"v": str(i)}] for i in range(20_000)}).encode()
    start = time.thread_time()
    value = loads_object(raw)
    assert len(value) == 20_000
    assert time.thread_time() - start < 2.0


@pytest.mark.parametrize("raw", [b"[]", b"[{}]", b'"{}"', b"1", b"null", b"true"])
def test_loads_object_requires_an_object(raw: bytes) -> None:
    with pytest.raises(BadRequest) as info:
        loads_object(raw)
    assert info.value.message == "Request body must be a JSON object"


def test_loads_object_passes_other_errors_through() -> None:
    with pytest.raises(BadRequest, match="UTF-8"):
        loads_object(b"\xff")
    assert loads_object(b'{"inputs": {"n": 1.5}}') == {"inputs": {"n": Decimal("1.5")}}


# --- dumps -----------------------------------------------------------------------------------


def test_dumps_basic() -> None:
    assert dumps({"ok": True, "a": [1, None, "é"]}) == '{"ok":true,"a":[1,null,"é"]}'.encode()


def test_dumps_decimal_tuple_mappingproxy_set() -> None:
    value = {
        "d": Decimal("12.50"),
        "t": (1, (2, 3)),
        "m": MappingProxyType({"x": MappingProxyType({"y": 1})}),
        "s": frozenset({"only"}),
    }
    assert json.loads(dumps(value)) == {
        "d": "12.50",
        "t": [1, [2, 3]],
        "m": {"x": {"y": 1}},
        "s": ["only"],
    }


def test_dumps_falls_back_for_what_orjson_refuses() -> None:
    assert json.loads(dumps({"big": 10**30, "neg": -(2**64)})) == {"big": 10**30, "neg": -(2**64)}
    encoded = dumps({"s": "a\ud800b"})
    encoded.decode("ascii")
    assert encoded == b'{"s":"a\\ud800b"}'


def test_dumps_never_emits_nan() -> None:
    assert dumps([float("nan")]) == b"[null]"


def test_dumps_rejects_unknown_types() -> None:
    with pytest.raises(TypeError):
        dumps({"x": object()})


def test_round_trip_of_request_values() -> None:
    raw = (
        b'{"inputs": {"price": {"amount": "12.50", "currency": "EUR"}, "n": 2.50, "t": "\\u0000"}}'
    )
    assert loads(dumps(loads(raw))) == {
        "inputs": {"price": {"amount": "12.50", "currency": "EUR"}, "n": "2.50", "t": "\x00"}
    }


def test_the_orjson_first_path_answers_as_the_exact_decoder() -> None:
    """loads decodes with orjson first and with the standard library's decoder where orjson
    would differ: values (types included) and error messages are the exact decoder's."""
    import random

    from host.jsonio import _loads_exact

    atoms = [
        "1", "-0", "1.5", "-2E-3", "18446744073709551616", "-9223372036854775809", '"x"',
        '"\\ud800"', '"\\ud83d\\ude00"', "true", "null", "NaN", '"\\u0000"', "1" * 5000, "01",
    ]  # fmt: skip
    rng = random.Random(43)

    def body(depth: int = 0) -> str:
        pick = rng.random()
        if depth > 66 or pick < 0.4:
            return rng.choice(atoms)
        parts = [body(depth + 1) for _ in range(rng.randint(0, 3))]
        if pick < 0.7:
            return "[" + ",".join(parts) + "]"
        return "{" + ",".join(f'"{rng.choice("ab")}":{part}' for part in parts) + "}"

    def answer(decode: object, raw: bytes) -> object:
        try:
            value = decode(raw)  # type: ignore[operator]
        except BadRequest as error:
            return ("error", error.message)
        return ("value", json.dumps(value, default=lambda d: ["Decimal", str(d)]))

    bodies = [body().encode() for _ in range(3000)]
    bodies += [b"", b"\xef\xbb\xbf[1.0]", b"\xff", b"[1]x", b"[" * 70 + b"1.5" + b"]" * 70]
    for raw in bodies:
        assert answer(loads, raw) == answer(_loads_exact, raw), raw
