"""Event delivery beside the action benchmarks: does delivering slow actions down?

    python bench/events.py [--backend sqlite postgresql] [--scenarios create transition update]
                           [--workers 1] [--runs 3] [--duration 5]

Two hosts with both sample plugins, each on its own fresh database, driven alternately with
the scenarios of ``bench/run.py`` (32 connections, same load generator):

- **off**: no webhook, ``TESSERA_EVENTS_DISPATCH=0`` (no subscriber wants these actions, so
  they write exactly what they wrote before events existed);
- **outbox**: the webhook below configured but ``TESSERA_EVENTS_DISPATCH=0``: every action
  writes its delivery row (the whole cost on the action path), nothing is delivered;
- **separate**: as outbox, plus a dispatcher process of its own (``tessera events run``)
  delivering beside the web workers (its CPU is added to the server CPU);
- **on**: ``TESSERA_WEBHOOKS`` sends every event (``"*"``) to the sample receiver
  (``sample_plugins/billing/examples/webhook_receiver.py``, a real process), so every action
  also writes its delivery row and the dispatchers in the same workers deliver them while the
  load runs.

Prints medians per scenario (req/s, p50, server CPU ms per request) and the on/off ratios,
and how many deliveries were still waiting when each "on" run ended and how long they took
to drain.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import dbsetup
import servers
from modes import cells, hosts_per_mode, measure, record, row, save
from run import BENCH_DIR

RECEIVER = BENCH_DIR.parent / "sample_plugins/billing/examples/webhook_receiver.py"
SECRET = "bench-secret-0123456789abcdef"


def waiting(url: str) -> int:
    """Deliveries not made yet (pending or failed) in ``url``'s database."""
    sql = "SELECT COUNT(*) FROM tessera_deliveries WHERE state <> 'dead'"
    if url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(dbsetup.sqlite_path(url)) as conn:
            return int(conn.execute(sql).fetchone()[0])
    import asyncio

    from databases import Database

    async def count() -> int:
        async with Database(url) as db:
            return int(await db.fetch_val(sql))

    return asyncio.run(count())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--backend", nargs="+", default=["sqlite"], choices=("sqlite", "postgresql")
    )
    parser.add_argument(
        "--scenarios", nargs="+", default=["create", "transition", "update"],
        choices=("create", "transition", "update"),
    )  # fmt: skip
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tessera-bench-events-"))
    port = servers.free_port()
    receiver = subprocess.Popen(
        [sys.executable, str(RECEIVER), "--port", str(port), "--log", str(tmp / "received.jsonl")],
        env={**os.environ, "WEBHOOK_SECRET": SECRET},
        stderr=subprocess.DEVNULL,
    )
    hook = {"url": f"http://127.0.0.1:{port}/", "secret": SECRET, "events": ["*"]}
    webhooks = json.dumps([hook])
    modes = {
        "off": {"TESSERA_EVENTS_DISPATCH": "0"},
        "outbox": {"TESSERA_WEBHOOKS": webhooks, "TESSERA_EVENTS_DISPATCH": "0"},
        "on": {"TESSERA_WEBHOOKS": webhooks},
        "separate": {"TESSERA_WEBHOOKS": webhooks, "TESSERA_EVENTS_DISPATCH": "0"},
    }
    results: list[dict[str, Any]] = []
    try:
        for backend in args.backend:
            with hosts_per_mode(backend, modes, workers=args.workers, tmp=tmp, name="events") as (
                urls,
                running,
            ):
                dispatcher = subprocess.Popen(
                    [sys.executable, "-m", "host", "events", "run"],
                    env={**os.environ, **modes["on"], "TESSERA_DATABASE_URL": urls["separate"]},
                    stdout=subprocess.DEVNULL,
                    stderr=open(tmp / "dispatcher.log", "wb"),  # noqa: SIM115
                )
                try:
                    for scenario in args.scenarios:
                        for run in range(args.runs):
                            for mode, server in running.items():
                                tenant = f"{scenario}-{mode}-{run}-{uuid.uuid4().hex[:6]}"
                                before = servers.cpu_seconds(dispatcher.pid)
                                measured = measure(server, urls[mode], scenario, tenant, args)
                                if mode == "separate":
                                    used = servers.cpu_seconds(dispatcher.pid) - before
                                    measured["server_cpu_s"] += used
                                left = waiting(urls[mode]) if mode in ("on", "separate") else 0
                                started = time.perf_counter()
                                while left and waiting(urls[mode]):
                                    time.sleep(0.05)
                                measured.update(
                                    backend=backend, scenario=scenario, mode=mode, run=run,
                                    waiting_at_end=left,
                                    drain_s=time.perf_counter() - started if left else 0.0,
                                )  # fmt: skip
                                record(results, measured, f" waiting {left}")
                finally:
                    dispatcher.terminate()
                    dispatcher.wait(30)
    finally:
        receiver.terminate()
        receiver.wait(10)
    save(results, report(results), "events")
    return 0


def report(results: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | scenario | mode | req/s | ratio vs off | p50 ms | server CPU ms/req | "
        "CPU ratio | waiting at end | drain s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    extra = {"waiting": "waiting_at_end", "drain": "drain_s"}
    for backend, scenario, cell in cells(results, ("off", "outbox", "on", "separate"), extra):
        for mode, m in cell.items():
            lines.append(
                row(backend, scenario, mode, m, cell["off"])
                + f" {m['waiting']:.0f} | {m['drain']:.1f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
