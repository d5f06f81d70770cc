"""Write path of host.fieldtypes: coerce_write / coerce_default for every field type."""

from __future__ import annotations

import time

# The guards against pathological inputs measure this thread's CPU time, not wall time: a
# loaded machine (CI runs environments side by side) must not fail them.
from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType

import pytest

from host.fieldtypes import INT64_MAX, INT64_MIN, coerce_default, coerce_write
from plugin_api.definitions import Field, FieldType, JSONValue
from plugin_api.errors import BadRequest

STRING = Field(name="title", type=FieldType.STRING, max_length=5)
NSTRING = Field(name="note", type=FieldType.STRING, nullable=True)
INTEGER = Field(name="estimate_hours", type=FieldType.INTEGER)
DATETIME = Field(name="due_at", type=FieldType.DATETIME, nullable=True)
ENUM = Field(name="status", type=FieldType.ENUM, options=("open", "closed"))
MONEY = Field(name="price", type=FieldType.MONEY, currency="EUR", nullable=True)
BOOLEAN = Field(name="urgent", type=FieldType.BOOLEAN)

ALL = (STRING, INTEGER, DATETIME, ENUM, MONEY, BOOLEAN)


def rejects(field: Field, value: object, *fragments: str) -> str:
    with pytest.raises(BadRequest) as info:
        coerce_write(field, value)
    message = info.value.message
    assert f"'{field.name}'" in message
    for fragment in fragments:
        assert fragment in message
    return message


def eur(amount: object) -> dict[str, object]:
    return {"amount": amount, "currency": "EUR"}


EUR_01: Mapping[str, JSONValue] = MappingProxyType({"amount": 0.1, "currency": "EUR"})
EUR_990: Mapping[str, JSONValue] = MappingProxyType({"amount": "9.90", "currency": "EUR"})


# --- null ------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ALL, ids=lambda f: f.type.value)
def test_null_rejected_when_not_nullable(field: Field) -> None:
    field = Field(name="x", type=field.type, options=field.options, currency=field.currency)
    assert rejects(field, None) == "Field 'x' is required and cannot be null"


@pytest.mark.parametrize("field", ALL, ids=lambda f: f.type.value)
def test_null_accepted_when_nullable(field: Field) -> None:
    field = Field(
        name="x", type=field.type, options=field.options, currency=field.currency, nullable=True
    )
    assert coerce_write(field, None) is None


def test_plain_string_type_names_are_accepted() -> None:
    field = Field(name="n", type="integer")  # type: ignore[arg-type]
    assert coerce_write(field, "5") == 5


# --- string ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", "a", "ü€𝄞", "x" * 10_000, " padded ", "null", "\t\n"])
def test_string_accepts_any_text(value: str) -> None:
    assert coerce_write(STRING, value) == value  # max_length is advisory


@pytest.mark.parametrize("value", [0, 1, 1.5, Decimal("2"), True, False, [], {}, ["a"]])
def test_string_rejects_non_strings(value: object) -> None:
    rejects(STRING, value, "expects a string")


@pytest.mark.parametrize("value", ["a\x00b", "\x00", "a\ud800", "\udfff", "é\udc80"])
def test_string_rejects_nul_and_lone_surrogates(value: str) -> None:
    message = rejects(NSTRING, value, "NUL character or a lone surrogate")
    message.encode("utf-8")  # the message itself is safe to send


def test_string_keeps_valid_astral_characters() -> None:
    assert coerce_write(STRING, "\U0001f600") == "\U0001f600"


