"""The entity store's contract, run against the backend of the session (Kinto's way: one
suite, every backend). The SQLite sessions run it on a real database file, the PostgreSQL
session (``TESSERA_TEST_BACKEND=postgresql``) on the real server; nothing here knows which
backend it runs on.

The store is used alone: a small graph (an entity with a field of every type, a workflow, a
reference to a second entity, a list projection), a real ``Storage`` with that graph's schema,
the ``EntityStore`` writing and reading rows and ``ProjectionReads`` listing them. No HTTP, no
action runtime. Values go in as database values (``host.fieldtypes``) and come out in the read
shapes of spec 2.6; list queries are spelt as the URL parameters of docs/http.md, "Lists".
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import pytest
import sqlalchemy as sa
from werkzeug.datastructures import MultiDict

from host.config import Settings
from host.graph import build_graph
from host.graph.model import CompiledProjection, Graph
from host.query.conditions import Condition
from host.query.cursor import CursorCodec
from host.query.params import SCHEMA_1_0, ListQuery, parse_list_query, plain_query
from host.storage import (
    Closing,
    NothingMatched,
    Schema,
    Statement,
    StatementFailed,
    Storage,
    Tx,
    build_schema,
    sql,
)
from host.storage.migrate import startup_evolution
from host.storage.reads import ProjectionReads
from host.storage.store import AuditRecord, EntityStore, Written
from plugin_api import (
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
    Filter,
    ListOptions,
    Projection,
    Transition,
    TransitionAction,
    Workflow,
    hookimpl,
)

TENANT, OTHER = "tenant-a", "tenant-b"
OWNER, ITEM, LIST = "contract.owner", "contract.item", "contract.item.list"
FIELDS = ("title", "note", "count", "due", "level", "price", "flag", "owner", "state")
NOW = "2030-01-02T03:04:05.120000Z"
LATER = "2030-01-02T03:04:06.000000Z"
ULID_TEXT = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


# -- the graph ------------------------------------------------------------------------------


class ContractPlugin:
    """An item with a field of every type and a workflow, its owner, and a list of items."""

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(fqn=OWNER, fields=(Field(name="name", type=FieldType.STRING),)),
            Entity(
                fqn=ITEM,
                fields=(
                    Field(name="title", type=FieldType.STRING),
                    Field(name="note", type=FieldType.STRING, nullable=True),
                    Field(name="count", type=FieldType.INTEGER, nullable=True),
                    Field(name="due", type=FieldType.DATETIME, nullable=True),
                    Field(
                        name="level",
                        type=FieldType.ENUM,
                        options=("low", "mid", "high"),
                        nullable=True,
                    ),
                    Field(name="price", type=FieldType.MONEY, currency="EUR", nullable=True),
                    Field(name="flag", type=FieldType.BOOLEAN, nullable=True),
                    Field(name="owner", type=FieldType.REFERENCE, target=OWNER, nullable=True),
                    Field(name="state", type=FieldType.ENUM, options=("open", "done")),
                ),
                workflow=Workflow(
                    state_field="state",
                    initial="open",
                    transitions=(Transition(name="finish", sources=("open",), target="done"),),
                ),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn=f"{OWNER}.create", entity=OWNER, inputs=("name",)),
            CreateAction(fqn=f"{ITEM}.create", entity=ITEM, inputs=FIELDS[:-1]),
            TransitionAction(fqn=f"{ITEM}.finish", entity=ITEM, transition="finish"),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        listing = ListOptions(
            filters=tuple(Filter(field=name) for name in FIELDS),
            sortable=("title", "count", "due", "level", "price", "flag", "created_at"),
            search=("title", "note"),
        )
        shown = ("id", *FIELDS, "created_at")
        return (Projection(fqn=LIST, entity=ITEM, fields=shown, listing=listing),)


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(Settings(), extra=[("contract", ContractPlugin())], entry_points=False)


# -- the store under test -------------------------------------------------------------------


@dataclass(frozen=True)
class Rig:
    """A started storage with the graph's schema, and the store and reader over it."""

    graph: Graph
    schema: Schema
    storage: Storage
    store: EntityStore
    reads: ProjectionReads

    @property
    def projection(self) -> CompiledProjection:
        return self.graph.projections[LIST]


