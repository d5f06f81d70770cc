"""The field-type registry (host.fieldtypes) is complete and consistent.

Every FieldType member has its class; the system columns have theirs; each type's operators,
schemas, type options, renderers and writers agree with one another. The round trip through a
real table on SQLite and PostgreSQL goes the normal HTTP way, in the suites that run on both
backends: tests/runtime/test_runtime_fields.py (write and read shapes of every type but
reference, through create, update, detail and list), tests/runtime/test_runtime_references.py
(reference) and tests/http/test_http_lists.py (filters, sorts and cursors on every type);
:func:`test_every_field_type_is_declared_by_the_round_trip_suites` keeps them covering every
member.
"""

from __future__ import annotations

import contextlib
from typing import Any

import jsonschema
import pytest
import sqlalchemy as sa

from host.config import Settings
from host.fieldtypes import (
    FIELD_TYPES,
    REGISTRY,
    Ordering,
    Unconvertible,
    ValueType,
    coerce_write,
    named,
    of,
)
from host.graph import build_graph
from host.graph.compiler import compile_graph
from host.http.jsonschema import nullable
from host.plugins import load_plugins
from host.systemfields import SYSTEM
from plugin_api.definitions import Field, FieldType
from plugin_api.errors import BadRequest
from plugin_api.listing import FilterOperator

FIELDS: dict[FieldType, Field] = {
    FieldType.STRING: Field(name="s", type=FieldType.STRING, max_length=10, nullable=True),
    FieldType.INTEGER: Field(name="i", type=FieldType.INTEGER, nullable=True),
    FieldType.DATETIME: Field(name="d", type=FieldType.DATETIME, nullable=True),
    FieldType.ENUM: Field(name="e", type=FieldType.ENUM, options=("low", "high"), nullable=True),
    FieldType.MONEY: Field(name="m", type=FieldType.MONEY, currency="EUR", nullable=True),
    FieldType.BOOLEAN: Field(name="b", type=FieldType.BOOLEAN, nullable=True),
    FieldType.REFERENCE: Field(name="r", type=FieldType.REFERENCE, target="x.y", nullable=True),
}

# Write-shape samples of each type (what an action input may be) and their read shapes.
SAMPLES: dict[FieldType, list[tuple[Any, Any]]] = {
    FieldType.STRING: [("", ""), ("Drucker ☃", "Drucker ☃"), ("null", "null")],
    FieldType.INTEGER: [(0, 0), (-(2**63), -(2**63)), ("1200.9", 1200), (3.9, 3)],
    FieldType.DATETIME: [
        ("2030-01-02T03:04:05Z", "2030-01-02T03:04:05Z"),
        ("2030-01-02T03:04:05.250+01:00", "2030-01-02T02:04:05.25Z"),
    ],
    FieldType.ENUM: [("low", "low"), ("high", "high")],
    FieldType.MONEY: [
        ({"amount": "10.50", "currency": "EUR"}, {"amount": "10.50", "currency": "EUR"}),
        ({"amount": 7, "currency": "EUR"}, {"amount": "7", "currency": "EUR"}),
        ({"amount": "-0.00", "currency": "EUR"}, {"amount": "0.00", "currency": "EUR"}),
    ],
    FieldType.BOOLEAN: [(True, True), (False, False)],
    FieldType.REFERENCE: [("01J0000000000000000000000A", "01J0000000000000000000000A")],
}

# Today's operators (docs/http.md, "Lists"): adding a type adds a row here.
OPERATORS: dict[str, tuple[str, ...]] = {
    "string": ("eq", "ne", "in", "lt", "lte", "gt", "gte", "contains", "null"),
    "integer": ("eq", "ne", "in", "lt", "lte", "gt", "gte", "null"),
    "datetime": ("eq", "ne", "in", "lt", "lte", "gt", "gte", "null"),
    "enum": ("eq", "ne", "in", "lt", "lte", "gt", "gte", "null"),
    "money": ("eq", "ne", "in", "lt", "lte", "gt", "gte", "null"),
    "boolean": ("eq", "ne", "null"),
    "reference": ("eq", "ne", "in", "null"),
    "identity": ("eq", "ne", "in", "lt", "lte", "gt", "gte"),
    "timestamp": ("eq", "ne", "in", "lt", "lte", "gt", "gte"),
    "version": (),
    "system_string": (),
}


