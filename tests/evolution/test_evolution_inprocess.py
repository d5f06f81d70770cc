"""Change classes that need no distribution, in process: plugin objects compiled into graphs,
the real storage on the test's database (SQLite file or PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import pytest
import sqlalchemy as sa

from host.config import Settings
from host.graph import Graph, compile_graph
from host.plugins import load_plugins
from host.service import Service
from host.storage import Storage, build_schema
from host.storage.convert import Unconvertible, convert_value
from host.storage.evolution import aside_name
from host.storage.migrate import apply, plan_only
from host.storage.plan import SchemaEvolutionError
from plugin_api import Entity, Field, FieldType, Transition, Workflow, hookimpl

S, INT, E = FieldType.STRING, FieldType.INTEGER, FieldType.ENUM


def graph(*entities: Entity) -> Graph:
    plugin = SimpleNamespace(tessera_entities=hookimpl(lambda: list(entities)))
    return compile_graph(load_plugins(Settings(), extra=[("evo", plugin)], entry_points=False))


def item(*fields: Field, workflow: Workflow | None = None, fqn: str = "evo.item") -> Entity:
    return Entity(fqn=fqn, fields=(Field(name="title", type=S), *fields), workflow=workflow)


class Db:
    def __init__(self, url: str) -> None:
        self.settings = Settings(database_url=url, access_log=False)

    async def start(self, g: Graph) -> None:
        """Start and stop a service (the startup evolution)."""
        service = await Service.start(self.settings, g)
        await service.stop()

    async def run(self, g: Graph, work: Any) -> Any:
        storage = Storage(self.settings)
        await storage.connect()
        try:
            return await work(storage, build_schema(g, storage.dialect))
        finally:
            await storage.disconnect()

    async def insert(self, g: Graph, *rows: dict[str, Any]) -> None:
        async def work(storage: Storage, schema: Any) -> None:
            table = schema.entities["evo.item"]

            async def tx_work(tx: Any) -> None:
                for n, row in enumerate(rows):
                    stamp = "2030-01-01T00:00:00.000000Z"
                    rid = f"{n:026d}"
                    await tx.execute(
                        table.insert().values(
                            tenant_id="t1", id=rid, created_at=stamp, updated_at=stamp,
                            _version=rid, **row,
                        )
                    )  # fmt: skip

            await storage.transaction(tx_work)

        await self.run(g, work)

    async def plan(self, g: Graph) -> Any:
        return await self.run(g, lambda storage, schema: plan_only(storage, g, schema))

    async def apply(self, g: Graph, *allow: str) -> Any:
        return await self.run(g, lambda storage, schema: apply(storage, g, schema, allow))

    async def select(self, g: Graph, sql: str) -> list[tuple[Any, ...]]:
        async def work(storage: Storage, schema: Any) -> list[tuple[Any, ...]]:
            return [tuple(r.values()) for r in await storage.fetch_all(sa.text(sql))]

        return await self.run(g, work)


@pytest.fixture
def db(tessera_database_url: str) -> Db:
    return Db(tessera_database_url)


def kinds(plan: Any) -> list[tuple[str, str, int | None]]:
    return [(c.kind, c.change_class.value, c.affected_rows) for c in plan.changes]


async def test_plan_changes_nothing_on_a_new_database(db: Db) -> None:
    g = graph(item())
    plan = await db.plan(g)
    assert kinds(plan) == [("entity-added", "additive", None)]
    assert plan.database_hash is None

    async def tables(storage: Storage, schema: Any) -> list[str]:
        from host.storage.dialect import EvolutionDialect
        from host.storage.evolution import read_columns

        return sorted(await storage.transaction(
            lambda tx: read_columns(tx, EvolutionDialect(storage.dialect))
        ))  # fmt: skip

    assert await db.run(g, tables) == []


async def test_required_field_added_breaks_only_with_rows(db: Db) -> None:
    v1 = graph(item())
    v2 = graph(item(Field(name="code", type=S)))
    await db.start(v1)
    assert kinds(await db.plan(v2)) == [("field-added", "additive", 0)]
    await db.insert(v1, {"title": "a"})
    assert kinds(await db.plan(v2)) == [("field-added", "breaking", 1)]
    with pytest.raises(SchemaEvolutionError, match="field-added: field 'code'"):
        await db.start(v2)
    # No flag leaves a required field null: the apply refuses, naming the row.
    with pytest.raises(SchemaEvolutionError) as refused:
        await db.apply(v2, "field-added")
    assert "1 row(s) would break the field's declared rules (t1/" + "0" * 26 + ")" in str(
        refused.value
    )
    assert await db.select(v2, "SELECT title FROM evo__item") == [("a",)]
    # With a default the rows get it; a nullable field leaves them null.
    v3 = graph(item(Field(name="code", type=S, default="none")))
    await db.start(v3)
    assert await db.select(v3, "SELECT title, code FROM evo__item") == [("a", "none")]


async def test_nullable_to_required_with_default_backfills_nulls(db: Db) -> None:
    v1 = graph(item(Field(name="qty", type=INT, nullable=True)))
    v2 = graph(item(Field(name="qty", type=INT, default=7)))
    v3 = graph(item(Field(name="qty", type=INT)))
    await db.start(v1)
    await db.insert(v1, {"title": "a", "qty": None}, {"title": "b", "qty": 2})
    plan = await db.plan(v2)
    assert ("field-required", "additive", 1) in kinds(plan)
    await db.start(v2)
    assert await db.select(v2, "SELECT qty FROM evo__item ORDER BY title") == [(7,), (2,)]
    # Dropping the default of a field that is already required only changes metadata.
    assert kinds(await db.plan(v3)) == [("field-metadata", "metadata", None)]


async def test_nullable_to_required_without_default_is_breaking(db: Db) -> None:
    v1 = graph(item(Field(name="note", type=S, nullable=True)))
    v2 = graph(item(Field(name="note", type=S)))
    await db.start(v1)
    await db.insert(v1, {"title": "a"})
    with pytest.raises(SchemaEvolutionError) as refused:
        await db.start(v2)
    assert [c.kind for c in refused.value.blocked] == ["field-required"]
    assert "affected rows: 1" in str(refused.value)


async def test_unused_enum_option_and_state_removed_are_metadata(db: Db) -> None:
    flow = Workflow(
        state_field="status",
        initial="open",
        transitions=(
            Transition(name="close", sources=("open",), target="closed"),
            Transition(name="drop", sources=("open",), target="dropped"),
        ),
    )
    v1 = graph(
        item(
            Field(name="size", type=E, options=("s", "m"), default="m"),
            Field(name="status", type=E, options=("open", "closed", "dropped")),
            workflow=flow,
        )
    )
    small_flow = Workflow(state_field="status", initial="open", transitions=flow.transitions[:1])
    v2 = graph(
        item(
            Field(name="size", type=E, options=("m",), default="m"),
            Field(name="status", type=E, options=("open", "closed")),
            workflow=small_flow,
        )
    )
    await db.start(v1)
    await db.insert(v1, {"title": "a", "size": "m", "status": "closed"})
    plan = await db.plan(v2)
    assert ("enum-option-removed", "metadata", 0) in kinds(plan)
    assert ("state-removed", "metadata", 0) in kinds(plan)
    assert ("workflow-changed", "metadata", None) in kinds(plan)
    await db.start(v2)  # starts: no row holds a removed value


async def test_empty_entity_removed_is_moved_aside_automatically(db: Db) -> None:
    v1 = graph(item(), item(fqn="evo.spare"))
    v2 = graph(item())
    await db.start(v1)
    plan = await db.plan(v2)
    assert kinds(plan) == [("entity-removed", "additive", 0)]
    await db.start(v2)
    names = await db.select(v2, "SELECT graph_hash FROM tessera_graph")
    assert len(names) == 2
    # Re-adding the entity later creates a fresh table (the old one is aside).
    await db.start(v1)
    assert await db.select(v1, "SELECT COUNT(*) FROM evo__spare") == [(0,)]


async def test_database_without_history_is_compared_with_its_columns(db: Db) -> None:
    v1 = graph(item(Field(name="old", type=S, nullable=True)))
    v2 = graph(
        item(Field(name="old", type=S, nullable=True), Field(name="new", type=INT, default=1))
    )
    await db.start(v1)
    await db.insert(v1, {"title": "a", "old": "kept"})

    async def forget(storage: Storage, schema: Any) -> None:
        async def work(tx: Any) -> None:
            await tx.execute(sa.text("DROP TABLE tessera_graph"))

        await storage.transaction(work)

    await db.run(v1, forget)  # as a database prepared before the history existed
    assert kinds(await db.plan(v2)) == [("field-added", "additive", 1)]
    await db.start(v2)
    assert await db.select(v2, "SELECT old, new FROM evo__item") == [("kept", 1)]


@pytest.mark.parametrize(
    ("old_type", "value", "field", "expected"),
    [
        ("integer", 5, Field(name="f", type=S), "5"),
        ("boolean", 1, Field(name="f", type=S), "true"),
        ("money", "1.50", Field(name="f", type=S), "1.50"),
        ("string", "12", Field(name="f", type=INT), 12),
        ("string", "1e3", Field(name="f", type=INT), 1000),
        ("string", " TRUE ", Field(name="f", type=FieldType.BOOLEAN), True),
        ("integer", 0, Field(name="f", type=FieldType.BOOLEAN), False),
        ("string", "2030-01-02T03:04:05+01:00", Field(name="f", type=FieldType.DATETIME),
         "2030-01-02T02:04:05.000000Z"),
        ("integer", 3, Field(name="f", type=FieldType.MONEY, currency="EUR"), "3"),
        ("string", "m", Field(name="f", type=E, options=("s", "m")), "m"),
        ("string", None, Field(name="f", type=INT), None),
    ],
)  # fmt: skip
def test_convertible_values(old_type: str, value: object, field: Field, expected: object) -> None:
    assert convert_value(old_type, "EUR", value, field) == expected


@pytest.mark.parametrize(
    ("old_type", "value", "field"),
    [
        ("string", "1.5", Field(name="f", type=INT)),
        ("string", "abc", Field(name="f", type=INT)),
        ("money", "2.25", Field(name="f", type=INT)),
        ("string", "99999999999999999999", Field(name="f", type=INT)),
        ("string", "yes", Field(name="f", type=FieldType.BOOLEAN)),
        ("integer", 2, Field(name="f", type=FieldType.BOOLEAN)),
        ("integer", 5, Field(name="f", type=FieldType.DATETIME)),
        ("boolean", 1, Field(name="f", type=FieldType.MONEY, currency="EUR")),
        ("string", "x", Field(name="f", type=E, options=("s", "m"))),
    ],
)
def test_unconvertible_values(old_type: str, value: object, field: Field) -> None:
    with pytest.raises(Unconvertible):
        convert_value(old_type, "EUR", value, field)


def test_aside_names_fit_identifiers_and_never_collide() -> None:
    stamp = datetime(2030, 1, 2, 3, 4, 5).strftime("%Y%m%d%H%M%S")
    assert aside_name("color", stamp, []) == "_removed_color_20300102030405"
    assert aside_name("color", stamp, ["_removed_color_20300102030405"]).endswith("_2")
    long_names: Sequence[str] = ["a" * 63, "a" * 62 + "b"]
    made = {aside_name(name, stamp, []) for name in long_names}
    assert len(made) == 2 and all(len(name) <= 63 for name in made)