@pytest.fixture
async def rig(tessera_database_url: str, graph: Graph) -> AsyncIterator[Rig]:
    storage = Storage(Settings(database_url=tessera_database_url))
    schema = build_schema(graph, storage.dialect)
    await storage.connect()
    try:
        # As a start does: the evolution adds what the schema's tables alone lack (the text
        # index of search).
        await storage.prepare(schema, evolve=startup_evolution(graph, schema, storage.dialect))
        store = EntityStore(graph, schema, storage.dialect)
        reads = ProjectionReads(graph, storage, schema, CursorCodec(b"contract"))
        yield Rig(graph, schema, storage, store, reads)
    finally:
        await storage.disconnect()


# -- helpers: writes ------------------------------------------------------------------------


async def commit(
    rig: Rig, statements: Sequence[Statement | Exception], guarded: bool = False
) -> None:
    """Run ``statements`` as the closing statements of one unit of work."""

    async def work(tx: Tx) -> Closing[None]:
        return Closing(None, statements, guarded=guarded)

    await rig.storage.unit_of_work(work)


def new_item(rig: Rig, tenant: str = TENANT, **values: Any) -> Written:
    """The insert of an item (a title and the initial state unless given)."""
    return rig.store.insert(ITEM, tenant, {"title": "item", "state": "open", **values}, NOW)


async def insert(rig: Rig, tenant: str = TENANT, **values: Any) -> Written:
    written = new_item(rig, tenant, **values)
    await commit(rig, (written.statement,))
    return written


async def seed(rig: Rig, rows: Sequence[Mapping[str, Any]], tenant: str = TENANT) -> None:
    await commit(rig, tuple(new_item(rig, tenant, **row).statement for row in rows))


def record(written: Written, event_id: str = "01J00000000000000000000001") -> AuditRecord:
    return AuditRecord(
        event_id=event_id,
        tenant_id=TENANT,
        actor_id="ada",
        roles=frozenset({"requester", "agent"}),
        action=f"{ITEM}.create",
        entity=ITEM,
        subject_id=written.id,
        inputs={"title": "item", "price": {"amount": "1.50", "currency": "EUR"}},
        outputs={"id": written.id, "_version": written.version},
        at=NOW,
    )


DELIVERY_COLUMNS = (
    *("event_id", "subscriber", "tenant_id", "entity", "subject_id"),
    *("state", "attempts", "next_at", "created_at"),
)


def deliveries(rig: Rig, event_id: str, subject_id: str) -> Statement:
    """An outbox statement: one delivery of the event to subscriber ``mailer``."""
    text = sql.insert(rig.storage.dialect, rig.schema.deliveries.name, DELIVERY_COLUMNS)
    return text, (event_id, "mailer", TENANT, ITEM, subject_id, "pending", 0, 1, 1)


# -- helpers: reads -------------------------------------------------------------------------


async def get(rig: Rig, row_id: str, tenant: str = TENANT) -> dict[str, Any] | None:
    """The whole row in read shape, through the store (outside any unit of work)."""
    found = await rig.store.get(rig.storage, ITEM, tenant, row_id)
    return None if found is None else rig.store.renderer(ITEM)(found)


async def table(rig: Rig, which: sa.Table) -> list[dict[str, Any]]:
    """Every row of one of the host's tables, in write order."""
    return [dict(row) for row in await rig.storage.fetch_all(sa.select(which).order_by("seq"))]


