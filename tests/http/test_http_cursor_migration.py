"""A list cursor issued before a migration that changes its sort field's type is a 400
``BadRequest`` (the cursor is bound to the sort keys' types), on SQLite and PostgreSQL; a
cursor made after the migration pages as usual."""

from __future__ import annotations

from typing import Any

from host.config import Settings
from host.graph import Graph, compile_graph
from host.plugins import load_plugins
from host.storage.database import Storage
from host.storage.migrate import apply
from host.storage.schema import build_schema
from plugin_api import (
    CreateAction,
    Entity,
    Field,
    FieldType,
    ListOptions,
    Projection,
    hookimpl,
)
from plugin_api.testing import TesseraHarness

THING = "lab.thing"
LIST = f"{THING}.list"


class Versioned:
    """``lab.thing`` whose sortable field ``code`` is of ``code_type``."""

    def __init__(self, code_type: FieldType) -> None:
        self.code_type = code_type

    @hookimpl
    def tessera_entities(self) -> list[Entity]:
        return [Entity(fqn=THING, fields=(Field(name="code", type=self.code_type, nullable=True),))]

    @hookimpl
    def tessera_actions(self) -> list[Any]:
        return [CreateAction(fqn=f"{THING}.create", entity=THING, inputs=("code",))]

    @hookimpl
    def tessera_projections(self) -> list[Projection]:
        listing = ListOptions(sortable=("code",))
        return [Projection(fqn=LIST, entity=THING, fields=("id", "code"), listing=listing)]


def _graph(plugin: Versioned) -> Graph:
    return compile_graph(load_plugins(Settings(), extra=[("lab", plugin)], entry_points=False))


async def test_a_cursor_across_a_sort_field_type_change_is_400(
    tessera: TesseraHarness, tessera_database_url: str
) -> None:
    query = {"sort": "code", "pageSize": "1"}
    before = await tessera.start(
        plugins=[], extra=[("lab", Versioned(FieldType.STRING))], entry_points=False
    )
    client = before.client(tenant="t1")
    for code in ("7", "12", "abc"):
        assert (await client.action(f"{THING}.create", inputs={"code": code})).status == 200
    first = await client.projection(LIST, query=query)
    cursor = first.json["data"]["pagination"]["nextCursor"]
    assert cursor

    # The migration: ``code`` becomes an integer ('abc' cannot convert: it gets null).
    after_graph = _graph(Versioned(FieldType.INTEGER))
    storage = Storage(Settings(database_url=tessera_database_url, access_log=False))
    await storage.connect()
    try:
        await apply(
            storage,
            after_graph,
            build_schema(after_graph, storage.dialect),
            ("type-changed", "unconvertible"),
        )
    finally:
        await storage.disconnect()

    after = await tessera.start(
        plugins=[], extra=[("lab", Versioned(FieldType.INTEGER))], entry_points=False
    )
    client = after.client(tenant="t1")
    stale = await client.projection(LIST, query={**query, "cursor": cursor})
    assert (stale.status, stale.error_kind) == (400, "BadRequest"), stale.json
    assert "'cursor' is not a cursor of this request" in stale.json["error"]["message"]
    fresh = await client.projection(LIST, query=query)
    assert fresh.status == 200
    second = await client.projection(
        LIST, query={**query, "cursor": fresh.json["data"]["pagination"]["nextCursor"]}
    )
    assert second.status == 200, second.json