def test_every_field_type_member_has_its_class() -> None:
    assert list(FIELD_TYPES) == list(FieldType)
    for member, value_type in FIELD_TYPES.items():
        assert value_type.field_type is member
        assert value_type.name == member.value
        assert value_type.written_as is member
        assert named(member) is value_type
        assert named(member.value) is value_type
        assert of(FIELDS[member]) is value_type
        assert REGISTRY[member.value] is value_type


def test_the_registry_holds_the_field_types_then_the_system_types() -> None:
    assert list(REGISTRY)[: len(FieldType)] == [member.value for member in FieldType]
    assert list(REGISTRY)[len(FieldType) :] == ["identity", "timestamp", "version", "system_string"]
    assert len({id(t) for t in REGISTRY.values()}) == len(REGISTRY)
    for name, value_type in REGISTRY.items():
        assert isinstance(value_type, ValueType)
        assert value_type.name == name
    with pytest.raises(ValueError, match="unknown field type 'decimal'"):
        named("decimal")


def test_every_system_column_has_a_registry_type() -> None:
    expected = {
        "id": "identity",
        "tenant_id": "system_string",
        "created_at": "timestamp",
        "updated_at": "timestamp",
        "_version": "version",
    }
    assert {name: field.type.name for name, field in SYSTEM.items()} == expected
    for field in SYSTEM.values():
        assert REGISTRY[field.type.name] is field.type
        assert field.type.field_type is None
        assert field.field.name == field.name
        assert field.field.type is field.type.written_as


def test_operators_are_filter_operators_in_canonical_order() -> None:
    canonical = [op.value for op in FilterOperator]
    for name, value_type in REGISTRY.items():
        assert value_type.operators == OPERATORS[name], name
        assert list(value_type.operators) == sorted(value_type.operators, key=canonical.index)


def test_a_type_with_operators_sorts_with_an_ordering() -> None:
    for value_type in REGISTRY.values():
        assert isinstance(value_type.ordering, Ordering)
    assert {t.name for t in REGISTRY.values() if t.ordering is Ordering.OPTION_RANK} == {"enum"}
    assert {t.name for t in REGISTRY.values() if t.ordering is Ordering.NUMERIC_TEXT} == {"money"}


@pytest.mark.parametrize("member", list(FieldType))
def test_every_type_renders_what_it_writes(member: FieldType) -> None:
    field = FIELDS[member]
    value_type = FIELD_TYPES[member]
    render = value_type.renderer(field)
    read_schema = nullable(value_type.read_schema(field))
    write_schema = nullable(value_type.write_schema(field))
    assert render(None) is None
    assert coerce_write(field, None) is None
    for written, read in SAMPLES[member]:
        jsonschema.validate(written, write_schema)
        stored = value_type.write(field, written)
        assert render(stored) == read
        assert type(render(stored)) is type(read)
        jsonschema.validate(read, read_schema)
        # The read shape is a write shape of the same value (idempotent).
        assert value_type.write(field, read) == stored
        if value_type.as_stored:
            assert isinstance(stored, str) and render(stored) is stored


@pytest.mark.parametrize("member", list(FieldType))
def test_null_is_shared_and_named(member: FieldType) -> None:
    value_type = FIELD_TYPES[member]
    required = Field(name="x", type=member, options=("a",), currency="EUR", target="x.y")
    with pytest.raises(BadRequest, match=r"^Field 'x' is required and cannot be null$"):
        coerce_write(required, None)
    # A row condition's value: null as for inputs, except booleans (strictly true or false)
    # and money (an amount).
    if member is FieldType.BOOLEAN:
        with pytest.raises(BadRequest, match=r"^Field 'x' expects true or false$"):
            value_type.operand(required, None)
    elif member is FieldType.MONEY:
        with pytest.raises(BadRequest, match=r"^Field 'x' expects a decimal amount"):
            value_type.operand(required, None)
    else:
        assert value_type.operand(FIELDS[member], None) is None
        with pytest.raises(BadRequest, match=r"^Field 'x' is required and cannot be null$"):
            value_type.operand(required, None)


