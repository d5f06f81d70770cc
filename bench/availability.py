"""Per-row availability: a 50-row list page at ViewSchema 1.2.0 (each row's ``_availability``)
against the same page at 1.1.0, on a real server, in the same run.

    python bench/availability.py [--backend sqlite|postgresql|both] [--rows 200]
                                 [--samples 201] [--output FILE]

For each backend: a fresh database with the host's tables gets ``--rows`` tickets of one
tenant by bulk INSERT (half open, half resolved), a real Hypercorn process of the host (one
worker, the installed sample plugins) starts, and for each scenario the script requests the
first 50-row page at 1.1.0 and at 1.2.0 alternately, ``--samples`` times each after ten
warm-up requests, over one keep-alive connection. Scenarios:

* ``queue``: ``helpdesk.ticket.queue`` as an agent; row actions start and escalate, no custom
  policy on the path (role check and workflow gate only);
* ``mine``: ``helpdesk.ticket.mine`` as the requester; row actions close and reopen, both
  behind the custom policy ``helpdesk.own_ticket`` (asked once per row, in a rolled-back
  transaction);
* ``limits``: ``limits.tickets`` as an agent (``bench/apps/availability.py``: the host plus
  one reopen action behind the helpdesk sample's example batch policy ``open_ticket_limit``,
  which reads the requesters' open tickets with one ``find`` for the whole page).

Reported: the client's round-trip median and p95 per version and the ratio of medians.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dbsetup
import servers

PG_DATABASE = f"tessera_bench_availability_{os.getpid()}"
TENANT = "acme"
PAGE = 50
SCENARIOS: dict[str, tuple[str, dict[str, str]]] = {
    "queue (no custom policy)": (
        "helpdesk.ticket.queue",
        {"X-Actor-Id": "bob", "X-Actor-Roles": "agent"},
    ),
    "mine (custom policy helpdesk.own_ticket)": (
        "helpdesk.ticket.mine",
        {"X-Actor-Id": "alice", "X-Actor-Roles": "requester"},
    ),
    "limits (batch policy reading the database)": (
        "limits.tickets",
        {"X-Actor-Id": "bob", "X-Actor-Roles": "agent"},
    ),
}
servers.TARGETS["availability"] = "apps.availability:app"


def timed(conn: http.client.HTTPConnection, path: str, headers: dict[str, str]) -> float:
    started = time.perf_counter()
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    if response.status != 200:
        raise RuntimeError(f"{path}: {response.status} {body[:300]!r}")
    return elapsed


def measure(port: int, samples: int) -> list[dict[str, Any]]:
    results = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for name, (projection, identity) in SCENARIOS.items():
            headers = {"X-Tenant-ID": TENANT, **identity}
            paths = {
                version: f"/api/projections/{projection}?pageSize={PAGE}"
                f"&acceptSchemaVersions={version}"
                for version in ("1.1.0", "1.2.0")
            }
            # The 1.2.0 page carries an _availability per row: check it once.
            conn.request("GET", paths["1.2.0"], headers=headers)
            page = json.loads(conn.getresponse().read())
            items = page["data"]["items"]
            assert len(items) == PAGE and all("_availability" in item for item in items), page
            times: dict[str, list[float]] = {"1.1.0": [], "1.2.0": []}
            for n in range(10 + samples):
                for version in ("1.1.0", "1.2.0") if n % 2 else ("1.2.0", "1.1.0"):
                    elapsed = timed(conn, paths[version], headers)
                    if n >= 10:
                        times[version].append(elapsed)
            cell: dict[str, Any] = {"scenario": name}
            for version, values in times.items():
                ordered = sorted(values)
                cell[version] = {
                    "p50_ms": statistics.median(ordered),
                    "p95_ms": ordered[int(len(ordered) * 0.95) - 1],
                }
            cell["ratio_p50"] = cell["1.2.0"]["p50_ms"] / cell["1.1.0"]["p50_ms"]
            results.append(cell)
    finally:
        conn.close()
    return results


def run_backend(backend: str, rows: int, samples: int, workdir: Path) -> dict[str, Any]:
    if backend == "sqlite":
        url = dbsetup.prepare_sqlite(workdir / "availability.db")
    else:
        url = dbsetup.prepare_postgresql(PG_DATABASE)
    try:
        dbsetup.seed([url], TENANT, rows // 2, "open")
        dbsetup.seed([url], TENANT, rows - rows // 2, "resolved")
        server = servers.start("availability", workers=1, database_url=url, workdir=workdir)
        try:
            cells = measure(server.port, samples)
        finally:
            server.stop()
    finally:
        if backend == "postgresql":
            dbsetup.drop_postgresql(PG_DATABASE)
    return {"backend": backend, "rows": rows, "samples": samples, "cells": cells}


def markdown(results: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| backend | scenario | 1.1.0 p50 / p95 ms | 1.2.0 p50 / p95 ms | ratio (p50) |",
        "|---|---|---|---|---|",
    ]
    for result in results:
        for cell in result["cells"]:
            old, new = cell["1.1.0"], cell["1.2.0"]
            lines.append(
                f"| {result['backend']} | {cell['scenario']} | {old['p50_ms']:.2f} / "
                f"{old['p95_ms']:.2f} | {new['p50_ms']:.2f} / {new['p95_ms']:.2f} | "
                f"{cell['ratio_p50']:.2f} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--samples", type=int, default=201)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    results = []
    with tempfile.TemporaryDirectory(prefix="tessera-bench-availability-") as tmp:
        for backend in backends:
            results.append(run_backend(backend, args.rows, args.samples, Path(tmp) / backend))
    print(markdown(results))
    if args.output is not None:
        args.output.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