# --- integer ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (-0, 0),
        (42, 42),
        (-7, -7),
        (INT64_MAX, INT64_MAX),
        (INT64_MIN, INT64_MIN),
        (Decimal("3.9"), 3),
        (Decimal("-3.9"), -3),
        (Decimal("-0.5"), 0),
        (Decimal("-0"), 0),
        (Decimal("1E+3"), 1000),
        (Decimal("9223372036854775807.9"), INT64_MAX),
        (Decimal("-9223372036854775808.9"), INT64_MIN),
        (Decimal("1e-999999999"), 0),
        (Decimal("0E+999999999"), 0),
        (3.9, 3),
        (-3.9, -3),
        (-0.0, 0),
        (1e18, 10**18),
        ("42", 42),
        (" 42 ", 42),
        ("\t-7\n", -7),
        ("+5", 5),
        ("4.5", 4),
        ("-4.5", -4),
        ("1e3", 1000),
        ("1E3", 1000),
        ("0", 0),
        ("-0", 0),
        (".5", 0),
        ("5.", 5),
        ("0007", 7),
        ("9223372036854775807", INT64_MAX),
        ("-9223372036854775808", INT64_MIN),
        ("1e-99999999999999999999999", 0),
        ("0e99999999999999999999999", 0),
    ],
)
def test_integer_accepts(value: object, expected: int) -> None:
    result = coerce_write(INTEGER, value)
    assert result == expected
    assert type(result) is int


@pytest.mark.parametrize(
    "value",
    [
        INT64_MAX + 1,
        INT64_MIN - 1,
        10**100,
        Decimal("9223372036854775808"),
        Decimal("-9223372036854775809"),
        Decimal("1e19"),
        Decimal("1e999999999"),
        Decimal("-1e999999999"),
        9.3e18,
        1e300,
        "9223372036854775808",
        "-9223372036854775809",
        "1e19",
        "1e999999999",
        "1e99999999999999999999999",
    ],
)
def test_integer_out_of_range(value: object) -> None:
    rejects(INTEGER, value, "out of range")


@pytest.mark.parametrize(
    "value",
    [
        *["", " ", "abc", "nan", "NaN", "inf", "-Infinity", "1_000", "0x10", "1,5", "4 2", "--1"],
        *["e3", "1e", ".", "\u0661\u0662", "\uff11"],
        *[True, False, [], [1], {}, {"a": 1}],
    ],
)
def test_integer_rejects_non_numbers(value: object) -> None:
    rejects(INTEGER, value, "expects an integer or a numeric string")


@pytest.mark.parametrize(
    "value", [Decimal("NaN"), Decimal("Infinity"), Decimal("-Infinity"), float("nan"), float("inf")]
)
def test_integer_rejects_non_finite(value: object) -> None:
    rejects(INTEGER, value, "finite")


def test_integer_message_matches_the_documented_form() -> None:
    assert (
        rejects(INTEGER, "abc")
        == "Field 'estimate_hours' expects an integer or a numeric string, got 'abc'"
    )


def test_integer_huge_exponent_is_fast() -> None:
    start = time.thread_time()
    for value in (Decimal("1e999999999"), "1e999999999", "9" * 100_000 + ".5"):
        with pytest.raises(BadRequest):
            coerce_write(INTEGER, value)
    assert time.thread_time() - start < 1.0