def query(rig: Rig, parameters: str = "", tenant: str = TENANT) -> ListQuery:
    """The list query of URL parameters (``filter.level=high&sort=-count``)."""
    args = MultiDict(parse_qsl(parameters, keep_blank_values=True))
    spec = rig.reads.spec(LIST)
    parsed = parse_list_query(args, spec, SCHEMA_1_0, tenant, rig.reads.cursors)
    return plain_query() if parsed is None else parsed


def scope(rig: Rig, parameters: str) -> tuple[Condition, ...]:
    """A reader's row conditions, spelt as filters."""
    return query(rig, parameters).conditions


async def every(rig: Rig, parameters: str = "", tenant: str = TENANT) -> list[dict[str, Any]]:
    """Every matching row, read chunk by chunk."""
    listing = await rig.reads.every_row(rig.projection, tenant, query(rig, parameters, tenant), 2)
    rows = list(listing.first)
    if listing.rest is not None:
        async for chunk in listing.rest:
            rows.extend(chunk)
    return rows


async def walk(rig: Rig, parameters: str, page_size: int) -> list[list[dict[str, Any]]]:
    """Every page of a list, each asked for with the cursor of the one before."""
    pages = []
    cursor: str | None = ""
    while cursor is not None:
        asked = f"{parameters}&pageSize={page_size}" + (f"&cursor={cursor}" if cursor else "")
        rows, cursor = await rig.reads.page(rig.projection, TENANT, query(rig, asked), page_size)
        pages.append(rows)
    return pages


