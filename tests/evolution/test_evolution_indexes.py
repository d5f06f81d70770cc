"""The indexes of declared filters and sorts, planned and applied by the schema evolution."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from host.config import Settings
from host.graph import Graph, compile_graph
from host.plugins import load_plugins
from plugin_api import Entity, Field, FieldType, Filter, ListOptions, Projection, hookimpl

from .test_evolution_inprocess import Db, kinds

ITEM = "evo.item"


def listed(listing: ListOptions | None, options: tuple[str, ...] = ("a", "b")) -> Graph:
    entity = Entity(
        fqn=ITEM,
        fields=(
            Field(name="title", type=FieldType.STRING),
            Field(name="qty", type=FieldType.INTEGER, nullable=True),
            Field(name="kind", type=FieldType.ENUM, options=options, nullable=True),
            Field(name="price", type=FieldType.MONEY, currency="EUR", nullable=True),
        ),
    )
    shown = ("id", "title", "qty", "kind", "price", "created_at")
    projection = Projection(fqn=f"{ITEM}.list", entity=ITEM, fields=shown, listing=listing)
    plugin = SimpleNamespace(
        tessera_entities=hookimpl(lambda: [entity]),
        tessera_projections=hookimpl(lambda: [projection]),
    )
    return compile_graph(load_plugins(Settings(), extra=[("evo", plugin)], entry_points=False))


async def indexes(db: Db, g: Graph) -> list[str]:
    """The list indexes (``<table>___<fields>___lst_<digest>``), without their digest."""
    if db.settings.database_url.startswith("sqlite"):
        sql = "SELECT name FROM sqlite_master WHERE type = 'index' AND instr(name, '___lst_') > 0"
    else:
        sql = "SELECT indexname FROM pg_indexes WHERE strpos(indexname, '___lst_') > 0"
    rows: list[tuple[Any, ...]] = await db.select(g, sql)
    return sorted(str(row[0]).rsplit("___", 1)[0] for row in rows)


FIRST = ListOptions(
    filters=(Filter(field="qty"), Filter(field="title", operators=("contains",))),
    sortable=("title", "kind", "price", "created_at", "id"),
    indexes=(("kind", "created_at"),),
)


async def test_indexes_follow_the_declarations(tessera_database_url: str) -> None:
    db = Db(tessera_database_url)
    v1 = listed(FIRST)
    plan = await db.plan(v1)
    assert ("index-added", "additive", None) in kinds(plan)
    await db.start(v1)
    # ``contains`` alone gets no index (a substring cannot use one), ``id`` has the key.
    assert await indexes(db, v1) == [
        "evo__item___created_at",
        "evo__item___kind",
        "evo__item___kind__created_at",
        "evo__item___price",
        "evo__item___qty",
        "evo__item___title",
    ]
    assert (await db.plan(v1)).up_to_date

    # A new enum option changes the sort expression: the index is rebuilt under a new name.
    v2 = listed(ListOptions(sortable=("kind", "title")), options=("a", "b", "c"))
    plan = await db.plan(v2)
    changes = {(c.kind, c.change_class.value) for c in plan.changes}
    assert ("index-removed", "additive") in changes and ("index-added", "additive") in changes
    assert not plan.breaking
    await db.start(v2)
    assert await indexes(db, v2) == ["evo__item___kind", "evo__item___title"]

    v3 = listed(None)
    await db.start(v3)
    assert await indexes(db, v3) == []