# --- datetime --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2030-01-02T03:04:05Z", "2030-01-02T03:04:05.000000Z"),
        ("2030-01-02T03:04:05z", "2030-01-02T03:04:05.000000Z"),
        ("2030-01-02t03:04:05Z", "2030-01-02T03:04:05.000000Z"),
        ("2030-01-02 03:04:05Z", "2030-01-02T03:04:05.000000Z"),
        ("2030-01-02T03:04", "2030-01-02T03:04:00.000000Z"),
        ("2030-01-02T03:04:05", "2030-01-02T03:04:05.000000Z"),
        ("2030-01-02T03:04Z", "2030-01-02T03:04:00.000000Z"),
        ("2030-01-02T03:04:05.1Z", "2030-01-02T03:04:05.100000Z"),
        ("2030-01-02T03:04:05.123456Z", "2030-01-02T03:04:05.123456Z"),
        ("2030-01-02T03:04:05.1234567899Z", "2030-01-02T03:04:05.123456Z"),
        ("2030-01-02T03:04:05.999999999Z", "2030-01-02T03:04:05.999999Z"),
        ("2030-01-02T03:04:05+05:30", "2030-01-01T21:34:05.000000Z"),
        ("2030-01-02T03:04:05+0530", "2030-01-01T21:34:05.000000Z"),
        ("2030-01-02T03:04:05-08:00", "2030-01-02T11:04:05.000000Z"),
        ("2030-01-02T03:04-0800", "2030-01-02T11:04:00.000000Z"),
        ("2030-01-02T03:04:05+00:00", "2030-01-02T03:04:05.000000Z"),
        ("2030-01-02T03:04:05-00:00", "2030-01-02T03:04:05.000000Z"),
        ("2030-01-02T03:04:05+23:59", "2030-01-01T03:05:05.000000Z"),
        ("2030-12-31T23:30:00-01:00", "2031-01-01T00:30:00.000000Z"),
        ("2024-02-29T12:00:00Z", "2024-02-29T12:00:00.000000Z"),
        ("2000-02-29T00:00:00Z", "2000-02-29T00:00:00.000000Z"),
        ("2024-03-01T01:00:00+02:00", "2024-02-29T23:00:00.000000Z"),
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000Z"),
        ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z"),
        ("0001-01-01T05:00:00+05:00", "0001-01-01T00:00:00.000000Z"),
    ],
)
def test_datetime_accepts(value: str, expected: str) -> None:
    assert coerce_write(DATETIME, value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "",
        "2030-01-02",
        "2030-01-02T03",
        "2030-13-01T00:00Z",
        "2030-00-01T00:00Z",
        "2030-01-00T00:00Z",
        "2030-01-32T00:00Z",
        "2030-02-30T00:00Z",
        "2023-02-29T00:00Z",
        "1900-02-29T00:00Z",
        "2030-04-31T00:00Z",
        "2030-01-01T24:00Z",
        "2030-01-01T23:60Z",
        "2030-01-01T23:59:60Z",
        "2030-01-01T00:00+24:00",
        "2030-01-01T00:00+23:60",
        "2030-01-01T00:00+5:30",
        "2030-01-01T00:00+05",
        "2030-01-01T00:00:00.Z",
        "2030-01-01T00:00:00,5Z",
        "2030-01-01T00:00:00ZZ",
        "2030-01-01T00:00:00 Z",
        "2030-01-01  00:00Z",
        "2030-01-01X00:00Z",
        " 2030-01-01T00:00Z",
        "2030-01-01T00:00Z ",
        "30-01-01T00:00Z",
        "+2030-01-01T00:00Z",
        "20300-01-01T00:00Z",
        "0000-01-01T00:00Z",
        "\uff12\uff10\uff13\uff10-01-01T00:00Z"  # fullwidth digits,
        "2030-01-01T00:00:00\x00",
        "0001-01-01T00:00:00+00:01",
        "9999-12-31T23:59:59-00:01",
        "now",
    ],
)
def test_datetime_rejects_text(value: str) -> None:
    rejects(DATETIME, value, "RFC 3339")


@pytest.mark.parametrize("value", [0, 1893456000, Decimal("1.5"), True, [], {}])
def test_datetime_rejects_non_strings(value: object) -> None:
    rejects(DATETIME, value, "RFC 3339")


def test_datetime_canonical_text_sorts_like_time() -> None:
    inputs = [
        "2030-01-02T03:04:05+05:30",
        "2030-01-01T21:34:05.5Z",
        "0999-01-01T00:00Z",
        "2030-01-01T21:34:04.999999Z",
        "2030-01-02T03:04",
    ]
    stored = [coerce_write(DATETIME, value) for value in inputs]
    assert all(isinstance(text, str) and len(text) == 27 for text in stored)
    assert sorted(stored) == [  # type: ignore[type-var]
        "0999-01-01T00:00:00.000000Z",
        "2030-01-01T21:34:04.999999Z",
        "2030-01-01T21:34:05.000000Z",
        "2030-01-01T21:34:05.500000Z",
        "2030-01-02T03:04:00.000000Z",
    ]


