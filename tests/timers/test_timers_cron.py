"""Cron jobs (issue 41, plugin API 1.12; docs/timers.md, "Cron jobs"): checked at startup,
part of the hash and the diagram, and fired once per occurrence in every tenant that has
written anything, by the job's system actor, even with a second timer loop racing the host's.

The firing tests share one host whose database only they use (its ``extra`` plugin is this
module's): the job creates tickets in every tenant of that database."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from host.config import Settings
from host.diagrams import render_entity
from host.graph import GraphError, build_graph
from host.graph.cron import is_schedule, next_occurrence, occurs_at
from host.storage import Closing, Tx
from host.storage.timers import CANCELLED, CLOCK_TENANT, FIRED, PENDING
from host.timers import Firing, TimerScheduler
from host.timers.queries import list_timers
from plugin_api import CronJob, SystemActor, Timer, hookimpl
from plugin_api.testing import Client, SharedHarness, TenantHost

TICKET = "helpdesk.ticket"
JOB = "digest.ticket.check"
CLERK = SystemActor(name="digest.clock", roles=("requester",))
HELPDESK = Settings(plugins_only=("helpdesk",))
TITLE = "Scheduled check"


def job(**changes: object) -> CronJob:
    values: dict[str, object] = {
        "name": JOB,
        "schedule": "* * * * * */2",  # every two seconds: a sixth field of seconds
        "action": f"{TICKET}.create",
        "inputs": {"title": TITLE},
        "actor": CLERK,
    }
    return CronJob(**{**values, **changes})  # type: ignore[arg-type]


class Digest:
    def __init__(self, *timers: Timer) -> None:
        self.timers = timers

    @hookimpl
    def tessera_timers(self) -> Sequence[Timer]:
        return self.timers


DIGEST = Digest(job())
"""The module's plugin (one object: the shared host is kept with it)."""


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        (job(schedule="every day"), "is not a cron expression"),
        (job(schedule="61 * * * *"), "is not a cron expression"),
        (job(schedule="* * * * * * *"), "is not a cron expression"),
        (job(action="nowhere.act"), "no action 'nowhere.act'"),
        (job(action=f"{TICKET}.start"), "is not a create action"),
        (job(actor=SystemActor(name="digest.clock", roles=("clerk",))), "holds none of the roles"),
        (job(inputs={"colour": "red"}), "inputs ['colour'] are not inputs"),
        (job(inputs={"title": object()}), "inputs must be JSON values"),
        (job(name=f"{TICKET}.overdue"), "declared twice"),
    ],
)
def test_a_job_that_cannot_hold_is_a_startup_error(declared: CronJob, problem: str) -> None:
    with pytest.raises(GraphError) as raised:
        build_graph(HELPDESK, extra=[("digest", Digest(declared))])
    (message,) = raised.value.errors
    assert "plugin 'digest'" in message and f"timer {declared.name!r}" in message
    assert problem in message


def test_a_job_enters_the_hash_and_the_diagram() -> None:
    plain = build_graph(HELPDESK)
    daily = build_graph(HELPDESK, extra=[("digest", Digest(job(schedule="0 2 * * *")))])
    other = build_graph(HELPDESK, extra=[("digest", Digest(job(schedule="0 3 * * *")))])
    assert len({plain.hash, daily.hash, other.hash}) == 3
    assert b'"schedule":"0 2 * * *"' in daily.canonical
    assert daily.timers.cron == (daily.timers.by_name[JOB],) and JOB not in str(
        daily.timers.by_entity
    )
    drawn = render_entity(daily, TICKET, "mermaid").splitlines()
    assert f"    [*] --> open: cron 0 2 * * *: create (job {JOB})" in drawn


def test_schedules_are_read_in_utc() -> None:
    assert is_schedule("0 2 * * *") and is_schedule("@daily") and not is_schedule("@often")
    assert next_occurrence("0 2 * * *", "2026-11-28T15:00:00.5Z") == "2026-11-29T02:00:00.000000Z"
    assert next_occurrence("0 2 * * *", "2026-11-29T02:00:00Z") == "2026-11-30T02:00:00.000000Z"
    assert occurs_at("0 2 * * *", "2026-11-29T02:00:00.000000Z")
    assert not occurs_at("0 3 * * *", "2026-11-29T02:00:00.000000Z")
    assert not occurs_at("* * * * * */2", "2026-11-29T02:00:03.000000Z")


