"""The names of generated objects (host/storage/names.py) never collide, whatever names the
graph allows: enumerated against every kind of object, then on a real start on a fresh
database, where every object must be found under its own name and lists search and filter
through HTTP (docs/schema-evolution.md, "Names of generated objects")."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from typing import Any

import sqlalchemy as sa

from host.graph.checks import table_name
from host.storage import Storage, build_schema
from host.storage.catalog import read_full_text, read_indexes
from host.storage.indexes import wanted_indexes
from host.storage.migrate import plan_only
from host.storage.names import (
    FTS_TRIGGERS,
    MAX_IDENTIFIER,
    generated,
    list_kind,
    primary_key,
    reference_index,
)
from host.storage.schema import AUDIT_TABLE, DELIVERIES_TABLE, IDEMPOTENCY_TABLE, SEQUENCE_TABLE
from host.storage.search import (
    fts_table,
    key_index,
    searched_fields,
    shadow_column,
    trigram_index,
)
from plugin_api.testing import Client, SharedHarness, TenantHost

from ._names_plugin import (
    LONG_A,
    LONG_B,
    LONG_FIELD,
    LONG_LINK,
    NAMES,
    ORDER,
    ORDER_LINE,
    OTHER_TABLES,
    PERSON,
    PROJECT,
    SEARCHED,
)

_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*\Z")
FTS5_SHADOWS = ("_data", "_idx", "_config", "_docsize", "_content")
"""The tables SQLite's FTS5 makes beside one named ``x``: ``x_data`` and so on."""

FIELDS = (
    *SEARCHED,
    "id_key",
    "x_id",
    "idx",
    "data",
    "config",
    "content",
    "ai",
    "lst",
    "ix",
    "ts",
    "tx",
    "a",
    "a_b",
    "a_b_c",
    "b_c",
    "x" * 63,
    "x" * 62,
    "x" * 54 + "_" + "0123abcd",
    "x" * 53 + "_" + "1" * 9,
    LONG_LINK,
)
"""Field names the graph allows, those of the plugin and more: ``id``-like, named like a
kind of object, like a hash, at the length limit (63) and around it."""
TABLES = (
    *(table_name(fqn) for fqn in (PROJECT, PERSON, ORDER, ORDER_LINE, LONG_A, LONG_B)),
    *(table_name(fqn) for fqn in OTHER_TABLES),
    "a__b",
    "a__b_c",
    "a_b__c",
    "a__b__c",
    "ts_a__b__c",
    "ts_a__b__key",
)
"""Entity tables (2 or 3 segments, up to 50 characters, named like objects of others)."""
HOST_OBJECTS = (
    AUDIT_TABLE,
    SEQUENCE_TABLE,
    IDEMPOTENCY_TABLE,
    DELIVERIES_TABLE,
    "tessera_graph",
    "tessera_secrets",
    "tessera_audit_seals",
    "tessera_audit_anchors",
    "ix_tessera_audit_subject",
    "ix_tessera_audit_row_history",
    "ix_tessera_audit_position",
    "uq_tessera_audit_id",
    "ix_tessera_idempotency_created",
    "uq_tessera_deliveries_event",
    "ix_tessera_deliveries_due",
    "ix_tessera_deliveries_subject",
    "tessera_audit_pkey",
    "tessera_deliveries_pkey",
)


def _allowed_table(table: str) -> bool:
    return len(table) <= 50 and all(_NAME.match(part) for part in table.split("__"))


def _objects(table: str, fields: tuple[str, ...]) -> dict[str, list[str]]:
    """Every object named after ``table`` and its ``fields``, by namespace: the relations of
    each backend (tables, indexes, keys share one) and SQLite's triggers."""
    lists = [
        generated(table, list_kind(digest), group)
        for digest in ("0123abcd", "deadbeef")
        for group in (*((f,) for f in fields), *itertools.combinations(fields[:6], 2))
    ]
    fts = [fts_table(table, field) for field in fields]
    common = [*lists, *(reference_index(table, field) for field in fields)]
    return {
        "postgresql": [
            *common,
            primary_key(table),
            *(trigram_index(table, field) for field in fields),
        ],
        "sqlite": [
            *common,
            key_index(table),
            *fts,
            *(name + shadow for name in fts for shadow in FTS5_SHADOWS),
        ],
        "sqlite triggers": [name + suffix for name in fts for suffix in FTS_TRIGGERS],
    }