def titles(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return [row["title"] for row in rows]


def amount_or_value(value: Any) -> Any:
    """A money value's amount; any other value as it is."""
    return value["amount"] if isinstance(value, dict) else value


SHELF = (
    {"title": "Alpha crate", "count": 3, "level": "high", "price": "10.00", "flag": True},
    {"title": "beta box", "level": "low", "price": "9.50", "flag": False},
    {"title": "Gamma", "note": "holds the ALPHA spare", "count": 1},
    {"title": "delta", "count": 7, "level": "mid", "price": "100", "flag": True},
    {"title": "epsilon", "count": -2, "level": "low", "price": "0.5", "flag": False},
)
"""Five items whose values order differently as text than as their types."""


# -- rows: written and read back ------------------------------------------------------------


async def test_an_inserted_row_reads_back_in_read_shape(rig: Rig) -> None:
    owner = rig.store.insert(OWNER, TENANT, {"name": "Ada"}, NOW)
    item = new_item(
        rig,
        title="Crate",
        note="fragile",
        count=-12,
        due="2031-06-30T23:59:00.000000Z",
        level="mid",
        price="1234.50",
        flag=True,
        owner=owner.id,
    )
    await commit(rig, (owner.statement, item.statement))

    assert await get(rig, item.id) == {
        "id": item.id,
        "tenant_id": TENANT,
        "created_at": "2030-01-02T03:04:05.12Z",
        "updated_at": "2030-01-02T03:04:05.12Z",
        "_version": item.version,
        "title": "Crate",
        "note": "fragile",
        "count": -12,
        "due": "2031-06-30T23:59:00Z",
        "level": "mid",
        "price": {"amount": "1234.50", "currency": "EUR"},
        "flag": True,
        "owner": owner.id,
        "state": "open",
    }


async def test_the_store_sets_the_system_fields(rig: Rig) -> None:
    first, second = await insert(rig), await insert(rig)

    row = await get(rig, first.id)
    assert row is not None
    assert ULID_TEXT.fullmatch(row["id"]) and ULID_TEXT.fullmatch(row["_version"])
    assert (row["id"], row["_version"]) == (first.id, first.version)
    assert row["id"] != row["_version"]
    assert row["tenant_id"] == TENANT
    assert row["created_at"] == row["updated_at"] == "2030-01-02T03:04:05.12Z"
    assert len({first.id, second.id, first.version, second.version}) == 4
    assert {"id", "tenant_id", "created_at", "updated_at", "_version"} <= set(first.values)


@pytest.mark.parametrize("name", ["id", "tenant_id", "created_at", "updated_at", "_version"])
async def test_no_caller_sets_a_system_field(rig: Rig, name: str) -> None:
    written = await insert(rig)
    with pytest.raises(ValueError, match=name):
        new_item(rig, **{name: "01J00000000000000000000009"})
    with pytest.raises(ValueError, match=name):
        rig.store.update(ITEM, TENANT, written.id, written.version, {name: "x"}, NOW)


async def test_unset_fields_read_back_as_null(rig: Rig) -> None:
    item = await insert(rig, title="bare")

    row = await get(rig, item.id)
    assert row is not None
    assert {name: row[name] for name in FIELDS if name not in ("title", "state")} == {
        "note": None,
        "count": None,
        "due": None,
        "level": None,
        "price": None,
        "flag": None,
        "owner": None,
    }


async def test_false_zero_and_empty_values_are_not_null(rig: Rig) -> None:
    item = await insert(rig, title="", note="", count=0, price="0.00", flag=False)

    row = await get(rig, item.id)
    assert row is not None
    assert (row["title"], row["note"], row["count"], row["flag"]) == ("", "", 0, False)
    assert row["price"] == {"amount": "0.00", "currency": "EUR"}


async def test_version_of_reads_the_version_of_a_whole_row(rig: Rig) -> None:
    item = await insert(rig)

    found = await rig.store.get(rig.storage, ITEM, TENANT, item.id)
    assert found is not None
    assert rig.store.version_of(ITEM, found) == item.version


async def test_exists_answers_for_the_row_and_not_for_an_unknown_id(rig: Rig) -> None:
    item = await insert(rig)

    assert await rig.store.exists(rig.storage, ITEM, TENANT, item.id) is True
    assert await rig.store.exists(rig.storage, ITEM, TENANT, "01J00000000000000000000000") is False
    assert await get(rig, "01J00000000000000000000000") is None


# -- tenants --------------------------------------------------------------------------------


async def test_another_tenants_row_is_unknown_to_get_and_exists(rig: Rig) -> None:
    item = await insert(rig, OTHER)

    assert await get(rig, item.id, TENANT) is None
    assert await rig.store.exists(rig.storage, ITEM, TENANT, item.id) is False
    assert await get(rig, item.id, OTHER) is not None


async def test_lists_never_show_another_tenants_rows(rig: Rig) -> None:
    await seed(rig, SHELF[:3], TENANT)
    await seed(rig, SHELF[3:], OTHER)

    assert sorted(titles(await every(rig, tenant=OTHER))) == ["delta", "epsilon"]
    assert sorted(titles(await every(rig, "q=a", tenant=OTHER))) == ["delta"]
    rows, cursor = await rig.reads.page(rig.projection, OTHER, query(rig, "", OTHER), 10)
    assert (sorted(titles(rows)), cursor) == (["delta", "epsilon"], None)
    assert await rig.reads.one(rig.projection, TENANT, rows[0]["id"], ()) is None


async def test_an_update_of_another_tenants_row_matches_nothing(rig: Rig) -> None:
    item = await insert(rig, OTHER, title="theirs")
    before = await get(rig, item.id, OTHER)

    change = rig.store.update(ITEM, TENANT, item.id, item.version, {"title": "mine"}, LATER)
    with pytest.raises(NothingMatched):
        await commit(rig, (change.statement,), guarded=True)

    assert await get(rig, item.id, OTHER) == before
    assert before is not None and before["title"] == "theirs"


# -- guarded update -------------------------------------------------------------------------


async def test_an_update_with_the_version_read_changes_the_row(rig: Rig) -> None:
    item = await insert(rig, title="before", count=1, flag=True)

    async def work(tx: Tx) -> Closing[Written]:
        found = await rig.store.get(tx, ITEM, TENANT, item.id)
        assert found is not None
        read = rig.store.version_of(ITEM, found)
        changes = {"title": "after", "flag": None, "state": "done"}
        change = rig.store.update(ITEM, TENANT, item.id, read, changes, LATER)
        return Closing(change, (change.statement,), guarded=True)

    change = await rig.storage.unit_of_work(work)
    row = await get(rig, item.id)
    assert row is not None
    assert (row["title"], row["count"], row["flag"], row["state"]) == ("after", 1, None, "done")
    assert row["_version"] == change.version != item.version
    assert ULID_TEXT.fullmatch(change.version)
    assert (row["created_at"], row["updated_at"]) == (
        "2030-01-02T03:04:05.12Z",
        "2030-01-02T03:04:06Z",
    )
    assert change.id == item.id


async def test_an_update_with_a_stale_version_matches_nothing_and_changes_nothing(
    rig: Rig,
) -> None:
    item = await insert(rig, title="first")
    winner = rig.store.update(ITEM, TENANT, item.id, item.version, {"title": "winner"}, LATER)
    await commit(rig, (winner.statement,), guarded=True)
    after_winner = await get(rig, item.id)

    loser = rig.store.update(ITEM, TENANT, item.id, item.version, {"title": "loser"}, LATER)
    audit = rig.store.audit(record(loser))
    with pytest.raises(NothingMatched):
        await commit(
            rig, rig.store.closing(loser.statement, audit, deliveries(rig, "e", item.id)), True
        )

    assert await get(rig, item.id) == after_winner
    assert after_winner is not None and after_winner["title"] == "winner"
    assert await table(rig, rig.schema.audit) == []
    assert await table(rig, rig.schema.deliveries) == []


# -- closing statements ---------------------------------------------------------------------


async def test_the_row_its_audit_record_and_its_deliveries_commit_together(rig: Rig) -> None:
    item = new_item(rig)
    audit = rig.store.audit(record(item, "01J0000000000000000000EVNT"))
    closing = rig.store.closing(
        item.statement, audit, deliveries(rig, "01J0000000000000000000EVNT", item.id)
    )

    await commit(rig, closing)

    assert await get(rig, item.id) is not None
    assert [row["subject_id"] for row in await table(rig, rig.schema.audit)] == [item.id]
    assert [
        (row["event_id"], row["subscriber"], row["subject_id"])
        for row in await table(rig, rig.schema.deliveries)
    ] == [("01J0000000000000000000EVNT", "mailer", item.id)]


async def test_without_deliveries_the_closing_is_the_row_and_its_audit_record(rig: Rig) -> None:
    item = new_item(rig)
    closing = rig.store.closing(item.statement, rig.store.audit(record(item)), None)

    await commit(rig, closing)

    assert await get(rig, item.id) is not None
    assert len(await table(rig, rig.schema.audit)) == 1
    assert await table(rig, rig.schema.deliveries) == []


async def test_the_audit_record_holds_what_the_record_said(rig: Rig) -> None:
    item = new_item(rig)
    said = record(item, "01J0000000000000000000EVNT")

    await commit(rig, rig.store.closing(item.statement, rig.store.audit(said), None))

    (stored,) = await table(rig, rig.schema.audit)
    assert len(rig.schema.audit_columns) == 14
    assert set(stored) == {"seq", "xact", *rig.schema.audit_columns}
    as_json = ("roles", "inputs", "outputs")
    assert {name: json.loads(stored[name]) for name in as_json} == {
        "roles": ["agent", "requester"],
        "inputs": said.inputs,
        "outputs": said.outputs,
    }
    assert {name: stored[name] for name in rig.schema.audit_columns if name not in as_json} == {
        "id": "01J0000000000000000000EVNT",
        "tenant_id": TENANT,
        "actor_id": "ada",
        "action": f"{ITEM}.create",
        "entity": ITEM,
        "subject_id": item.id,
        "graph_hash": rig.graph.hash,
        "created_at": NOW,
        "version": None,
        "changes": None,
        "via": None,
    }


async def test_a_failing_audit_statement_fails_the_unit_and_writes_nothing(rig: Rig) -> None:
    first = new_item(rig, title="first")
    await commit(rig, rig.store.closing(first.statement, rig.store.audit(record(first)), None))
    second = new_item(rig, title="second")
    again = rig.store.audit(record(second))  # the same event id: the audit insert fails

    with pytest.raises(StatementFailed) as failed:
        await commit(
            rig, rig.store.closing(second.statement, again, deliveries(rig, "e", second.id))
        )

    assert failed.value.index == 1
    assert await get(rig, second.id) is None
    assert [row["subject_id"] for row in await table(rig, rig.schema.audit)] == [first.id]
    assert await table(rig, rig.schema.deliveries) == []


async def test_an_audit_record_that_could_not_be_built_fails_in_its_place(rig: Rig) -> None:
    item = new_item(rig)
    unbuilt = ValueError("an output does not render")

    with pytest.raises(StatementFailed) as failed:
        await commit(rig, rig.store.closing(item.statement, unbuilt, deliveries(rig, "e", item.id)))

    assert (failed.value.index, failed.value.error) == (1, unbuilt)
    assert await get(rig, item.id) is None
    assert await table(rig, rig.schema.deliveries) == []


async def test_a_failing_deliveries_statement_writes_nothing(rig: Rig) -> None:
    first = new_item(rig)
    await commit(rig, (first.statement, deliveries(rig, "01J0000000000000000000EVNT", first.id)))
    second = new_item(rig)
    audit = rig.store.audit(record(second))
    twice = deliveries(rig, "01J0000000000000000000EVNT", first.id)  # (event, subscriber) again

    with pytest.raises(StatementFailed):
        await commit(rig, rig.store.closing(second.statement, audit, twice))

    assert await get(rig, second.id) is None
    assert await table(rig, rig.schema.audit) == []
    assert len(await table(rig, rig.schema.deliveries)) == 1


# -- lists and details ----------------------------------------------------------------------


async def test_every_row_reads_in_id_order_across_chunks(rig: Rig) -> None:
    written = [new_item(rig, title=f"#{n}") for n in range(7)]
    await commit(rig, tuple(item.statement for item in written))

    listing = await rig.reads.every_row(rig.projection, TENANT, plain_query(), 3)
    assert listing.rest is not None
    chunks = [listing.first, *[chunk async for chunk in listing.rest]]

    assert [len(chunk) for chunk in chunks] == [3, 3, 1]
    assert [row["id"] for chunk in chunks for row in chunk] == sorted(item.id for item in written)


async def test_a_list_that_fits_one_chunk_has_no_rest(rig: Rig) -> None:
    await seed(rig, SHELF[:3])

    listing = await rig.reads.every_row(rig.projection, TENANT, plain_query(), 3)

    assert (len(listing.first), listing.rest) == (3, None)


async def test_list_rows_hold_the_projection_fields_in_read_shape(rig: Rig) -> None:
    await seed(rig, SHELF[:1])

    (row,) = await every(rig)

    assert list(row) == ["id", *FIELDS, "created_at"]
    assert row["price"] == {"amount": "10.00", "currency": "EUR"}
    assert (row["flag"], row["due"], row["created_at"]) == (True, None, "2030-01-02T03:04:05.12Z")


@pytest.mark.parametrize(
    ("parameters", "matching"),
    [
        ("filter.level=high", ["Alpha crate"]),
        ("filter.level.lt=high", ["beta box", "delta", "epsilon"]),
        ("filter.level.ne=low", ["Alpha crate", "Gamma", "delta"]),
        ("filter.price.lt=10", ["beta box", "epsilon"]),
        ("filter.count.gte=1&filter.flag=true", ["Alpha crate", "delta"]),
        ("filter.flag=false", ["beta box", "epsilon"]),
        ("filter.count.null=true", ["beta box"]),
        ("filter.title.contains=A", ["Alpha crate", "Gamma", "beta box", "delta"]),
        ("filter.title.in=delta,Gamma,nothing", ["Gamma", "delta"]),
    ],
)
async def test_a_page_holds_exactly_the_rows_the_filter_matches(
    rig: Rig, parameters: str, matching: list[str]
) -> None:
    await seed(rig, SHELF)

    rows, cursor = await rig.reads.page(rig.projection, TENANT, query(rig, parameters), 10)

    assert (sorted(titles(rows)), cursor) == (matching, None)


@pytest.mark.parametrize(
    ("sort", "field", "values"),
    [
        ("count", "count", [None, -2, 1, 3, 7]),
        ("-count", "count", [7, 3, 1, -2, None]),
        ("level", "level", [None, "low", "low", "mid", "high"]),
        ("-level", "level", ["high", "mid", "low", "low", None]),
        ("price", "price", [None, "0.5", "9.50", "10.00", "100"]),
        ("-price", "price", ["100", "10.00", "9.50", "0.5", None]),
        ("flag", "flag", [None, False, False, True, True]),
        ("title", "title", ["Alpha crate", "Gamma", "beta box", "delta", "epsilon"]),
    ],
)
async def test_a_sort_orders_by_the_field_s_type_with_null_the_smallest(
    rig: Rig, sort: str, field: str, values: list[Any]
) -> None:
    await seed(rig, SHELF)

    rows, _ = await rig.reads.page(rig.projection, TENANT, query(rig, f"sort={sort}"), 10)

    assert [amount_or_value(row[field]) for row in rows] == values


async def test_a_search_matches_any_searched_field_ignoring_ascii_case(rig: Rig) -> None:
    await seed(rig, SHELF)

    assert sorted(titles(await every(rig, "q=ALPHA"))) == ["Alpha crate", "Gamma"]
    assert sorted(titles(await every(rig, "q=box"))) == ["beta box"]
    assert await every(rig, "q=nowhere") == []


@pytest.mark.parametrize(
    ("parameters", "sizes"),
    [
        ("", [3, 3, 3, 1]),
        ("sort=level", [3, 3, 3, 1]),
        ("sort=-count", [3, 3, 3, 1]),
        ("sort=price", [3, 3, 3, 1]),
        ("sort=-flag", [3, 3, 3, 1]),
        ("sort=due", [3, 3, 3, 1]),
        ("filter.level.ne=mid&sort=-title", [3, 3, 2]),
    ],
)
async def test_a_cursor_walk_sees_every_matching_row_exactly_once(
    rig: Rig, parameters: str, sizes: list[int]
) -> None:
    await seed(rig, [*SHELF, *({**row, "title": f"{row['title']} 2"} for row in SHELF)])

    pages = await walk(rig, parameters, 3)

    walked = [row for page in pages for row in page]
    assert [len(page) for page in pages] == sizes
    assert len({row["id"] for row in walked}) == len(walked)
    assert walked == await every(rig, parameters)


async def test_one_answers_the_row_when_the_scope_admits_it(rig: Rig) -> None:
    item = await insert(rig, title="scoped", level="high")

    admitted = await rig.reads.one(rig.projection, TENANT, item.id, scope(rig, "filter.level=high"))
    unscoped = await rig.reads.one(rig.projection, TENANT, item.id, ())

    assert admitted == unscoped
    assert admitted is not None and (admitted["id"], admitted["title"]) == (item.id, "scoped")


async def test_one_answers_none_for_a_row_outside_the_scope(rig: Rig) -> None:
    item = await insert(rig, title="scoped", level="high")

    assert (
        await rig.reads.one(rig.projection, TENANT, item.id, scope(rig, "filter.level=low")) is None
    )
    assert await rig.reads.one(rig.projection, TENANT, "01J00000000000000000000000", ()) is None
