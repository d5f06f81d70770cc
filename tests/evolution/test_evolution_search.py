"""The text index of ``q`` (folded shadow columns and their trigram index), planned and
applied by the schema evolution: existing rows backfilled, dropped when no list searches."""

from __future__ import annotations

from types import SimpleNamespace

from host.config import Settings
from host.graph import Graph, compile_graph
from host.plugins import load_plugins
from plugin_api import Entity, Field, FieldType, ListOptions, Projection, hookimpl
from plugin_api.migrations import RenameEntity, RenameField

from .test_evolution_indexes import ITEM, listed
from .test_evolution_inprocess import Db, kinds


async def _shadows(db: Db, g: object) -> list[str]:
    if db.settings.database_url.startswith("sqlite"):
        sql = "SELECT name FROM pragma_table_info('evo__item') WHERE substr(name, 1, 6) = '_fold_'"
    else:
        sql = (
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'evo__item' "
            "AND table_schema = current_schema() AND substr(column_name, 1, 6) = '_fold_'"
        )
    return sorted(str(row[0]) for row in await db.select(g, sql))  # type: ignore[arg-type]


async def test_search_index_is_built_backfilled_and_dropped(tessera_database_url: str) -> None:
    db = Db(tessera_database_url)
    sqlite = tessera_database_url.startswith("sqlite")
    v1 = listed(ListOptions(sortable=("title",)))
    await db.start(v1)
    await db.insert(v1, {"title": "ÉCOLE Normale"}, {"title": "NAÏVE"}, {"title": "plain"})
    assert await _shadows(db, v1) == []

    v2 = listed(ListOptions(sortable=("title",), search=("title",)))
    plan = await db.plan(v2)
    assert ("search-index-added", "additive", 3) in kinds(plan)
    assert not plan.breaking
    await db.start(v2)
    assert await _shadows(db, v2) == ["_fold_title"]
    rows = await db.select(v2, "SELECT _fold_title FROM evo__item ORDER BY id")
    assert [row[0] for row in rows] == ["école normale", "naïve", "plain"]
    if sqlite:
        found = await db.select(
            v2,
            "SELECT rowid FROM evo__item___title___fts "
            "WHERE evo__item___title___fts MATCH '\"cole\"'",
        )
        assert len(found) == 1
    else:
        found = await db.select(
            v2, "SELECT indexdef FROM pg_indexes WHERE indexname = 'evo__item___title___trgm'"
        )
        assert "gin_trgm_ops" in str(found[0][0])
    assert not (await db.plan(v2)).changes

    v3 = listed(ListOptions(sortable=("title",)))
    plan = await db.plan(v3)
    assert ("search-index-removed", "additive", None) in kinds(plan)
    await db.start(v3)
    assert await _shadows(db, v3) == []
    assert not (await db.plan(v3)).changes


def _noted(required: bool) -> Graph:
    """``evo.item`` whose searched ``note`` becomes required with a default."""
    note = (
        Field(name="note", type=FieldType.STRING, default="DÉFAUT")
        if required
        else Field(name="note", type=FieldType.STRING, nullable=True)
    )
    entity = Entity(fqn=ITEM, fields=(Field(name="title", type=FieldType.STRING), note))
    projection = Projection(
        fqn=f"{ITEM}.list",
        entity=ITEM,
        fields=("id", "note"),
        listing=ListOptions(search=("note",)),
    )
    plugin = SimpleNamespace(
        tessera_entities=hookimpl(lambda: [entity]),
        tessera_projections=hookimpl(lambda: [projection]),
    )
    return compile_graph(load_plugins(Settings(), extra=[("evo", plugin)], entry_points=False))


async def test_values_the_evolution_rewrites_are_folded_again(tessera_database_url: str) -> None:
    db = Db(tessera_database_url)
    v1 = _noted(required=False)
    await db.start(v1)
    await db.insert(v1, {"title": "a", "note": None}, {"title": "b", "note": "Été"})
    v2 = _noted(required=True)
    plan = await db.plan(v2)
    assert ("search-index-refolded", "additive", 1) in kinds(plan)
    await db.start(v2)
    rows = await db.select(v2, "SELECT _fold_note FROM evo__item ORDER BY id")
    assert [row[0] for row in rows] == ["défaut", "été"]


def _named(fqn: str, field: str, migrations: tuple[object, ...] = ()) -> Graph:
    """One searched string field ``field`` of entity ``fqn``."""
    entity = Entity(fqn=fqn, fields=(Field(name=field, type=FieldType.STRING),))
    projection = Projection(
        fqn=f"{fqn}.list", entity=fqn, fields=("id", field), listing=ListOptions(search=(field,))
    )
    plugin = SimpleNamespace(
        tessera_entities=hookimpl(lambda: [entity]),
        tessera_projections=hookimpl(lambda: [projection]),
        tessera_migrations=hookimpl(lambda: list(migrations)),
    )
    return compile_graph(load_plugins(Settings(), extra=[("evo", plugin)], entry_points=False))


async def test_renamed_entity_and_field_keep_a_working_index(tessera_database_url: str) -> None:
    db = Db(tessera_database_url)
    v1 = _named(ITEM, "title")
    await db.start(v1)
    await db.insert(v1, {"title": "ÉTÉ"})  # bypasses the store: the rename folds it anyway
    renames = (
        RenameEntity(old=ITEM, new="evo.thing"),
        RenameField(entity="evo.thing", old="title", new="name"),
    )
    v2 = _named("evo.thing", "name", renames)
    plan = await db.plan(v2)
    assert not plan.breaking, plan.render()
    await db.start(v2)
    rows = await db.select(v2, "SELECT _fold_name FROM evo__thing")
    assert [row[0] for row in rows] == ["été"]
    if tessera_database_url.startswith("sqlite"):
        found = await db.select(
            v2,
            "SELECT rowid FROM evo__thing___name___fts "
            "WHERE evo__thing___name___fts MATCH '\"été\"'",
        )
        assert len(found) == 1
        # Nothing is named after the table's old name (an entity may take it again).
        stale = await db.select(
            v2, "SELECT name FROM sqlite_master WHERE substr(name, 1, 9) = 'evo__item'"
        )
        assert [row[0] for row in stale] == []
        keys = await db.select(
            v2, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'evo__thing'"
        )
        assert "evo__thing___key" in [row[0] for row in keys]
    else:
        names = await db.select(
            v2, "SELECT indexname FROM pg_indexes WHERE tablename = 'evo__thing' ORDER BY 1"
        )
        assert [row[0] for row in names] == ["evo__thing___name___trgm", "evo__thing___pkey"]
    assert not (await db.plan(v2)).changes


async def test_a_removed_searched_entity_is_kept_aside(tessera_database_url: str) -> None:
    db = Db(tessera_database_url)
    v1 = _named(ITEM, "title")
    await db.start(v1)
    v2 = _named("evo.other", "name")
    plan = await db.plan(v2)
    assert ("entity-removed", "additive", 0) in kinds(plan), plan.render()
    await db.start(v2)
    assert not (await db.plan(v2)).changes