def test_datetime_huge_fraction_is_fast() -> None:
    start = time.thread_time()
    assert coerce_write(DATETIME, "2030-01-01T00:00:00." + "9" * 1_000_000 + "Z") == (
        "2030-01-01T00:00:00.999999Z"
    )
    assert time.thread_time() - start < 1.0


# --- enum ------------------------------------------------------------------------------------


def test_enum_accepts_options() -> None:
    assert coerce_write(ENUM, "open") == "open"
    assert coerce_write(ENUM, "closed") == "closed"


@pytest.mark.parametrize("value", ["Open", "", " open", "pending", 0, True, ["open"], {"v": 1}])
def test_enum_rejects_other_values(value: object) -> None:
    message = rejects(ENUM, value, "one of 'open', 'closed'")
    assert message.startswith("Field 'status' expects one of 'open', 'closed', got ")


# --- money -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amount", "expected"),
    [
        ("12.50", "12.50"),
        ("12.5", "12.5"),
        ("0", "0"),
        ("0.00", "0.00"),
        ("-0", "0"),
        ("-0.00", "0.00"),
        ("+3", "3"),
        (" 7 ", "7"),
        ("1E+2", "100"),
        ("1e2", "100"),
        ("1.50E+3", "1500"),
        ("1.5e-3", "0.0015"),
        ("0E+5", "0"),
        ("-0E-2", "0.00"),
        (".5", "0.5"),
        ("-12.345", "-12.345"),
        ("123456789012345678901234567890.123456789", "123456789012345678901234567890.123456789"),
        ("9" * 64, "9" * 64),
        ("-" + "9" * 63, "-" + "9" * 63),
        ("0." + "0" * 61 + "1", "0." + "0" * 61 + "1"),
        ("0e99999999999999999999999", "0"),
        (0, "0"),
        (12, "12"),
        (-12, "-12"),
        (10**63, "1" + "0" * 63),
        (Decimal("12.50"), "12.50"),
        (Decimal("-0.00"), "0.00"),
        (Decimal("1E+2"), "100"),
        (Decimal("1E-2"), "0.01"),
        (0.1, "0.1"),
        (12.5, "12.5"),
        (-0.0, "0.0"),
        (1e16, "10000000000000000"),
        (1e-7, "0.0000001"),
    ],
)
def test_money_accepts(amount: object, expected: str) -> None:
    assert coerce_write(MONEY, eur(amount)) == expected


@pytest.mark.parametrize(
    "amount",
    [
        "9" * 65,
        "-" + "9" * 64,
        "0." + "0" * 62 + "1",
        "1e64",
        "1e999999999",
        "1e99999999999999999999999",
        "1e-999999999",
        "1e-99999999999999999999999",
        Decimal("1e999999999"),
        Decimal("-1e999999999"),
        Decimal("1e-999999999"),
        Decimal("0e-999999999"),
        10**64,
        1e300,
    ],
)
def test_money_out_of_range(amount: object) -> None:
    start = time.thread_time()
    rejects(MONEY, eur(amount), "out of range")
    assert time.thread_time() - start < 0.5


@pytest.mark.parametrize(
    "amount",
    [
        *["", " ", "abc", "NaN", "nan", "Infinity", "-inf", "1_000", "1,50", "\u0661", "$5"],
        *["5 EUR", True, False, None, [], {}, {"amount": 1}],
        *[Decimal("NaN"), Decimal("sNaN"), Decimal("Infinity"), float("nan"), float("-inf")],
    ],
)
def test_money_rejects_bad_amounts(amount: object) -> None:
    rejects(MONEY, eur(amount), "expects a decimal amount")


