"""Cron jobs (issue 41, docs/timers.md, "Cron jobs"): what one occurrence costs with many
tenants.

    python bench/cron.py [--backend sqlite|postgresql] [--tenants 10000] [--runs 3]

In process (the host's service, its own timer loop off; no network), on a fresh database
(PostgreSQL: ``tessera_bench_cron`` on the bench server, dropped after), with the helpdesk
sample and one job creating a ticket:

1. **seed**: one ``helpdesk.ticket.create`` through the runtime in each of ``--tenants``
   tenants (each becomes known: it has an audit record).
2. **fan-out**: the transaction that claims a clock row does: read the known tenants (a skip
   scan of the audit index), arm the occurrence in each, arm the next occurrence. Timed
   ``--runs`` times, each for another past occurrence; median seconds and microseconds per
   tenant.
3. **firing**: the occurrences' tenant rows fired by one process's timer loop pass after pass
   (each a create action, its audit record and its claim in one transaction); firings per
   second.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import dbsetup

from host.config import Settings
from host.graph import build_graph
from host.runtime.actor import Actor
from host.service import Service
from host.storage import Closing, Tx
from host.timers import Firing, TimerScheduler
from host.timers.queries import count_pending
from plugin_api import CronJob, SystemActor, Timer, hookimpl

TICKET = "helpdesk.ticket"
PG_DATABASE = "tessera_bench_cron"
JOB = CronJob(
    name="bench.ticket.yearly",
    schedule="0 0 1 1 *",  # yearly: no occurrence falls during the bench but the ones it fires
    action=f"{TICKET}.create",
    inputs={"title": "Yearly review"},
    actor=SystemActor(name="bench.clock", roles=("agent",)),
)


class BenchJob:
    @hookimpl
    def tessera_timers(self) -> Sequence[Timer]:
        return (JOB,)


async def measure(url: str, tenants: int, runs: int) -> dict[str, Any]:
    settings = replace(Settings(database_url=url, access_log=False), audit_seal_s=0)
    settings = replace(settings, timers_poll=0.0, plugins_only=("helpdesk",))
    graph = build_graph(settings, extra=[("bench", BenchJob())])
    service = await Service.start(settings, graph)
    firing = Firing(graph, service.storage, service.runtime)
    (job,) = graph.timers.cron
    try:
        started = time.perf_counter()
        for n in range(tenants):
            actor = Actor(tenant_id=f"tenant{n:06d}", actor_id="alice", roles=frozenset({"agent"}))
            await service.runtime.invoke(f"{TICKET}.create", actor, None, {"title": "seed"})
        seeded_s = time.perf_counter() - started
        fan_out: list[float] = []
        for run in range(runs):
            occurrence = f"{2001 + run}-01-01T00:00:00.000000Z"

            async def occur(tx: Tx, at: str = occurrence) -> Closing[int]:
                return Closing(len(await firing.clocks.occurred(tx, job, at)))

            started = time.perf_counter()
            armed = await service.storage.unit_of_work(occur)
            fan_out.append(time.perf_counter() - started)
            assert armed == tenants, (armed, tenants)
        loop = TimerScheduler(firing, 0.0)
        started = time.perf_counter()
        fired = 0
        while fired < tenants * runs:
            settled = await loop.pass_once()
            if not settled:
                break
            fired += settled
        firing_s = time.perf_counter() - started
        pending, overdue = await count_pending(service.storage)
    finally:
        await service.stop()
    median = statistics.median(fan_out)
    return {
        "tenants": tenants,
        "seed_s": round(seeded_s, 1),
        "fan_out_s": round(median, 3),
        "fan_out_us_per_tenant": round(median / tenants * 1e6, 1),
        "fired": fired,
        "fired_per_s": round(fired / firing_s, 1),
        "left_overdue": overdue,
        "left_pending": pending,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        if args.backend == "sqlite":
            url = dbsetup.prepare_sqlite(Path(directory) / "cron.db")
        else:
            url = dbsetup.prepare_postgresql(PG_DATABASE)
        try:
            result = asyncio.run(measure(url, args.tenants, args.runs))
        finally:
            if args.backend == "postgresql":
                dbsetup.drop_postgresql(PG_DATABASE)
    print({"backend": args.backend, **result}, flush=True)


if __name__ == "__main__":
    main()
