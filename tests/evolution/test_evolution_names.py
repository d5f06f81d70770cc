"""Generated objects of a database prepared by an earlier release are renamed once at start
(host/storage/renames.py), and a table's objects never keep the name of a table since
renamed or kept aside (docs/schema-evolution.md, "Names of generated objects")."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
import sqlalchemy as sa

from host.config import Settings
from host.graph import Graph, compile_graph
from host.plugins import load_plugins
from host.storage import Storage, Tx
from host.storage.catalog import read_full_text, read_indexes
from plugin_api import (
    CreateAction,
    Entity,
    Field,
    FieldType,
    Filter,
    ListOptions,
    Projection,
    hookimpl,
)
from plugin_api.testing import Client, TesseraHarness

from .test_evolution_inprocess import Db, kinds

S = FieldType.STRING
PERSON, PROJECT = "lg.person", "lg.project"


class LegacyPlugin:
    """Projects searched by code and name, led by a person (a reference), listed by name."""

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        lead = Field(name="lead", type=FieldType.REFERENCE, target=PERSON, nullable=True)
        return (
            Entity(fqn=PERSON, fields=(Field(name="name", type=S),)),
            Entity(
                fqn=PROJECT,
                fields=(Field(name="code", type=S), Field(name="name", type=S), lead),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[CreateAction]:
        return (
            CreateAction(fqn=f"{PERSON}.create", entity=PERSON, inputs=("name",)),
            CreateAction(fqn=f"{PROJECT}.create", entity=PROJECT, inputs=("code", "name", "lead")),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        listing = ListOptions(
            search=("code", "name"), sortable=("name",), filters=(Filter(field="lead"),)
        )
        fields = ("id", "code", "name", "lead")
        return (Projection(fqn=f"{PROJECT}.list", entity=PROJECT, fields=fields, listing=listing),)


async def _sql(url: str, work: Any) -> Any:
    storage = Storage(Settings(database_url=url))
    await storage.connect()
    try:
        return await storage.transaction(lambda tx: work(tx, storage.dialect))
    finally:
        await storage.disconnect()


async def _as_an_earlier_release(tx: Tx, dialect: Any) -> list[str]:
    """Rename every generated object as the release before issue 44 named it (checked
    against that release: ``ts_<table>__<field>``, ``ts_<table>__key``, ``ix_<table>_<field>``,
    ``tx_<table>__<fields>_<digest>``, PostgreSQL's ``<table>_pkey``); return the names."""
    q = dialect.quote
    statements: list[str] = []
    for fts in await read_full_text(tx, dialect):
        old = f"ts_{fts.table}__{fts.column.removeprefix('_fold_')}"
        triggers = await tx.fetch_all(
            sa.text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
        )
        mine = [
            (str(r["name"]), str(r["sql"])) for r in triggers if str(r["name"]).startswith(fts.name)
        ]
        statements += [f"DROP TRIGGER {q(name)}" for name, _ in mine]
        statements.append(f"ALTER TABLE {q(fts.name)} RENAME TO {q(old)}")
        statements += [sql.replace(fts.name, old) for _, sql in mine]
    for index in await read_indexes(tx, dialect):
        if not index.table.startswith("lg__"):
            continue
        table, name = index.table, index.name
        if name.endswith("___pkey"):
            old = f"{table}_pkey"
            statements.append(f"ALTER TABLE {q(table)} RENAME CONSTRAINT {q(name)} TO {q(old)}")
            continue
        if name.endswith("___key"):
            old = f"ts_{table}__key"
        elif name.endswith("___ref"):
            old = f"ix_{table}_{index.columns[1]}"
        elif name.endswith("___trgm"):
            old = f"ts_{table}__{name.split('___')[1]}"
        elif "___lst_" in name:
            _, fields, kind = name.split("___")
            old = f"tx_{table}__{fields}_{kind.removeprefix('lst_')}"
        else:
            continue
        if dialect.embedded:
            statements += [f"DROP INDEX {q(name)}", index.definition.replace(q(name), q(old))]
        else:
            statements.append(f"ALTER INDEX {q(name)} RENAME TO {q(old)}")
    for statement in statements:
        await tx.execute(sa.text(statement))
    return sorted(
        [fts.name for fts in await read_full_text(tx, dialect)]
        + [i.name for i in await read_indexes(tx, dialect) if i.table.startswith("lg__")]
    )


async def _codes(client: Client, **query: str) -> list[str]:
    result = await client.projection(f"{PROJECT}.list", query=query)
    assert result.status == 200, result.json
    return sorted(item["code"] for item in result.items)


async def _project(client: Client, code: str, name: str, lead: str) -> None:
    inputs = {"code": code, "name": name, "lead": lead}
    assert (await client.action(f"{PROJECT}.create", inputs=inputs)).status == 200


async def test_a_database_of_the_earlier_release_is_renamed_once(
    tessera: TesseraHarness, caplog: pytest.LogCaptureFixture
) -> None:
    plugin = [("lg", LegacyPlugin())]
    host = await tessera.start(plugins=[], extra=plugin, entry_points=False)
    client = host.client(tenant="t1")
    ada = (await client.action(f"{PERSON}.create", inputs={"name": "Ada"})).outputs["id"]
    await _project(client, "CORE", "Core platform", ada)
    await _project(client, "KEY", "Keys and locks", ada)
    await host.stop()
    earlier = await _sql(tessera.database_url, _as_an_earlier_release)
    sqlite = tessera.database_url.startswith("sqlite")
    own = ["ts_lg__project__key"] if sqlite else ["lg__person_pkey", "lg__project_pkey"]
    expected = ["ix_lg__project_lead", *own, "ts_lg__project__code", "ts_lg__project__name"]
    assert [name for name in earlier if not name.startswith("tx_")] == sorted(expected)

    caplog.set_level(logging.INFO, "tessera.storage.evolution")
    host = await tessera.start(plugins=[], extra=plugin, entry_points=False)
    migrated = [r.getMessage() for r in caplog.records if "name-migrated" in r.getMessage()]
    assert len(migrated) == len(expected), migrated
    assert not [r for r in caplog.records if "index-added" in r.getMessage()]  # no rebuild
    client = host.client(tenant="t1")
    assert await _codes(client, q="core") == ["CORE"]
    assert await _codes(client, q="locks") == ["KEY"]
    await _project(client, "WEB", "Website", ada)
    assert await _codes(client, q="web") == ["WEB"]
    assert await _codes(client, **{"filter.lead": ada, "sort": "name"}) == ["CORE", "KEY", "WEB"]
    await host.stop()

    caplog.clear()
    host = await tessera.start(plugins=[], extra=plugin, entry_points=False)
    assert not [r for r in caplog.records if "schema evolution:" in r.getMessage()]
    assert await _codes(host.client(tenant="t1"), q="o") == ["CORE", "KEY"]

    async def names(tx: Tx, dialect: Any) -> list[str]:
        found = [fts.name for fts in await read_full_text(tx, dialect)]
        return sorted(found + [i.name for i in await read_indexes(tx, dialect)])

    now = [n for n in await _sql(tessera.database_url, names) if "lg__" in n]
    legacy = [n for n in now if not n.startswith("lg__")]
    assert [n[:18] for n in legacy] == ["tx_lg__project__le", "tx_lg__project__na"]  # kept


def _graph(*entities: Entity, searched: str | None = None) -> Graph:
    projections = [
        Projection(
            fqn=f"{e.fqn}.list",
            entity=e.fqn,
            fields=("id", "title"),
            listing=ListOptions(search=("title",), sortable=("title",)),
        )
        for e in entities
        if e.fqn == searched
    ]
    plugin = SimpleNamespace(
        tessera_entities=hookimpl(lambda: list(entities)),
        tessera_projections=hookimpl(lambda: projections),
    )
    return compile_graph(load_plugins(Settings(), extra=[("evo", plugin)], entry_points=False))


async def test_an_entity_removed_then_declared_again_gets_its_objects(
    tessera_database_url: str,
) -> None:
    """The table kept aside keeps none of the names the entity's new table needs."""
    other = Entity(fqn="evo.other", fields=(Field(name="title", type=S),))
    item = Entity(
        fqn="evo.item",
        fields=(
            Field(name="title", type=S),
            Field(name="other", type=FieldType.REFERENCE, target="evo.other", nullable=True),
        ),
    )
    db = Db(tessera_database_url)
    first = _graph(item, other, searched="evo.item")
    await db.start(first)
    without = _graph(other)
    assert ("entity-removed", "additive", 0) in kinds(await db.plan(without))
    await db.start(without)
    assert not (await db.plan(without)).changes
    await db.start(first)
    assert not (await db.plan(first)).changes

    async def objects(tx: Tx, dialect: Any) -> list[str]:
        found = [f.name for f in await read_full_text(tx, dialect) if f.table == "evo__item"]
        indexes = await read_indexes(tx, dialect)
        return sorted(found + [i.name for i in indexes if i.table == "evo__item"])

    found = await _sql(tessera_database_url, objects)
    if tessera_database_url.startswith("sqlite"):
        assert [n.split("___", 1)[1] for n in found if "___" in n] == [
            "key",
            "other___ref",
            "title___fts",
            found[3].split("___", 1)[1],
        ]
        assert found[3].startswith("evo__item___title___lst_")
    else:
        assert [n.split("___", 1)[1] for n in found][:2] == ["other___ref", "pkey"]
        assert found[2].startswith("evo__item___title___lst_")
        assert found[3] == "evo__item___title___trgm"
