"""The Storage contract, run against the backend of the session (Kinto's way: one suite, every
backend): the SQLite sessions run it on a real database file, the PostgreSQL session
(``TESSERA_TEST_BACKEND=postgresql``) on the real server. Nothing here knows which backend
it runs on; whatever differs between them must not show through this interface."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa

from host.config import Settings
from host.storage import (
    Closing,
    NothingMatched,
    Statement,
    StatementFailed,
    Storage,
    Tx,
    sql,
)

TABLE = "contract_items"
COLUMNS = ("tenant_id", "id", "name", "_version")
items = sa.table(TABLE, *(sa.column(name) for name in COLUMNS))


@pytest.fixture
async def storage(tessera_database_url: str) -> AsyncIterator[Storage]:
    store = Storage(Settings(database_url=tessera_database_url))
    await store.connect()

    async def create(tx: Tx) -> None:
        await tx.execute(
            sa.text(
                f"CREATE TABLE {TABLE} (tenant_id TEXT NOT NULL, id TEXT NOT NULL, "
                "name TEXT NOT NULL, _version TEXT NOT NULL, PRIMARY KEY (tenant_id, id))"
            )
        )

    await store.transaction(create)
    try:
        yield store
    finally:
        await store.disconnect()


def insert(storage: Storage, row_id: str, name: str, version: str = "v1") -> Statement:
    return (sql.insert(storage.dialect, TABLE, COLUMNS), ("t", row_id, name, version))


def rename(storage: Storage, row_id: str, name: str, read: str, new: str) -> Statement:
    statement = sql.guarded_update(storage.dialect, TABLE, ("name", "_version"))
    return (statement, (name, new, "t", row_id, read))


async def names(storage: Storage) -> dict[str, str]:
    rows = await storage.fetch_all(sa.select(items.c.id, items.c.name).order_by(items.c.id))
    return {row["id"]: row["name"] for row in rows}


# -- transaction ----------------------------------------------------------------------------


async def test_a_transaction_commits_when_the_work_returns(storage: Storage) -> None:
    async def work(tx: Tx) -> str:
        await tx.rows(*insert(storage, "a", "first"))
        await tx.execute(items.insert().values(tenant_id="t", id="b", name="second", _version="v"))
        return "done"

    assert await storage.transaction(work) == "done"
    assert await names(storage) == {"a": "first", "b": "second"}


async def test_a_transaction_rolls_back_when_the_work_raises(storage: Storage) -> None:
    async def work(tx: Tx) -> None:
        await tx.rows(*insert(storage, "a", "never"))
        raise LookupError("refused")

    with pytest.raises(LookupError, match="refused"):
        await storage.transaction(work)
    assert await names(storage) == {}


async def test_a_work_that_runs_nothing_returns_its_value(storage: Storage) -> None:
    async def work(tx: Tx) -> int:
        return 7

    assert await storage.transaction(work) == 7
    assert await storage.unit_of_work(lambda tx: _closing(Closing(8))) == 8


async def _closing(closing: Closing[Any]) -> Closing[Any]:
    return closing


# -- unit of work and its closing statements -----------------------------------------------------


async def test_closing_statements_are_committed_with_the_work(storage: Storage) -> None:
    async def work(tx: Tx) -> Closing[str]:
        await tx.rows(*insert(storage, "a", "by the work"))
        return Closing("ok", (insert(storage, "b", "closing 1"), insert(storage, "c", "closing 2")))

    assert await storage.unit_of_work(work) == "ok"
    assert await names(storage) == {"a": "by the work", "b": "closing 1", "c": "closing 2"}


async def test_closing_statements_alone_open_and_commit_the_transaction(storage: Storage) -> None:
    async def work(tx: Tx) -> Closing[str]:
        return Closing("ok", (insert(storage, "a", "only"),))

    assert await storage.unit_of_work(work) == "ok"
    assert await names(storage) == {"a": "only"}


async def test_a_guarded_closing_that_matches_nothing_rolls_everything_back(
    storage: Storage,
) -> None:
    await storage.unit_of_work(lambda tx: _closing(Closing(None, (insert(storage, "a", "kept"),))))

    async def work(tx: Tx) -> Closing[str]:
        await tx.rows(*insert(storage, "b", "by the work"))
        stale = rename(storage, "a", "lost", read="not the version", new="v2")
        return Closing("never", (stale, insert(storage, "c", "after the guard")), guarded=True)

    with pytest.raises(NothingMatched):
        await storage.unit_of_work(work)
    assert await names(storage) == {"a": "kept"}


async def test_a_guarded_closing_that_matches_commits(storage: Storage) -> None:
    await storage.unit_of_work(lambda tx: _closing(Closing(None, (insert(storage, "a", "old"),))))

    async def work(tx: Tx) -> Closing[str]:
        current = rename(storage, "a", "new", read="v1", new="v2")
        return Closing("ok", (current, insert(storage, "b", "after")), guarded=True)

    assert await storage.unit_of_work(work) == "ok"
    assert await names(storage) == {"a": "new", "b": "after"}


async def test_a_failing_closing_statement_is_named_and_nothing_is_committed(
    storage: Storage,
) -> None:
    await storage.unit_of_work(lambda tx: _closing(Closing(None, (insert(storage, "a", "kept"),))))

    async def work(tx: Tx) -> Closing[str]:
        await tx.rows(*insert(storage, "b", "by the work"))
        duplicate = insert(storage, "a", "same key")
        return Closing("never", (insert(storage, "c", "first"), duplicate))

    with pytest.raises(StatementFailed) as failed:
        await storage.unit_of_work(work)
    assert failed.value.index == 1
    assert failed.value.error is failed.value.__cause__
    assert await names(storage) == {"a": "kept"}


async def test_an_unbuilt_closing_statement_fails_in_its_place(storage: Storage) -> None:
    unbuilt = ValueError("could not be built")

    async def work(tx: Tx) -> Closing[str]:
        return Closing("never", (insert(storage, "a", "first"), unbuilt))

    with pytest.raises(StatementFailed) as failed:
        await storage.unit_of_work(work)
    assert (failed.value.index, failed.value.error) == (1, unbuilt)
    assert await names(storage) == {}


async def test_the_storage_stays_usable_after_every_kind_of_failure(storage: Storage) -> None:
    async def raises(tx: Tx) -> Closing[None]:
        await tx.rows(*insert(storage, "x", "x"))
        raise LookupError

    async def fails(tx: Tx) -> Closing[None]:
        return Closing(None, (insert(storage, "y", "y"), ("SELECT * FROM missing_table", ())))

    for work in (raises, fails):
        with pytest.raises((LookupError, StatementFailed)):
            await storage.unit_of_work(work)
    await storage.unit_of_work(lambda tx: _closing(Closing(None, (insert(storage, "z", "z"),))))
    assert await names(storage) == {"z": "z"}


async def test_a_cancelled_caller_does_not_interrupt_the_unit_of_work(storage: Storage) -> None:
    entered, release = asyncio.Event(), asyncio.Event()

    async def work(tx: Tx) -> Closing[str]:
        await tx.rows(*insert(storage, "a", "by the work"))
        entered.set()
        await release.wait()
        return Closing("ok", (insert(storage, "b", "closing"),))

    task = asyncio.ensure_future(storage.unit_of_work(work))
    await asyncio.wait_for(entered.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    for _ in range(200):  # the unit of work finishes on its own
        if len(await names(storage)) == 2:
            break
        await asyncio.sleep(0.05)
    assert await names(storage) == {"a": "by the work", "b": "closing"}


# -- statements inside a unit of work ------------------------------------------------------------


async def test_batch_runs_in_order_and_may_stop_on_an_empty_result(storage: Storage) -> None:
    select = sql.select_one(storage.dialect, TABLE, ("name",))

    async def work(tx: Tx) -> list[Any]:
        await tx.batch([insert(storage, "a", "one"), insert(storage, "b", "two")])
        found = await tx.batch([(select, ("t", "a")), (select, ("t", "b"))])
        stopped = await tx.batch([(select, ("t", "zz")), (select, ("t", "a"))], stop_on_empty=True)
        return [[list(rows) for rows in found], [list(rows) for rows in stopped]]

    found, stopped = await storage.transaction(work)
    assert [[tuple(row) for row in rows] for rows in found] == [[("one",)], [("two",)]]
    assert stopped == [[]]


async def test_a_failing_batch_statement_is_named(storage: Storage) -> None:
    async def work(tx: Tx) -> None:
        await tx.batch([insert(storage, "a", "one"), insert(storage, "a", "again")])

    with pytest.raises(StatementFailed) as failed:
        await storage.transaction(work)
    assert failed.value.index == 1
    assert await names(storage) == {}


async def test_sequences_count_per_tenant_and_roll_back_with_the_work(storage: Storage) -> None:
    from host.storage.schema import Schema

    metadata = sa.MetaData()
    sequences = sa.Table(
        "contract_sequences",
        metadata,
        sa.Column("tenant_id", sa.Text, primary_key=True),
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("value", sa.BigInteger, nullable=False),
    )
    schema = Schema(
        metadata=metadata,
        entities={},
        audit=sequences,
        sequences=sequences,
        idempotency=sequences,
        deliveries=sequences,
    )
    await storage.prepare(schema)

    async def next_value(tx: Tx, tenant: str) -> int:
        return int(await tx.fetch_val(storage.increment_sequence(schema, tenant, "n")))

    async def two(tx: Tx) -> list[int]:
        return [await next_value(tx, "t"), await next_value(tx, "t"), await next_value(tx, "u")]

    async def refused(tx: Tx) -> None:
        await next_value(tx, "t")
        raise LookupError

    assert await storage.transaction(two) == [1, 2, 1]
    with pytest.raises(LookupError):
        await storage.transaction(refused)
    assert await storage.transaction(two) == [3, 4, 2]


# -- reads -----------------------------------------------------------------------------------


async def test_reads_outside_a_unit_of_work_see_what_was_committed(storage: Storage) -> None:
    await storage.unit_of_work(lambda tx: _closing(Closing(None, (insert(storage, "a", "one"),))))
    select = sql.select_one(storage.dialect, TABLE, ("id", "name"))
    assert [tuple(row) for row in await storage.rows(select, ("t", "a"))] == [("a", "one")]
    assert await storage.rows(select, ("t", "missing")) == []
    row = await storage.fetch_one(sa.select(items.c.name).where(items.c.id == "a"))
    assert row is not None and row["name"] == "one"
    assert await storage.fetch_one(sa.select(items.c.name).where(items.c.id == "zz")) is None
