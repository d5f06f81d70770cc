"""Property tests: write -> db -> read round trips, idempotence, and robustness to junk."""

from __future__ import annotations

import contextlib
import re
from datetime import datetime, timedelta, timezone
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from host import jsonio
from host.fieldtypes import INT64_MAX, INT64_MIN, coerce_write, render
from plugin_api.definitions import Field, FieldType
from plugin_api.errors import BadRequest

FIELDS = {
    FieldType.STRING: Field(name="s", type=FieldType.STRING, nullable=True),
    FieldType.INTEGER: Field(name="i", type=FieldType.INTEGER, nullable=True),
    FieldType.DATETIME: Field(name="d", type=FieldType.DATETIME, nullable=True),
    FieldType.ENUM: Field(name="e", type=FieldType.ENUM, options=("a", "b c", "é"), nullable=True),
    FieldType.MONEY: Field(name="m", type=FieldType.MONEY, currency="EUR", nullable=True),
    FieldType.BOOLEAN: Field(name="b", type=FieldType.BOOLEAN, nullable=True),
    FieldType.REFERENCE: Field(name="r", type=FieldType.REFERENCE, target="x.y", nullable=True),
}
READ_DATETIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]*[1-9])?Z"
)

# --- write-shape strategies ------------------------------------------------------------------

finite_decimals = st.decimals(allow_nan=False, allow_infinity=False)
small_decimals = st.builds(
    lambda digits, exponent, negative: Decimal((int(negative), digits, exponent)),
    st.lists(st.integers(0, 9), min_size=1, max_size=40).map(tuple),
    st.integers(-40, 40),
    st.booleans(),
)
clean_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))


@st.composite
def datetime_texts(draw: st.DrawFn) -> tuple[str, datetime]:
    """An RFC 3339 text in one of the accepted spellings, with the datetime it denotes."""
    offset = draw(st.integers(-(24 * 60 - 1), 24 * 60 - 1))
    tz = timezone(timedelta(minutes=offset))
    value = draw(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)))
    value = value.replace(tzinfo=tz)
    sep = draw(st.sampled_from("Tt "))
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}{sep}{value.hour:02d}:"
    text += f"{value.minute:02d}"
    if value.second or value.microsecond or draw(st.booleans()):
        text += f":{value.second:02d}"
        if value.microsecond or draw(st.booleans()):
            text += f".{value.microsecond:06d}"[: 7 if value.microsecond == 0 else None]
            text += draw(st.text("0123456789", max_size=5))  # extra digits are truncated
    else:
        value = value.replace(second=0, microsecond=0)
    if offset == 0:
        text += draw(st.sampled_from(["Z", "z", "+00:00", "-0000", ""]))
    else:
        sign = "+" if offset > 0 else "-"
        hours, minutes = divmod(abs(offset), 60)
        colon = draw(st.sampled_from([":", ""]))
        text += f"{sign}{hours:02d}{colon}{minutes:02d}"
    return text, value


def write_values(field_type: FieldType) -> st.SearchStrategy[object]:
    """Valid write-shape values of ``field_type`` (as jsonio or a definition produces them)."""
    if field_type is FieldType.STRING:
        return clean_text
    if field_type is FieldType.INTEGER:
        return st.one_of(
            st.integers(INT64_MIN, INT64_MAX),
            st.integers(INT64_MIN, INT64_MAX).map(str),
            st.floats(-9e18, 9e18, allow_nan=False),
            st.decimals(min_value=-(10**18), max_value=10**18, allow_nan=False),
            small_decimals.filter(lambda d: abs(d) < 10**18).map(str),
        )
    if field_type is FieldType.DATETIME:
        return datetime_texts().map(lambda pair: pair[0])
    if field_type is FieldType.ENUM:
        return st.sampled_from(FIELDS[FieldType.ENUM].options)
    if field_type is FieldType.MONEY:
        amounts = st.one_of(
            small_decimals,
            small_decimals.map(str),
            st.integers(-(10**40), 10**40),
            st.floats(allow_nan=False, allow_infinity=False, min_value=-1e20, max_value=1e20),
        )
        return amounts.map(lambda amount: {"amount": amount, "currency": "EUR"})
    if field_type is FieldType.REFERENCE:
        return clean_text.filter(bool)  # any id; its existence is the runtime's check
    return st.booleans()


def any_write_value() -> st.SearchStrategy[tuple[Field, object]]:
    return st.sampled_from(list(FieldType)).flatmap(
        lambda t: st.tuples(st.just(FIELDS[t]), st.one_of(st.none(), write_values(t)))
    )


