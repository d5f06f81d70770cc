"""Hosts side by side, one per mode, each on a fresh database of its own, driven alternately
with the scenarios of ``bench/run.py`` (``bench/events.py``, ``bench/tokens.py``)."""

from __future__ import annotations

import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dbsetup
import servers
from run import BENCH_DIR, build_requests, run_load

Requests = list[dict[str, Any]]


@contextmanager
def hosts_per_mode(
    backend: str, modes: Mapping[str, Mapping[str, str]], *, workers: int, tmp: Path, name: str
) -> Iterator[tuple[dict[str, str], dict[str, servers.Server]]]:
    """(database URL, running host) per mode, with that mode's environment; stopped and the
    PostgreSQL databases dropped on exit."""
    urls: dict[str, str] = {}
    dropped: list[str] = []
    running: dict[str, servers.Server] = {}
    try:
        for mode in modes:
            if backend == "sqlite":
                urls[mode] = dbsetup.prepare_sqlite(tmp / f"{mode}-{uuid.uuid4().hex[:6]}.db")
            else:
                dropped.append(f"tessera_bench_{name}_{mode}")
                urls[mode] = dbsetup.prepare_postgresql(dropped[-1])
        for mode, env in modes.items():
            running[mode] = servers.launch(
                "host", workers=workers, database_url=urls[mode], workdir=tmp, env=env
            )
        for server in running.values():
            server.wait_ready()
        yield urls, running
    finally:
        for server in running.values():
            server.stop()
        for database in dropped:
            dbsetup.drop_postgresql(database)


def measure(
    server: servers.Server,
    url: str,
    scenario: str,
    tenant: str,
    args: Any,
    adapt: Callable[[Requests], Requests] = lambda requests: requests,
) -> dict[str, Any]:
    """One load run of ``scenario`` on ``server`` (32 connections, ``args.duration`` after
    ``args.warmup``), its requests passed through ``adapt``."""
    kind, requests = build_requests(scenario, url, tenant, args.duration + args.warmup, False)
    return run_load(
        server.port, kind, adapt(requests), duration=args.duration, warmup=args.warmup,
        processes=1, workdir=server.log.parent, worker_pids=server.workers(),
    )  # fmt: skip


def record(results: list[dict[str, Any]], measured: dict[str, Any], extra: str = "") -> None:
    """Keep one run's figures and print its line."""
    results.append(measured)
    print(
        f"[bench] {measured['backend']} {measured['scenario']} {measured['mode']} run "
        f"{measured['run']}: {measured['rps']:.0f} req/s p50 {measured['p50_ms']:.1f} ms "
        f"non-2xx {measured['non_2xx']}{extra}",
        file=sys.stderr,
        flush=True,
    )


def save(results: list[dict[str, Any]], table: str, kind: str) -> None:
    """Print the table and write every run to ``bench/results/<time>-<kind>.json``."""
    print(table)
    out = BENCH_DIR / "results" / (time.strftime("%Y%m%d-%H%M%S") + f"-{kind}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, default=str))
    print(f"\nResult file: {out}")


def cells(
    results: list[dict[str, Any]], modes: tuple[str, ...], extra: Mapping[str, str] = {}
) -> Iterator[tuple[str, str, dict[str, dict[str, float]]]]:
    """Per (backend, scenario): the medians of each mode's runs (``rps``, ``p50``, ``cpu``
    in ms per request, and the median of each ``extra`` figure under its name)."""
    for backend, scenario in sorted({(r["backend"], r["scenario"]) for r in results}):
        cell: dict[str, dict[str, float]] = {}
        for mode in modes:
            key = (backend, scenario, mode)
            runs = [r for r in results if (r["backend"], r["scenario"], r["mode"]) == key]
            if not runs:
                continue
            cell[mode] = {
                "rps": statistics.median(r["rps"] for r in runs),
                "p50": statistics.median(r["p50_ms"] for r in runs),
                "cpu": statistics.median(
                    1000 * r["server_cpu_s"] / max(r["count"], 1) for r in runs
                ),
                **{
                    name: statistics.median(r[field] for r in runs) for name, field in extra.items()
                },
            }
        yield backend, scenario, cell


def row(
    backend: str, scenario: str, mode: str, m: Mapping[str, float], base: Mapping[str, float]
) -> str:
    """The leading columns of a table row: req/s, its ratio to ``base``, p50, CPU and ratio."""
    return (
        f"| {backend} | {scenario} | {mode} | {m['rps']:.0f} | {m['rps'] / base['rps']:.2f} | "
        f"{m['p50']:.1f} | {m['cpu']:.2f} | {m['cpu'] / base['cpu']:.2f} |"
    )