def test_generated_names_never_collide() -> None:
    tables = list(TABLES)
    assert all(_allowed_table(table) for table in tables)
    assert all(_NAME.match(field) and len(field) <= 63 for field in FIELDS)
    kept_aside = [f"_removed_{table}_0123456789ab" for table in tables]
    namespaces: dict[str, list[str]] = {}
    for table in [*tables, *kept_aside]:
        for space, names in _objects(table, FIELDS).items():
            namespaces.setdefault(space, []).extend(names)
    for space in ("postgresql", "sqlite"):
        names = [*namespaces[space], *tables, *kept_aside, *HOST_OBJECTS]
        repeated = [name for name, n in Counter(names).items() if n > 1]
        assert not repeated, (space, repeated[:5])
        # No generated name is a name an entity's table may have.
        assert not [name for name in namespaces[space] if _allowed_table(name)]
    triggers = namespaces["sqlite triggers"]
    assert len(set(triggers)) == len(triggers)
    too_long = [name for name in namespaces["postgresql"] if len(name) > MAX_IDENTIFIER]
    assert not too_long  # PostgreSQL would cut them (to the same 63 bytes)
    assert all(len(shadow_column(field)) <= MAX_IDENTIFIER for field in FIELDS)
    shadows = [shadow_column(field) for field in FIELDS]
    assert len(set(shadows)) == len(shadows)


def test_shortened_names_keep_their_kind_and_differ() -> None:
    table = table_name(LONG_A)
    names = {generated(table, kind, (LONG_FIELD,)) for kind in ("fts", "trgm", "ref")}
    assert {len(name) for name in names} == {MAX_IDENTIFIER}
    assert sorted(name.rsplit("___", 1)[1] for name in names) == ["fts", "ref", "trgm"]
    assert all(name.startswith(table[:20]) and "____" in name for name in names)
    # The first 48 characters of the two tables are alike: their names are not.
    other = table_name(LONG_B)
    assert generated(table, "ref", (LONG_FIELD,)) != generated(other, "ref", (LONG_FIELD,))


# -- a real start --------------------------------------------------------------------------------


async def _host(tessera_shared: SharedHarness) -> TenantHost:
    return await tessera_shared.start(plugins=[], extra=[("nm", NAMES)], entry_points=False)


async def _ids(client: Client, fqn: str, **query: str) -> list[str]:
    result = await client.projection(fqn, query=query)
    assert result.status == 200, result.json
    return [item["id"] for item in result.items]


async def test_a_list_searching_key_and_name_starts_and_searches(
    tessera_shared: SharedHarness,
) -> None:
    host = await _host(tessera_shared)
    client = host.client()
    created = {}
    for key, name in (("CORE", "Core platform"), ("WEB", "Website"), ("OPS", "Operations")):
        result = await client.action(f"{PROJECT}.create", inputs={"key": key, "name": name})
        assert result.status == 200, result.json
        created[key] = result.outputs["id"]
    listing = f"{PROJECT}.list"
    assert await _ids(client, listing, q="core") == [created["CORE"]]  # key and name
    assert await _ids(client, listing, q="web") == [created["WEB"]]  # key and name
    assert await _ids(client, listing, q="ops") == [created["OPS"]]  # key only
    assert await _ids(client, listing, q="operat") == [created["OPS"]]  # name only
    assert await _ids(client, listing, q="form") == [created["CORE"]]
    assert await _ids(client, listing, q="zzz") == []
    other = host.client(tenant=host.new_tenant())
    assert await _ids(other, listing, q="core") == []


