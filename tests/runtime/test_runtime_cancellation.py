"""Cancellation of an action in flight, in process, through ``ActionRuntime`` directly.

Quart cancels the request task when the client disconnects. The storage runs every unit of
work in a task of its own, shielded: the caller's cancellation must neither interrupt the
transaction (it commits or rolls back as if nothing happened) nor leave the SQLite write lock
held, and ``Service.stop()`` must wait for units of work still in flight.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

from host.config import Settings
from host.graph import build_graph
from host.runtime.actor import Actor
from host.service import Service

from ._support import AUDIT, ITEM, LabPlugin, snapshot

ACTOR = Actor(tenant_id="t1", actor_id="ida", roles=frozenset())


@pytest.fixture
async def service(tessera_database_url: str, lab: LabPlugin) -> AsyncIterator[Service]:
    settings = Settings(
        database_url=tessera_database_url, access_log=False, plugins_only=("helpdesk",)
    )
    graph = build_graph(settings, extra=[("lab", lab)])
    running = await Service.start(settings, graph)
    try:
        yield running
    finally:
        await asyncio.wait_for(running.stop(), 15)


async def add(service: Service, name: str) -> str:
    outputs = await service.runtime.invoke(ITEM + ".add", ACTOR, None, {"name": name})
    return str(outputs["id"])


def invoke(service: Service, fqn: str, record_id: str, name: str) -> asyncio.Task[Any]:
    return asyncio.ensure_future(service.runtime.invoke(fqn, ACTOR, record_id, {"name": name}))


class Gate:
    """An effect that waits inside the transaction until released (then maybe raises)."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.fail = fail

    async def __call__(self, ctx: Any) -> None:
        self.entered.set()
        await self.release.wait()
        if self.fail is not None:
            raise self.fail


async def names(url: str) -> dict[str, str]:
    return {row["id"]: row["name"] for row in (await snapshot(url, ITEM))[ITEM]}


async def test_cancelled_actions_still_commit_and_release_the_writer(
    service: Service, lab: LabPlugin, tessera_database_url: str
) -> None:
    url = tessera_database_url
    held, queued, later = await add(service, "a"), await add(service, "b"), await add(service, "c")
    gate = Gate()
    lab.effect = gate
    first = invoke(service, ITEM + ".patch", held, "first")  # waits inside its transaction
    await asyncio.wait_for(gate.entered.wait(), 10)
    second = invoke(service, ITEM + ".plain", queued, "second")  # queued behind it on SQLite
    await asyncio.sleep(0.05)
    # On PostgreSQL the second write is not queued (no process-wide lock): it may be done.
    abandoned = [task for task in (first, second) if not task.done()]
    assert first in abandoned
    for task in abandoned:
        task.cancel()
    for task in abandoned:
        with pytest.raises(asyncio.CancelledError):
            await task
    gate.release.set()
    lab.effect = None
    # The next write goes through at once: no transaction was left open holding the lock.
    third = invoke(service, ITEM + ".plain", later, "third")
    assert (await asyncio.wait_for(third, 5))["name"] == "third"
    # Both abandoned units of work ran to completion; only their responses were dropped.
    assert await names(url) == {held: "first", queued: "second", later: "third"}
    actions = Counter(row["action"] for row in (await snapshot(url, AUDIT))[AUDIT])
    assert actions == {ITEM + ".add": 3, ITEM + ".patch": 1, ITEM + ".plain": 2}


async def test_cancelled_action_whose_effect_then_fails_is_rolled_back(
    service: Service, lab: LabPlugin, tessera_database_url: str
) -> None:
    url = tessera_database_url
    item = await add(service, "unchanged")
    before = await snapshot(url, ITEM, AUDIT)
    gate = Gate(fail=RuntimeError("after the client left"))
    lab.effect = gate
    task = invoke(service, ITEM + ".patch", item, "never")
    await asyncio.wait_for(gate.entered.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.release.set()
    lab.effect = None
    after = await asyncio.wait_for(invoke(service, ITEM + ".plain", item, "next"), 5)
    assert after["name"] == "next"
    rows = await snapshot(url, ITEM, AUDIT)
    assert len(rows[AUDIT]) == len(before[AUDIT]) + 1  # only the later write
    assert [row for row in rows[ITEM] if row["id"] != item] == [
        row for row in before[ITEM] if row["id"] != item
    ]


async def test_stop_waits_for_an_abandoned_unit_of_work(
    tessera_database_url: str, lab: LabPlugin
) -> None:
    settings = Settings(
        database_url=tessera_database_url, access_log=False, plugins_only=("helpdesk",)
    )
    service = await Service.start(settings, build_graph(settings, extra=[("lab", lab)]))
    item = await add(service, "before")
    gate = Gate()
    lab.effect = gate
    task = invoke(service, ITEM + ".patch", item, "committed during shutdown")
    await asyncio.wait_for(gate.entered.wait(), 10)
    task.cancel()
    stopping = asyncio.ensure_future(service.stop())
    await asyncio.sleep(0.2)
    assert not stopping.done()  # still waiting for the unit of work in flight
    gate.release.set()
    await asyncio.wait_for(stopping, 10)
    assert task.cancelled()
    assert await names(tessera_database_url) == {item: "committed during shutdown"}
