"""Record history: a row's history pages, the sealer beside actions, and the export.

    python bench/history.py [--backend sqlite|postgresql] [--records 10000]
                            [--seconds 10] [--clients 8] [--export 1000000]

In process (the host's Quart app and its test client; no network), on a fresh database:

1. **history pages**: one ticket with ``--records`` audit records (the create through HTTP,
   the rest inserted in bulk with the host's own audit statement); the first page and a page
   at the oldest end (its cursor taken from a walk), each requested 51 times after 3
   warm-ups: median and p95 milliseconds of the HTTP request.
2. **sealer on vs off**: ``--clients`` concurrent clients create tickets for ``--seconds``
   with no sealer, then with a sealer round every 0.05 s (the same run, the same database):
   actions per second and the ratio; the records sealed meanwhile.
3. **export**: ``--export`` records in a tenant (bulk inserted), exported as NDJSON through
   ``host.storage.auditexport.export_lines`` into a counter: records per second and the
   process's peak RSS before and after (``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host.config import Settings
from host.graph import build_graph
from host.http import create_app
from host.service import Service
from host.storage.auditchain import Sealer
from host.storage.auditexport import export_lines
from host.storage.auditlog import AuditLog
from host.storage.database import Tx
from host.storage.store import AuditRecord
from host.systemfields import new_ulid

TICKET = "helpdesk.ticket"
HEADERS = {"X-Tenant-ID": "t1", "X-Actor-Id": "ann", "X-Actor-Roles": "agent"}


def _settings(url: str) -> Settings:
    return replace(Settings(database_url=url, access_log=False), plugins_only=("helpdesk",))


async def _bulk(service: Service, tenant: str, subject: str, count: int) -> None:
    """``count`` audit records of ``subject``, inserted 5,000 per transaction."""
    done = 0
    while done < count:
        size = min(5000, count - done)
        statements = [
            service.entities.audit(
                AuditRecord(
                    event_id=new_ulid(),
                    tenant_id=tenant,
                    actor_id="ann",
                    roles=frozenset({"agent"}),
                    action=f"{TICKET}.edit",
                    entity=TICKET,
                    subject_id=subject,
                    inputs={"priority": "high"},
                    outputs={"priority": "high"},
                    at="2030-01-01T00:00:00.000000Z",
                    version=new_ulid(),
                    changes={"priority": ["normal", "high"], "_version": [None, None]},
                )
            )
            for _ in range(size)
        ]

        async def work(tx: Tx, batch: list[Any] = statements) -> None:
            await tx.batch(batch)

        await service.storage.transaction(work)
        done += size


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"median {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"


async def history_pages(url: str, records: int) -> None:
    app = create_app(_settings(url))
    async with app.test_app() as test_app:
        client = test_app.test_client()
        created = await client.post(
            f"/api/actions/{TICKET}.create",
            json={"subject": None, "inputs": {"title": "busy"}},
            headers=HEADERS,
        )
        ticket = (await created.get_json())["outputs"]["id"]
        settings = _settings(url)
        running = await Service.start(settings, build_graph(settings))
        try:
            started = time.perf_counter()
            await _bulk(running, "t1", ticket, records - 1)
            print(f"  {records - 1} records inserted in {time.perf_counter() - started:.1f} s")
            log = AuditLog(running.storage, running.schema)
            oldest = await log.of_row("t1", TICKET, ticket, None, records)
            deep_cursor = str(oldest[-51].seq)
        finally:
            await running.stop()
        path = f"/api/projections/{TICKET}.detail/history"
        for name, query in (("first page", ""), ("deepest page", f"&cursor={deep_cursor}")):
            samples = []
            for i in range(54):
                began = time.perf_counter()
                answer = await client.get(f"{path}?subject={ticket}{query}", headers=HEADERS)
                body = await answer.get_json()
                if i >= 3:
                    samples.append(time.perf_counter() - began)
            assert len(body["data"]["items"]) == 50, body
            print(f"  history, {name} (50 of {records}): {_ms(samples)}")


async def sealer_ratio(url: str, seconds: float, clients: int) -> None:
    app = create_app(_settings(url))
    async with app.test_app() as test_app:
        client = test_app.test_client()

        async def run(label: str) -> float:
            count = 0
            deadline = time.perf_counter() + seconds

            async def one() -> None:
                nonlocal count
                while time.perf_counter() < deadline:
                    answer = await client.post(
                        f"/api/actions/{TICKET}.create",
                        json={"subject": None, "inputs": {"title": label}},
                        headers=HEADERS,
                    )
                    assert answer.status_code == 200
                    count += 1

            await asyncio.gather(*(one() for _ in range(clients)))
            rate = count / seconds
            print(f"  {label}: {rate:.0f} actions/s ({count} in {seconds:.0f} s)")
            return rate

        off = await run("sealer off")
        settings = _settings(url)
        running = await Service.start(settings, build_graph(settings))
        sealer = Sealer(running.storage, running.schema)
        stop = asyncio.Event()

        async def seal() -> None:
            while not stop.is_set():
                await sealer.seal_all()
                await asyncio.sleep(0.05)

        task = asyncio.ensure_future(seal())
        try:
            on = await run("sealer on (a round every 0.05 s)")
        finally:
            stop.set()
            await task
            await sealer.seal_all()
            verified = await _verified(running)
            await running.stop()
        print(f"  ratio on/off: {on / off:.3f}; records sealed and verified: {verified}")


async def _verified(running: Service) -> int:
    from host.storage.auditchain import verify

    finding = await verify(running.storage, running.schema, "t1")
    assert finding.ok, finding
    return finding.checked


async def export_rate(url: str, count: int) -> None:
    settings = _settings(url)
    running = await Service.start(settings, build_graph(settings))
    try:
        started = time.perf_counter()
        await _bulk(running, "t9", new_ulid(), count)
        print(f"  {count} records inserted in {time.perf_counter() - started:.1f} s")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        exported = size = 0
        async for line in export_lines(AuditLog(running.storage, running.schema), "t9"):
            exported += 1
            size += len(line)
        took = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert exported == count
        print(
            f"  export NDJSON: {exported} records, {size / 1e6:.0f} MB in {took:.1f} s = "
            f"{exported / took:,.0f} records/s; peak RSS {before / 1024:.0f} MB before, "
            f"{after / 1024:.0f} MB after"
        )
    finally:
        await running.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--export", type=int, default=1_000_000)
    parser.add_argument("--only", choices=("history", "sealer", "export"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for part in ("history", "sealer", "export"):
            if args.only not in (None, part):
                continue
            if args.backend == "sqlite":
                url = f"sqlite:///{folder}/{part}.db"
            else:
                url = os.environ.get(
                    "TESSERA_BENCH_POSTGRES_URL",
                    "postgresql://postgres@127.0.0.1:5432/tessera_bench",
                )
            print(f"{part} ({args.backend}):", flush=True)
            if part == "history":
                await history_pages(url, args.records)
            elif part == "sealer":
                await sealer_ratio(url, args.seconds, args.clients)
            else:
                await export_rate(url, args.export)


if __name__ == "__main__":
    asyncio.run(main())