@pytest.mark.parametrize(
    "value", [{"amount": "1"}, {"currency": "EUR"}, {}, {"amount": "1", "currency": "EUR", "x": 1}]
)
def test_money_requires_exactly_amount_and_currency(value: object) -> None:
    rejects(MONEY, value, "exactly the keys 'amount' and 'currency'")


@pytest.mark.parametrize("currency", ["USD", "eur", "", None, 978, ["EUR"]])
def test_money_rejects_other_currencies(currency: object) -> None:
    rejects(MONEY, {"amount": "1", "currency": currency}, "currency 'EUR'")


@pytest.mark.parametrize("value", ["12.50", 12, Decimal("1"), True, [], ["12.50", "EUR"]])
def test_money_rejects_non_objects(value: object) -> None:
    rejects(MONEY, value, "expects an object with 'amount' and 'currency'")


def test_money_accepts_any_mapping() -> None:
    assert coerce_write(MONEY, MappingProxyType(eur("1.5"))) == "1.5"


# --- boolean ---------------------------------------------------------------------------------


def test_boolean_accepts_only_true_and_false() -> None:
    assert coerce_write(BOOLEAN, True) is True
    assert coerce_write(BOOLEAN, False) is False


@pytest.mark.parametrize("value", [0, 1, "true", "false", "", Decimal("1"), 1.0, [], {}])
def test_boolean_rejects_everything_else(value: object) -> None:
    rejects(BOOLEAN, value, "expects true or false")


# --- hostile containers ----------------------------------------------------------------------


@pytest.mark.parametrize("field", [STRING, INTEGER, DATETIME, ENUM, BOOLEAN])
@pytest.mark.parametrize("value", [{"$gt": ""}, [1, 2], ("a",), {"amount": "1", "currency": "EUR"}])
def test_containers_rejected_for_scalar_types(field: Field, value: object) -> None:
    message = rejects(field, value)
    assert "an object" in message or "an array" in message


def test_error_messages_truncate_long_values() -> None:
    message = rejects(INTEGER, "x" * 100_000)
    assert len(message) < 200
    assert message.endswith("...'")
    assert rejects(INTEGER, 10**10_000).endswith("got a very large integer")
    assert len(rejects(INTEGER, Decimal("1" * 10_000))) < 200
    assert rejects(STRING, 10**60).endswith("got " + str(10**60)[:40] + "...")


# --- defaults --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        (Field(name="t", type=FieldType.STRING, default="hello"), "hello"),
        (Field(name="t", type=FieldType.STRING, nullable=True, default=None), None),
        (Field(name="n", type=FieldType.INTEGER, default=2.5), 2),
        (Field(name="n", type=FieldType.INTEGER, default="7"), 7),
        (Field(name="d", type=FieldType.DATETIME, default="2030-01-02T03:04:05+01:00"),
         "2030-01-02T02:04:05.000000Z"),
        (Field(name="e", type=FieldType.ENUM, options=("a", "b"), default="b"), "b"),
        (Field(name="b", type=FieldType.BOOLEAN, default=False), False),
        (Field(name="m", type=FieldType.MONEY, currency="EUR", default=EUR_01), "0.1"),
        (Field(name="m", type=FieldType.MONEY, currency="EUR", default=EUR_990), "9.90"),
    ],
)  # fmt: skip
def test_coerce_default(field: Field, expected: object) -> None:
    assert coerce_default(field) == expected
    assert coerce_default(field) == expected  # cached path (when hashable) agrees


def test_coerce_default_requires_a_default() -> None:
    with pytest.raises(ValueError, match="no default"):
        coerce_default(Field(name="t", type=FieldType.STRING))


def test_coerce_default_reports_bad_definitions() -> None:
    with pytest.raises(BadRequest, match="'n'"):
        coerce_default(Field(name="n", type=FieldType.INTEGER, default="lots"))
    with pytest.raises(BadRequest, match="cannot be null"):
        coerce_default(Field(name="n", type=FieldType.INTEGER, default=None))