async def test_every_searched_field_has_its_own_index(tessera_shared: SharedHarness) -> None:
    host = await _host(tessera_shared)
    client = host.client()
    values = {field: f"v{n:02d}-{field[:12]}-UNIQUE{n:02d}" for n, field in enumerate(SEARCHED)}
    result = await client.action(f"{PROJECT}.create", inputs=values)
    assert result.status == 200, result.json
    row = result.outputs["id"]
    await client.action(f"{PROJECT}.create", inputs={"key": "other"})
    for n, field in enumerate(SEARCHED):
        assert await _ids(client, f"{PROJECT}.list", q=f"unique{n:02d}") == [row], field


async def test_references_named_alike_each_have_their_index(
    tessera_shared: SharedHarness,
) -> None:
    host = await _host(tessera_shared)
    client = host.client()
    people = []
    for name in ("Ada", "Bo"):
        result = await client.action(f"{PERSON}.create", inputs={"name": name})
        people.append(result.outputs["id"])
    for n, person in enumerate(people):
        await client.action(f"{ORDER}.create", inputs={"title": f"o{n}", "line_item": person})
        await client.action(f"{ORDER_LINE}.create", inputs={"title": f"l{n}", "item": person})
        for fqn in (LONG_A, LONG_B):
            inputs = {"title": f"t{n}", LONG_FIELD: f"long text {n}"}
            assert (await client.action(f"{fqn}.create", inputs=inputs)).status == 200
    ada = people[0]
    assert len(await _ids(client, f"{ORDER}.list", **{"filter.line_item": ada})) == 1
    assert len(await _ids(client, f"{ORDER_LINE}.list", **{"filter.item": ada})) == 1
    for fqn in (LONG_A, LONG_B):
        assert len(await _ids(client, f"{fqn}.list", q="long text 1", sort=LONG_FIELD)) == 1


async def test_every_generated_object_is_under_its_own_name(
    tessera_shared: SharedHarness,
) -> None:
    """In the catalog of the fresh database, each object the graph wants is found on its
    table under its name (a name taken by another object would have left it missing: ``IF
    NOT EXISTS`` skips silently), and a second look plans nothing."""
    host = await _host(tessera_shared)
    service: Any = host._service()
    graph = service.graph
    storage = Storage(service.settings)
    await storage.connect()
    try:
        dialect = storage.dialect
        indexes = await storage.transaction(lambda tx: read_indexes(tx, dialect))
        found = {(index.table, index.name) for index in indexes}
        full_text = await storage.transaction(lambda tx: read_full_text(tx, dialect))
        found |= {(fts.table, fts.name) for fts in full_text}
        triggers = set()
        if dialect.embedded:
            rows = await storage.fetch_all(
                sa.text("SELECT tbl_name, name FROM sqlite_master WHERE type = 'trigger'")
            )
            triggers = {(str(row["tbl_name"]), str(row["name"])) for row in rows}
        schema = build_schema(graph, dialect)
        plan = await plan_only(storage, graph, schema)
    finally:
        await storage.disconnect()
    wanted = set(wanted_indexes(graph, dialect))
    for table in schema.entities.values():
        if not dialect.embedded:
            wanted.add((table.name, primary_key(table.name)))
        wanted |= {(table.name, str(index.name)) for index in table.indexes}
    for fqn, fields in searched_fields(graph).items():
        table = graph.entities[fqn].table_name
        if dialect.embedded:
            wanted.add((table, key_index(table)))
            wanted |= {(table, fts_table(table, field)) for field in fields}
            assert {
                (table, fts_table(table, field) + suffix)
                for field in fields
                for suffix in FTS_TRIGGERS
            } <= triggers
        else:
            wanted |= {(table, trigram_index(table, field)) for field in fields}
    assert len(wanted) > 50
    assert sorted(wanted - found) == []
    assert plan.changes == ()
