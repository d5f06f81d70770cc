"""Timers (issue 41, docs/timers.md): firing lag with many pending timers, and the cost of an
armed timer on the write that arms it.

    python bench/timers.py [--backend sqlite|postgresql] [--pending 100000] [--due 2000]
                           [--spread 10] [--writes 1000] [--runs 3]

In process (the host's service with its timer loop, default poll 0.5 s; no network), on a
fresh database (PostgreSQL: ``tessera_bench_timers`` on the bench server, dropped after):

1. **lag**: ``--pending`` open tickets of one tenant with their overdue timer armed a day
   ahead (they wait), and ``--due`` more whose timers fall due evenly over the next
   ``--spread`` seconds, seeded by direct SQL while the service runs, which fires them. The
   lag of a timer is its ``fired_at`` minus its ``due_at``: p50, p99 and max.
2. **arming cost**: ``--writes`` sequential ``helpdesk.ticket.create`` actions through the
   runtime with a ``due_at`` an hour ahead (arms the overdue timer: one more INSERT in the
   transaction) against the same create with a ``due_at`` an hour ago (arms nothing);
   alternated ``--runs`` times, median seconds per write and the ratio armed / not armed.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import dbsetup

from host.config import Settings
from host.graph import build_graph
from host.runtime.actor import Actor
from host.service import Service

TENANT = "bench"
TICKET = "helpdesk.ticket"
TIMER = "helpdesk.ticket.overdue"
PG_DATABASE = "tessera_bench_timers"
TIMER_COLUMNS = (
    "tenant_id",
    "id",
    "timer",
    "entity",
    "subject_id",
    "action",
    "key",
    "due_at",
    "state",
    "created_at",
)


def instant(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def timer_rows(tickets: list[tuple[Any, ...]], dues: list[str]) -> list[tuple[Any, ...]]:
    created = dbsetup.now_db()
    ids = dbsetup.ulids(len(tickets))
    return [
        (TENANT, ids[n], TIMER, TICKET, row[1], f"{TICKET}.escalate", due, due, "pending", created)
        for n, (row, due) in enumerate(zip(tickets, dues, strict=True))
    ]


def with_due(rows: list[tuple[Any, ...]], dues: list[str]) -> list[tuple[Any, ...]]:
    due_at = dbsetup.TICKET_COLUMNS.index("due_at")
    return [(*r[:due_at], due, *r[due_at + 1 :]) for r, due in zip(rows, dues, strict=True)]


def seed(url: str, count: int, due: Callable[[int], str]) -> None:
    """``count`` open tickets of one tenant, ticket ``n``'s overdue timer due at ``due(n)``."""
    dues = [due(n) for n in range(count)]
    tickets = with_due(dbsetup.ticket_rows(TENANT, count), dues)
    timers = timer_rows(tickets, dues)
    dbsetup.insert_rows(url, tickets)
    if url.startswith("sqlite"):
        marks = ", ".join("?" * len(TIMER_COLUMNS))
        with closing(sqlite3.connect(dbsetup.sqlite_path(url), timeout=30)) as conn, conn:
            conn.executemany(
                f"INSERT INTO tessera_timers ({', '.join(TIMER_COLUMNS)}) VALUES ({marks})", timers
            )
        return
    asyncio.run(_copy_timers(url, timers))


async def _copy_timers(url: str, timers: list[tuple[Any, ...]]) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.copy_records_to_table("tessera_timers", records=timers, columns=TIMER_COLUMNS)
    finally:
        await conn.close()


async def lags(url: str) -> list[float]:
    from databases import Database

    async with Database(url) as db:
        rows = await db.fetch_all(
            "SELECT due_at, fired_at FROM tessera_timers WHERE state = 'fired'"
        )
    parse = datetime.fromisoformat
    return sorted(
        (parse(r[1].replace("Z", "+00:00")) - parse(r[0].replace("Z", "+00:00"))).total_seconds()
        for r in rows
    )


async def fire_lag(url: str, pending: int, due: int, spread: float) -> dict[str, Any]:
    day = instant(datetime.now(timezone.utc) + timedelta(days=1))
    await asyncio.to_thread(seed, url, pending, lambda n: day)
    settings = replace(Settings(database_url=url, access_log=False), audit_seal_s=0)
    service = await Service.start(settings, build_graph(settings))
    try:
        now = datetime.now(timezone.utc)

        def soon(n: int) -> str:
            return instant(now + timedelta(seconds=2 + spread * n / due))

        await asyncio.to_thread(seed, url, due, soon)  # in a thread: the timer loop runs on
        deadline = time.monotonic() + spread + 120
        while len(measured := await lags(url)) < due and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
    finally:
        await service.stop()
    return {
        "pending": pending,
        "due": due,
        "fired": len(measured),
        "lag_p50_s": round(measured[len(measured) // 2], 3),
        "lag_p99_s": round(measured[int(len(measured) * 0.99) - 1], 3),
        "lag_max_s": round(measured[-1], 3),
    }


async def arming_cost(url: str, writes: int, runs: int) -> dict[str, Any]:
    settings = replace(Settings(database_url=url, access_log=False), audit_seal_s=0)
    settings = replace(settings, timers_poll=0.0)  # nothing fires: only the writes count
    service = await Service.start(settings, build_graph(settings))
    actor = Actor(tenant_id="arming", actor_id="alice", roles=frozenset({"agent"}))
    hour = timedelta(hours=1)

    async def batch(ahead: bool) -> float:
        started = time.perf_counter()
        for n in range(writes):
            moment = datetime.now(timezone.utc) + (hour if ahead else -hour)
            inputs = {"title": f"w{n}", "due_at": instant(moment)}
            await service.runtime.invoke(f"{TICKET}.create", actor, None, inputs)
        return (time.perf_counter() - started) / writes

    armed: list[float] = []
    plain: list[float] = []
    try:
        await batch(True)  # warm up
        for _ in range(runs):
            plain.append(await batch(False))
            armed.append(await batch(True))
    finally:
        await service.stop()
    a, p = statistics.median(armed), statistics.median(plain)
    return {
        "writes": writes,
        "armed_ms": round(a * 1000, 3),
        "not_armed_ms": round(p * 1000, 3),
        "ratio": round(a / p, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--due", type=int, default=2000)
    parser.add_argument("--spread", type=float, default=10.0)
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        results: dict[str, Any] = {"backend": args.backend}
        for part in ("lag", "arming"):
            if args.backend == "sqlite":
                url = dbsetup.prepare_sqlite(Path(directory) / f"{part}.db")
            else:
                url = dbsetup.prepare_postgresql(PG_DATABASE)
            try:
                if part == "lag":
                    work = fire_lag(url, args.pending, args.due, args.spread)
                else:
                    work = arming_cost(url, args.writes, args.runs)
                results[part] = asyncio.run(work)
            finally:
                if args.backend == "postgresql":
                    dbsetup.drop_postgresql(PG_DATABASE)
            print(part, results[part], flush=True)


if __name__ == "__main__":
    main()
