"""SQLite's group commit isolates the units of work of a batch (docs/benchmarks.md, "Group
commit"): one unit's refusal or failed effect leaves the others committed and itself fully
rolled back; the order of the writes is the order the units took the writer."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from host.config import Settings
from host.graph import build_graph
from host.storage import build_schema
from host.storage.database import SQLiteStorage, Storage, Tx
from host.storage.groupcommit import GroupCommit
from host.storage.tx import Closing
from plugin_api.testing import TenantHost

pytestmark = pytest.mark.skipif(
    os.environ.get("TESSERA_TEST_BACKEND") == "postgresql",
    reason="group commit is SQLite's (one writer); PostgreSQL commits each unit alone",
)

TICKET = "helpdesk.ticket"


def group_of(host: TenantHost) -> GroupCommit:
    storage = host._service().storage
    assert isinstance(storage, SQLiteStorage)
    return storage.group


async def test_a_refusal_and_a_failed_effect_in_a_batch_leave_the_others_committed(
    samples: TenantHost,
) -> None:
    agent = samples.client(actor="alice", roles=["agent", "requester"])
    started = (await agent.action(f"{TICKET}.create", inputs={"title": "started"})).outputs["id"]
    assert (await agent.action(f"{TICKET}.start", subject=started)).status == 200
    closed = (await agent.action(f"{TICKET}.create", inputs={"title": "closed"})).outputs["id"]
    for step in ("start", "resolve", "close"):
        assert (await agent.action(f"{TICKET}.{step}", subject=closed)).status == 200
    group = group_of(samples)
    batches = group.batches

    # Sent at once: they queue for the one writer and share commits. Between the creates,
    # a transition the state refuses (after reading its row in its savepoint) and an effect
    # that fails (after reading its row).
    calls: list[tuple[str, str | None, dict[str, Any]]] = []
    for n in range(12):
        calls.append(("create", None, {"title": f"batch {n}"}))
        if n == 4:
            calls.append(("start", started, {}))
        if n == 8:
            calls.append(("escalate", closed, {}))
    answers = await asyncio.gather(
        *(agent.action(f"{TICKET}.{name}", subject=s, inputs=i) for name, s, i in calls)
    )

    assert group.batches > batches  # a batch formed (the units did share a commit)
    by_name = dict(zip([c[0] for c in calls], answers, strict=False))
    assert by_name["start"].status == 409
    assert by_name["escalate"].status == 409
    created = [
        a.outputs["id"] for (name, _, _), a in zip(calls, answers, strict=True) if name == "create"
    ]
    assert len(created) == 12 == len(set(created))
    # Every create committed with its audit record, in the order the units ran.
    listed = await agent.projection(f"{TICKET}.queue", query={"pageSize": "100"})
    titles = {item["title"] for item in listed.json["data"]["items"]}
    assert {f"batch {n}" for n in range(12)} <= titles
    for ticket in created:
        assert len(await samples.audit_trail(TICKET, ticket)) == 1
    # The refused units left nothing: rows as they were, no audit record of theirs.
    assert [r.action for r in await samples.audit_trail(TICKET, started)] == [
        f"{TICKET}.start",
        f"{TICKET}.create",
    ]
    closed_trail = await samples.audit_trail(TICKET, closed)
    assert f"{TICKET}.escalate" not in {r.action for r in closed_trail}
    detail = await agent.projection(f"{TICKET}.detail", subject=closed)
    assert detail.json["data"]["item"]["priority"] == "normal"


async def test_a_unit_that_wrote_and_then_failed_is_rolled_back_alone(tmp_path: Path) -> None:
    """Units that write, then one that writes and raises, then more: the failed one's rows
    are gone, its neighbours' committed, ids in the order the units ran."""
    storage = Storage(Settings(database_url=f"sqlite:///{tmp_path / 'group.db'}"))
    await storage.connect()
    try:
        await storage.transaction(
            lambda tx: tx.execute(sa.text("CREATE TABLE t (n INTEGER PRIMARY KEY, v TEXT)"))
        )
        assert isinstance(storage, SQLiteStorage)

        def unit(value: str, fail: bool) -> Any:
            async def work(tx: Tx) -> Closing[str]:
                await tx.rows("INSERT INTO t (v) VALUES (?)", (value + "-effect",))
                if fail:
                    raise RuntimeError("the effect failed after writing")
                return Closing(value, (("INSERT INTO t (v) VALUES (?)", (value,)),))

            return work

        names = [f"u{n}" for n in range(8)]
        results = await asyncio.gather(
            *(storage.unit_of_work(unit(name, name == "u3")) for name in names),
            return_exceptions=True,
        )
        assert isinstance(results[3], RuntimeError)
        assert [r for i, r in enumerate(results) if i != 3] == [n for n in names if n != "u3"]
        assert storage.group.batches >= 1
        rows = await storage.rows("SELECT v FROM t ORDER BY n")
        expected = [v for n in names if n != "u3" for v in (f"{n}-effect", n)]
        assert [r[0] for r in rows] == expected
    finally:
        await storage.disconnect()


async def test_the_writer_keeps_its_savepoint_journals_in_memory_once_prepared(
    tmp_path: Path,
) -> None:
    """A unit joining a batch journals the pages it changes; past 64 KiB SQLite spills that
    journal to a temporary file (64 write calls per create). Once the schema is prepared the
    writer keeps temporary files in memory; while the schema's work runs (which may sort a
    large index) they stay on disk, and the readers are left as they are. A database of its
    own: it watches the schema's preparation, which a shared host did before the test."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'temp.db'}", plugins_only=("helpdesk",)
    )
    storage = Storage(settings)
    await storage.connect()
    assert isinstance(storage, SQLiteStorage)
    seen: list[int] = []

    async def evolve(tx: Tx) -> None:
        seen.append(int((await tx.rows("PRAGMA temp_store"))[0][0]))

    try:
        schema = build_schema(build_graph(settings), storage.dialect)
        await storage.prepare(schema, evolve=evolve)
        assert seen == [1]  # FILE while the schema's work ran
        writer = await storage.transaction(lambda tx: tx.rows("PRAGMA temp_store"))
        assert writer[0][0] == 2  # MEMORY for the units of work after it
        assert (await storage.rows("PRAGMA temp_store"))[0][0] == 0  # a reader: the default
    finally:
        await storage.disconnect()


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="SCHED_BATCH is Linux's")
async def test_the_connections_threads_do_not_preempt_the_event_loop(samples: TenantHost) -> None:
    """Each SQLite connection's thread runs under SCHED_BATCH (woken, it waits for the event
    loop to yield instead of preempting it); the event loop's thread keeps the default."""
    storage = samples._service().storage
    assert isinstance(storage, SQLiteStorage) and storage._writer is not None
    connections = [storage._writer, *storage._reader_list]
    for conn in connections:
        policy = await conn.raw_connection._execute(lambda: os.sched_getscheduler(0))
        assert policy == os.SCHED_BATCH
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    agent = samples.client(actor="alice", roles=["agent"])
    assert (await agent.action(f"{TICKET}.create", inputs={"title": "batch"})).status == 200
