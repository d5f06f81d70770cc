"""Declared field rules hold after every migration, in process: plugin objects compiled into
graphs, the real storage on the test's database (SQLite file or PostgreSQL). The start, the
apply and ``tessera check``'s decision agree."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from host.config import Settings
from host.graph import Graph, GraphError, compile_graph
from host.plugins import load_plugins
from host.storage.migrate import startup_check
from host.storage.plan import SchemaEvolutionError
from plugin_api import (
    CannotConvert,
    ConvertField,
    Entity,
    Field,
    FieldType,
    JSONValue,
    ListOptions,
    MapOptions,
    MapStates,
    Migration,
    Projection,
    RenameEntity,
    RenameField,
    Transition,
    Workflow,
    hookimpl,
)

from .test_evolution_inprocess import Db, item, kinds

S, INT, E = FieldType.STRING, FieldType.INTEGER, FieldType.ENUM
IDS = [f"t1/{n:026d}" for n in range(3)]


def graph(*entities: Entity, migrations: tuple[Migration, ...] = ()) -> Graph:
    plugin = SimpleNamespace(
        tessera_entities=hookimpl(lambda: list(entities)),
        tessera_migrations=hookimpl(lambda: list(migrations)),
    )
    return compile_graph(load_plugins(Settings(), extra=[("evo", plugin)], entry_points=False))


@pytest.fixture
def db(tessera_database_url: str) -> Db:
    return Db(tessera_database_url)


async def verdicts(db: Db, g: Graph) -> tuple[str | None, str | None]:
    """What a start and ``tessera check`` decide (the refusal's text, or ``None``)."""

    async def check(storage: Any, schema: Any) -> str | None:
        try:
            await startup_check(storage, g, schema)
        except SchemaEvolutionError as exc:
            return exc.report()
        return None

    checked = await db.run(g, check)
    try:
        await db.start(g)
    except SchemaEvolutionError as exc:
        return checked, exc.report()
    return checked, None


async def refusal(db: Db, g: Graph, *allow: str) -> str:
    with pytest.raises(SchemaEvolutionError) as refused:
        await db.apply(g, *allow)
    return refused.value.report()


async def test_type_change_fills_the_default_and_refuses_without_one(db: Db) -> None:
    v1 = graph(item(Field(name="qty", type=S, nullable=True)))

    def days(value: JSONValue) -> JSONValue:
        if value == "lots":
            raise CannotConvert("not a number")
        return None if value == "none" else int(str(value))

    convert = ConvertField(entity="evo.item", field="qty", from_type=S, to_type=INT, function=days)
    no_default = graph(item(Field(name="qty", type=INT)), migrations=(convert,))
    with_default = graph(item(Field(name="qty", type=INT, default=0)), migrations=(convert,))
    await db.start(v1)
    await db.insert(
        v1, {"title": "a", "qty": "4"}, {"title": "b", "qty": "lots"}, {"title": "c", "qty": "none"}
    )
    (change,) = [c for c in (await db.plan(no_default)).changes if c.kind == "type-changed"]
    assert (change.affected_rows, change.unconvertible, change.violations) == (3, 1, 2)
    assert change.reason == "not a number" and change.samples == (IDS[1],)
    # No flag fills a required field: the rows are named; startup and check agree.
    report = await refusal(db, no_default, "type-changed", "unconvertible")
    assert f"2 row(s) would break the field's declared rules ({IDS[1]}, {IDS[2]})" in report
    checked, started = await verdicts(db, no_default)
    assert checked is not None and started is not None
    # With a default, the unconverted and emptied rows get it.
    await db.apply(with_default, "type-changed", "unconvertible")
    assert await db.select(with_default, "SELECT qty FROM evo__item ORDER BY title") == [
        (4,),
        (0,),
        (0,),
    ]


async def test_removed_option_and_state_need_a_mapping(db: Db) -> None:
    flow = Workflow(
        state_field="status",
        initial="open",
        transitions=(
            Transition(name="close", sources=("open",), target="closed"),
            Transition(name="drop", sources=("open",), target="dropped"),
        ),
    )
    small = Workflow(state_field="status", initial="open", transitions=flow.transitions[:1])
    fields = (Field(name="size", type=E, options=("s", "m", "l"), nullable=True),)
    v1 = graph(item(*fields, Field(name="status", type=E, options=(*flow.states,)), workflow=flow))
    v2_fields = (
        Field(name="size", type=E, options=("m",), nullable=True),
        Field(name="status", type=E, options=("open", "closed")),
    )
    unmapped = graph(item(*v2_fields, workflow=small))
    half = graph(
        item(*v2_fields, workflow=small),
        migrations=(MapOptions(entity="evo.item", field="size", mapping={"s": "m"}),),
    )
    mapped = graph(
        item(*v2_fields, workflow=small),
        migrations=(
            MapOptions(entity="evo.item", field="size", mapping={"s": "m", "l": None}),
            MapStates(entity="evo.item", mapping={"dropped": "closed"}),
        ),
    )
    await db.start(v1)
    await db.insert(
        v1,
        {"title": "a", "size": "s", "status": "dropped"},
        {"title": "b", "size": "l", "status": "open"},
        {"title": "c", "size": "m", "status": "dropped"},
    )
    flags = ("enum-option-removed", "state-removed")
    report = await refusal(db, unmapped, *flags)
    assert f"({IDS[0]}, {IDS[1]}); map 's', 'l' with MapOptions" in report
    assert f"({IDS[0]}, {IDS[2]}); map 'dropped' with MapStates" in report
    report = await refusal(db, half, *flags)
    assert f"1 row(s) would break the field's declared rules ({IDS[1]}); map 'l'" in report
    checked, started = await verdicts(db, mapped)
    assert checked is not None and started is not None  # mapped, still needs the flags
    await db.apply(mapped, *flags)
    assert await db.select(mapped, "SELECT size, status FROM evo__item ORDER BY title") == [
        ("m", "closed"),
        (None, "open"),
        ("m", "closed"),
    ]


async def test_renames_apply_at_startup_and_keep_rows_and_indexes(db: Db) -> None:
    def with_list(entity: Entity, field: str, *migrations: Migration) -> Graph:
        listing = Projection(
            fqn=f"{entity.fqn}.list",
            entity=entity.fqn,
            fields=("id", field),
            listing=ListOptions(sortable=(field,)),
        )
        plugin = SimpleNamespace(
            tessera_entities=hookimpl(lambda: [entity]),
            tessera_migrations=hookimpl(lambda: list(migrations)),
            tessera_projections=hookimpl(lambda: [listing]),
        )
        return compile_graph(load_plugins(Settings(), extra=[("evo", plugin)], entry_points=False))

    v1 = with_list(item(Field(name="qty", type=INT, nullable=True)), "qty")
    v2 = with_list(
        item(Field(name="amount", type=INT, nullable=True), fqn="evo.thing"),
        "amount",
        RenameEntity(old="evo.item", new="evo.thing"),
        RenameField(entity="evo.thing", old="qty", new="amount"),
    )
    await db.start(v1)
    await db.insert(v1, {"title": "a", "qty": 7})
    plan = await db.plan(v2)
    assert ("entity-renamed", "additive", None) in kinds(plan)
    assert ("field-renamed", "additive", None) in kinds(plan)
    assert not plan.breaking
    assert await verdicts(db, v2) == (None, None)  # applied by the start itself
    assert await db.select(v2, "SELECT id, title, amount FROM evo__thing") == [("0" * 26, "a", 7)]

    async def indexes(storage: Any, schema: Any) -> list[str]:
        from host.storage.dialect import EvolutionDialect
        from host.storage.indexes import index_changes

        return await storage.transaction(
            lambda tx: index_changes(tx, EvolutionDialect(storage.dialect), v2)
        )

    assert await db.run(v2, indexes) == []  # the list index is there, under its new name


@pytest.mark.parametrize(
    ("migration", "message"),
    [
        (RenameEntity(old="evo.old", new="evo.nope"), "entity 'evo.nope' is not installed"),
        (RenameField(entity="evo.item", old="x", new="nope"), "no installed field 'nope'"),
        (RenameField(entity="evo.item", old="title", new="qty"), "still an installed field"),
        (
            ConvertField(entity="evo.item", field="qty", from_type=S, to_type=S, mapping={}),
            "to_type is string but the field is integer",
        ),
        (
            ConvertField(entity="evo.item", field="qty", from_type=S, to_type=INT),
            "give exactly one of mapping and function",
        ),
        (
            MapOptions(entity="evo.item", field="size", mapping={"m": "s"}),
            "'m' is still an option",
        ),
        (
            MapOptions(entity="evo.item", field="size", mapping={"x": "y"}),
            "maps 'x' to 'y', which is not an option",
        ),
        (MapStates(entity="evo.item", mapping={"x": "m"}), "the entity has no workflow"),
    ],
)
def test_bad_declarations_are_startup_errors(migration: Migration, message: str) -> None:
    entity = item(
        Field(name="qty", type=INT, nullable=True),
        Field(name="size", type=E, options=("m",), default="m"),
    )
    with pytest.raises(GraphError) as failed:
        graph(entity, migrations=(migration,))
    assert message in str(failed.value)
    assert "plugin 'evo': migration " in str(failed.value)


def test_declarations_twice_or_about_another_plugin_are_errors() -> None:
    mine = SimpleNamespace(
        tessera_entities=hookimpl(lambda: [item()]),
        tessera_migrations=hookimpl(
            lambda: [RenameField(entity="evo.item", old="name", new="title")]
        ),
    )
    other = SimpleNamespace(
        tessera_migrations=hookimpl(
            lambda: [RenameField(entity="evo.item", old="name", new="title")]
        )
    )
    with pytest.raises(GraphError) as failed:
        compile_graph(
            load_plugins(Settings(), extra=[("evo", mine), ("other", other)], entry_points=False)
        )
    assert "plugin 'other': migration RenameField evo.item.name -> 'title': entity 'evo.item' " \
        "belongs to plugin 'evo'" in str(failed.value)  # fmt: skip
    twice = SimpleNamespace(
        tessera_entities=hookimpl(lambda: [item()]),
        tessera_migrations=hookimpl(lambda: [RenameEntity(old="evo.a", new="evo.item")] * 2),
    )
    with pytest.raises(GraphError, match=r"declared twice \(also by plugin 'evo'\)"):
        compile_graph(load_plugins(Settings(), extra=[("evo", twice)], entry_points=False))


def test_declarations_stay_out_of_the_hash() -> None:
    entity = item(Field(name="qty", type=INT, nullable=True))
    plain = graph(entity)
    declared = graph(entity, migrations=(RenameField(entity="evo.item", old="n", new="qty"),))
    assert plain.hash == declared.hash
    assert declared.migrations.renamed_field("evo.item", "n", ["qty"]) == "qty"