@pytest.mark.parametrize("member", list(FieldType))
def test_type_options_and_their_schemas_agree(member: FieldType) -> None:
    value_type = FIELD_TYPES[member]
    options = value_type.type_options(FIELDS[member])
    if options is None:
        assert not value_type.type_option_schemas
    else:
        assert set(options) <= set(value_type.type_option_schemas)
        jsonschema.validate(
            options, {"type": "object", "properties": value_type.type_option_schemas}
        )
    for key in value_type.type_option_schemas:  # one key, one type
        owners = [t.name for t in FIELD_TYPES.values() if key in t.type_option_schemas]
        assert owners == [value_type.name], key


def test_column_types_are_fresh_instances() -> None:
    for value_type in REGISTRY.values():
        column = value_type.column_type()
        assert isinstance(column, sa.types.TypeEngine)
        assert value_type.column_type() is not column


@pytest.mark.parametrize("member", list(FieldType))
def test_url_text_and_condition_values_parse_like_inputs(member: FieldType) -> None:
    field = FIELDS[member]
    value_type = FIELD_TYPES[member]
    for written, _read in SAMPLES[member]:
        stored = value_type.write(field, written)
        assert value_type.keyset_value(stored) == stored
        if member is FieldType.MONEY:
            assert value_type.operand(field, written["amount"]) == stored
            assert value_type.parse_text(field, str(written["amount"])) == stored
        elif member is FieldType.BOOLEAN:
            assert value_type.operand(field, written) is stored
            assert value_type.parse_text(field, "true" if written else "false") is stored
        else:
            assert value_type.operand(field, written) == stored
            if isinstance(written, str):
                assert value_type.parse_text(field, written) == stored


def test_booleans_are_strict_and_keys_are_booleans() -> None:
    boolean, field = FIELD_TYPES[FieldType.BOOLEAN], FIELDS[FieldType.BOOLEAN]
    assert boolean.keyset_value(1) is True and boolean.keyset_value(0) is False
    assert boolean.keyset_value(None) is None
    with pytest.raises(BadRequest, match="Field 'b' expects true or false, got '1'"):
        boolean.parse_text(field, "1")
    with pytest.raises(BadRequest, match="Field 'b' expects true or false"):
        boolean.operand(field, 1)


def test_system_types_are_never_written_or_converted_into() -> None:
    for name in ("identity", "timestamp", "version", "system_string"):
        value_type = REGISTRY[name]
        with pytest.raises(TypeError, match="written by the host only"):
            value_type.write_schema(value_type.stand_in("x"))
        with pytest.raises(Unconvertible):
            value_type.accept(REGISTRY["string"], "x", value_type.stand_in("x"))


def test_conversions_give_write_shapes_or_say_unconvertible() -> None:
    """Into every type, from every type, for every sample: ``accept`` gives a write shape
    the new field takes or refuses with a 400 (both reported by host/storage/convert.py),
    or raises :class:`Unconvertible`; nothing else."""
    for old_member, old in FIELD_TYPES.items():
        for _written, read in SAMPLES[old_member]:
            for member, value_type in FIELD_TYPES.items():
                try:
                    shape = value_type.accept(old, read, FIELDS[member])
                except Unconvertible:
                    continue
                with contextlib.suppress(BadRequest):
                    coerce_write(FIELDS[member], shape)


def test_every_field_type_is_declared_by_the_round_trip_suites() -> None:
    """The HTTP round-trip suites run on the sample plugins (every type but reference in
    helpdesk.ticket, reference in billing) and on the lists test plugin: together they
    declare a field of every FieldType member, so each goes through a real table."""
    import importlib.util
    from pathlib import Path

    samples = build_graph(Settings(plugins_only=("helpdesk", "billing", "billing_helpdesk")))
    path = Path(__file__).parents[1] / "http" / "_lists_plugin.py"
    spec = importlib.util.spec_from_file_location("_lists_plugin_for_registry", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lists = compile_graph(
        load_plugins(Settings(), extra=(("lab", module.ListsPlugin()),), entry_points=False)
    )
    declared = {
        field.type
        for graph in (samples, lists)
        for entity in graph.entities.values()
        for field in entity.fields.values()
    }
    assert declared == set(FieldType)
    helpdesk = {field.type for field in samples.entities["helpdesk.ticket"].fields.values()}
    assert helpdesk >= set(FieldType) - {FieldType.REFERENCE}
