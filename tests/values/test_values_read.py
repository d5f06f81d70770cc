"""Read path of host.fieldtypes (render, render_system, render_datetime, now_db), column types."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
import sqlalchemy as sa

from host.fieldtypes import (
    column_type,
    now_db,
    render,
    render_datetime,
    render_field,
)
from host.systemfields import SYSTEM, render_system
from plugin_api.definitions import SYSTEM_FIELDS, Field, FieldType

CANONICAL = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")


@pytest.mark.parametrize("field_type", [*FieldType, "identity", "version", "system_string"])
def test_null_reads_back_as_null(field_type: str) -> None:
    assert render(field_type, None, "EUR") is None


@pytest.mark.parametrize("field_type", ["string", FieldType.STRING, "enum", FieldType.ENUM])
def test_text_types(field_type: str) -> None:
    assert render(field_type, "") == ""
    assert render(field_type, "null") == "null"
    assert render(field_type, "open") == "open"


@pytest.mark.parametrize("field_type", ["identity", "version", "system_string"])
def test_system_types_render_as_text(field_type: str) -> None:
    assert render(field_type, "01J0000000000000000000000A") == "01J0000000000000000000000A"


def test_integer() -> None:
    assert render("integer", 0) == 0
    assert render(FieldType.INTEGER, -(2**63)) == -(2**63)
    assert render("integer", 2**63 - 1) == 2**63 - 1
    assert type(render("integer", Decimal("5"))) is int


def test_boolean_from_sqlite_integers() -> None:
    assert render("boolean", 0) is False
    assert render("boolean", 1) is True
    assert render(FieldType.BOOLEAN, True) is True
    assert render("boolean", False) is False
    with pytest.raises(ValueError, match="boolean"):
        render("boolean", 2)


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ("2030-01-02T03:04:00.000000Z", "2030-01-02T03:04:00Z"),
        ("2030-01-02T03:04:05.120000Z", "2030-01-02T03:04:05.12Z"),
        ("2030-01-02T03:04:05.000001Z", "2030-01-02T03:04:05.000001Z"),
        ("2030-01-02T03:04:05.100000Z", "2030-01-02T03:04:05.1Z"),
        ("0001-01-01T00:00:00.000000Z", "0001-01-01T00:00:00Z"),
        ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z"),
        # Not canonical (written by something else): normalised on the way out.
        ("2030-01-02T03:04:05+01:00", "2030-01-02T02:04:05Z"),
        ("2030-01-02 03:04", "2030-01-02T03:04:00Z"),
    ],
)
def test_datetime(stored: str, expected: str) -> None:
    assert render("datetime", stored) == expected
    assert render_datetime(stored) == expected


def test_datetime_objects() -> None:
    aware = datetime(2030, 1, 2, 3, 4, 5, 500000, tzinfo=timezone(timedelta(hours=2)))
    assert render_datetime(aware) == "2030-01-02T01:04:05.5Z"
    assert render_datetime(datetime(2030, 1, 2)) == "2030-01-02T00:00:00Z"


@pytest.mark.parametrize("stored", ["garbage", "2030-02-30T00:00:00.000000", 12])
def test_datetime_corrupt_value_is_an_error(stored: object) -> None:
    with pytest.raises(ValueError, match="datetime"):
        render_datetime(stored)


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ("12.50", {"amount": "12.50", "currency": "EUR"}),
        ("0", {"amount": "0", "currency": "EUR"}),
        ("-0.01", {"amount": "-0.01", "currency": "EUR"}),
        ("", None),
        (None, None),
    ],
)
def test_money(stored: object, expected: object) -> None:
    assert render("money", stored, "EUR") == expected


def test_money_needs_a_currency() -> None:
    with pytest.raises(ValueError, match="currency"):
        render("money", "1.00")


def test_render_field_passes_the_currency() -> None:
    field = Field(name="price", type=FieldType.MONEY, currency="JPY")
    assert render_field(field, "100") == {"amount": "100", "currency": "JPY"}


def test_unknown_type() -> None:
    with pytest.raises(ValueError, match="unknown field type"):
        render("decimal", "1")


def test_render_system() -> None:
    assert render_system("created_at", "2030-01-02T03:04:05.000000Z") == "2030-01-02T03:04:05Z"
    assert render_system("updated_at", "2030-01-02T03:04:05.250000Z") == "2030-01-02T03:04:05.25Z"
    assert render_system("id", "01J0000000000000000000000A") == "01J0000000000000000000000A"
    assert render_system("tenant_id", "acme") == "acme"
    assert render_system("_version", "01J0000000000000000000000B") == "01J0000000000000000000000B"


def test_now_db_is_canonical_current_utc() -> None:
    before = datetime.now(timezone.utc).replace(tzinfo=None)
    text = now_db()
    after = datetime.now(timezone.utc).replace(tzinfo=None)
    assert CANONICAL.fullmatch(text)
    stamp = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    assert before <= stamp <= after
    rendered = render_datetime(text)
    assert rendered is not None and rendered.endswith("Z")


# --- column types ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field_type", "expected", "length"),
    [
        (FieldType.STRING, sa.Text, None),
        (FieldType.INTEGER, sa.BigInteger, None),
        (FieldType.DATETIME, sa.String, 27),
        (FieldType.ENUM, sa.Text, None),
        (FieldType.MONEY, sa.Text, None),
        (FieldType.BOOLEAN, sa.Boolean, None),
    ],
)
def test_column_type(field_type: FieldType, expected: type, length: int | None) -> None:
    field = Field(name="x", type=field_type, options=("a",), currency="EUR")
    column = column_type(field)
    assert type(column) is expected
    assert getattr(column, "length", None) == length
    assert column_type(field) is not column  # fresh instance per column


def test_boolean_column_has_no_check_constraint() -> None:
    column = column_type(Field(name="b", type=FieldType.BOOLEAN))
    assert isinstance(column, sa.Boolean)
    assert column.create_constraint is False


def test_system_fields_are_described_once() -> None:
    assert tuple(SYSTEM) == SYSTEM_FIELDS
    assert SYSTEM["id"].view_type == "identity"
    assert SYSTEM["_version"].view_type == "version"
    for name in ("id", "_version"):
        column = SYSTEM[name].column_type()
        assert isinstance(column, sa.String) and column.length == 26
    for name in ("created_at", "updated_at"):
        column = SYSTEM[name].column_type()
        assert isinstance(column, sa.String) and column.length == 27
        assert SYSTEM[name].datetime
    assert type(SYSTEM["tenant_id"].column_type()) is sa.Text
    assert SYSTEM["id"].column_type() is not SYSTEM["id"].column_type()


def test_column_types_build_a_table() -> None:
    metadata = sa.MetaData()
    columns = [sa.Column(name, SYSTEM[name].column_type()) for name in SYSTEM_FIELDS]
    columns += [
        sa.Column(t.value, column_type(Field(name=t.value, type=t, options=("a",), currency="X")))
        for t in FieldType
    ]
    table = sa.Table("t", metadata, *columns)
    engine = sa.create_engine("sqlite://")
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(
            table.insert(),
            {
                "id": "A" * 26,
                "tenant_id": "t",
                "created_at": now_db(),
                "updated_at": now_db(),
                "_version": "B" * 26,
                "string": "s",
                "integer": 2**63 - 1,
                "datetime": "2030-01-02T03:04:05.000000Z",
                "enum": "a",
                "money": "12.50",
                "boolean": True,
            },
        )
        row = conn.execute(sa.select(table)).mappings().one()
    engine.dispose()
    assert render("integer", row["integer"]) == 2**63 - 1
    assert render("money", row["money"], "X") == {"amount": "12.50", "currency": "X"}
    assert render("boolean", row["boolean"]) is True
    assert render("datetime", row["datetime"]) == "2030-01-02T03:04:05Z"