def is_read_shape(field: Field, value: object) -> bool:
    if value is None:
        return True
    if field.type in (FieldType.STRING, FieldType.ENUM, FieldType.REFERENCE):
        return isinstance(value, str)
    if field.type is FieldType.INTEGER:
        return type(value) is int
    if field.type is FieldType.BOOLEAN:
        return type(value) is bool
    if field.type is FieldType.DATETIME:
        return isinstance(value, str) and READ_DATETIME.fullmatch(value) is not None
    return (
        isinstance(value, dict)
        and set(value) == {"amount", "currency"}
        and value["currency"] == "EUR"
        and isinstance(value["amount"], str)
        and "E" not in value["amount"]
    )


# --- properties ------------------------------------------------------------------------------


@given(any_write_value())
def test_round_trip_is_canonical_and_idempotent(case: tuple[Field, object]) -> None:
    field, value = case
    try:
        db = coerce_write(field, value)
    except BadRequest as exc:  # only money can overflow (64 characters) among these values
        assert field.type is FieldType.MONEY and "out of range" in exc.message
        return
    read = render(field.type, db, field.currency)
    assert is_read_shape(field, read)
    # The read shape is a valid write shape that maps to the same database value ...
    assert coerce_write(field, read) == db
    # ... so rendering again gives the same read shape (a fixed point).
    assert render(field.type, coerce_write(field, read), field.currency) == read
    # And the read shape survives the wire.
    assert jsonio.loads(jsonio.dumps({"v": read})) == {"v": read}


@given(datetime_texts())
def test_datetime_parse_matches_the_datetime_module(case: tuple[str, datetime]) -> None:
    text, value = case
    field = FIELDS[FieldType.DATETIME]
    try:
        expected = value.astimezone(timezone.utc)
    except OverflowError:
        expected = None
    if expected is None or not 1 <= expected.year <= 9999:
        try:
            coerce_write(field, text)
        except BadRequest:
            return
        raise AssertionError(f"{text!r} should be out of range")
    db = coerce_write(field, text)
    assert db == expected.strftime("%Y-%m-%dT%H:%M:%S.%fZ").rjust(27, "0")
    read = render(FieldType.DATETIME, db)
    assert isinstance(read, str)
    pattern = "%Y-%m-%dT%H:%M:%S.%fZ" if "." in read else "%Y-%m-%dT%H:%M:%SZ"
    parsed = datetime.strptime(read, pattern)  # fromisoformat is lax on 3.10
    assert parsed.replace(tzinfo=timezone.utc) == expected


@given(st.one_of(small_decimals, small_decimals.map(str), st.integers(-(10**40), 10**40)))
def test_money_keeps_value_and_scale(amount: object) -> None:
    field = FIELDS[FieldType.MONEY]
    number = Decimal(str(amount)) if not isinstance(amount, Decimal) else amount
    try:
        db = coerce_write(field, {"amount": amount, "currency": "EUR"})
    except BadRequest:
        assert len(format(number, "f").lstrip("-")) >= 64
        return
    assert isinstance(db, str)
    assert Decimal(db) == number
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    assert Decimal(db).as_tuple().exponent == min(exponent, 0)
    assert not db.startswith("-0") or Decimal(db) != 0
    assert len(db) <= 64


@given(st.one_of(small_decimals, small_decimals.map(str), st.floats(-1e19, 1e19)))
def test_integer_truncates_toward_zero(value: object) -> None:
    field = FIELDS[FieldType.INTEGER]
    if isinstance(value, float) and value != value:
        return
    assert isinstance(value, (Decimal, str, float))
    expected = int(Decimal(value) if isinstance(value, str) else value)
    try:
        db = coerce_write(field, value)
    except BadRequest as exc:
        assert "out of range" in exc.message
        assert not INT64_MIN <= expected <= INT64_MAX
        return
    assert db == expected


json_junk = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.decimals(),
        st.text(),
        st.sampled_from(["", "1e999999999", "NaN", "2030-02-30T00:00Z", "a", "\x00", "\ud800"]),
        st.sampled_from([Decimal("1e999999999"), Decimal("-1e-999999999"), Decimal("sNaN")]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["amount", "currency", "x"]), children, max_size=3),
    ),
    max_leaves=8,
)


@given(st.sampled_from(list(FieldType)), json_junk)
def test_junk_is_accepted_or_a_bad_request(field_type: FieldType, value: object) -> None:
    field = FIELDS[field_type]
    try:
        db = coerce_write(field, value)
    except BadRequest as exc:
        assert f"'{field.name}'" in exc.message
        exc.message.encode("utf-8")  # safe to put in a response
        return
    assert coerce_write(field, render(field_type, db, field.currency)) == db


@given(st.binary(max_size=64))
def test_loads_never_crashes(raw: bytes) -> None:
    with contextlib.suppress(BadRequest):
        jsonio.loads(raw)