async def _checks(client: Client) -> list[dict[str, Any]]:
    listed = await client.projection(f"{TICKET}.queue")
    assert listed.status == 200, listed.json
    return [item for item in listed.json["data"]["items"] if item["title"] == TITLE]


async def _wait_for(host: TenantHost, client: Client, occurrences: int) -> list[dict[str, Any]]:
    loop = asyncio.get_running_loop()
    started = loop.time()
    while len(found := await _checks(client)) < occurrences:
        assert loop.time() - started < 20, f"{host.tenant}: {len(found)} checks after 20 s"
        await asyncio.sleep(0.1)
    return found


async def test_each_occurrence_fires_once_in_each_tenant_that_wrote(
    tessera_shared: SharedHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("host.timers.cron.ARM_BATCH", 1)  # the tenants armed in many batches
    first = await tessera_shared.start(
        plugins=["helpdesk"], extra=[("digest", DIGEST)], timers_poll=0.05
    )
    second = await tessera_shared.start(
        plugins=["helpdesk"], extra=[("digest", DIGEST)], timers_poll=0.05
    )
    silent = await tessera_shared.start(
        plugins=["helpdesk"], extra=[("digest", DIGEST)], timers_poll=0.05
    )
    service = first.app.extensions["tessera.service"]()
    # A second timer loop on the same database races the host's for every clock and firing.
    rival = TimerScheduler(Firing(service.graph, service.storage, service.runtime), 0.02)
    rival.start()
    try:
        for host in (first, second):
            made = await host.client(actor="alice", roles=["agent"]).action(
                f"{TICKET}.create", inputs={"title": "Makes the tenant known"}
            )
            assert made.status == 200, made.json
        clients = [host.client(actor="alice", roles=["agent"]) for host in (first, second)]
        for host, client in zip((first, second), clients, strict=True):
            await _wait_for(host, client, 2)
    finally:
        await rival.stop()
    await asyncio.sleep(0.3)  # a firing the host's loop had in flight settles
    for host, client in zip((first, second), clients, strict=True):
        checks = await _checks(client)
        fired = await list_timers(service.storage, tenant=host.tenant, states=[FIRED])
        occurrences = Counter(row.due_at for row in fired if row.timer == JOB)
        assert set(occurrences.values()) == {1}, occurrences  # each occurrence once
        assert len(checks) == len(occurrences), (checks, occurrences)
        record = (await client.history(f"{TICKET}.detail", checks[-1]["id"])).json["data"]
        (created,) = record["items"]
        assert created["actor"] == {"id": "system:digest.clock", "roles": ["requester"]}
        assert created["via"] == [{"action": f"timer:{JOB}", "plugin": "digest"}]
    assert await _checks(silent.client(actor="alice", roles=["agent"])) == []
    clock = await list_timers(service.storage, tenant=CLOCK_TENANT, states=[PENDING])
    assert [row.timer for row in clock] == [JOB]  # the next occurrence, armed once


async def test_a_clock_off_its_schedule_is_cancelled_and_rearmed(
    tessera_shared: SharedHarness,
) -> None:
    host = await tessera_shared.start(plugins=["helpdesk"], extra=[("digest", DIGEST)])
    service = host.app.extensions["tessera.service"]()
    firing = Firing(service.graph, service.storage, service.runtime)
    (timer,) = service.graph.timers.cron
    stale_at = "2099-01-01T00:00:01.000000Z"  # an odd second: not an occurrence any more
    stale = firing.sql.arm(
        CLOCK_TENANT, "0" * 26, JOB, TICKET, "0" * 26, timer.action, stale_at, stale_at, stale_at
    )

    async def arm_stale(tx: Tx) -> Closing[None]:
        await tx.rows(*stale)
        return Closing(None)

    await service.storage.unit_of_work(arm_stale)
    await firing.clocks.keep_armed(service.storage)
    settled = await list_timers(service.storage, tenant=CLOCK_TENANT, states=[CANCELLED])
    assert stale_at in [row.due_at for row in settled]
    pending = await list_timers(service.storage, tenant=CLOCK_TENANT, states=[PENDING])
    assert pending and all(occurs_at("* * * * * */2", row.due_at) for row in pending)
