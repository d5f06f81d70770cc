"""Where a write's CPU goes, by thread: the event loop against SQLite's writer thread.

    python bench/threadcpu.py [--scenarios create transition update] [--duration 5]
                              [--runs 3] [--backend sqlite]

Starts the host (1 worker) and the Quart ceiling, then per scenario and run: the ceiling's
req/s, the host's req/s and p50/p99, and the CPU time of each thread of the host's worker
(``/proc/<pid>/task/<tid>/stat``) per completed request, beside the ceiling worker's CPU
per request (its ratio to the host's is the CPU-time form of host/ceiling, which the
machine's other load hardly moves). aiosqlite runs each connection on
a thread of its own; under writes the busiest thread after the event loop's is the
writer's.
CPU time per request hardly depends on other load on the machine; the ratio to the ceiling
measured in the same run does less than req/s. The environment is passed to the servers
(``TESSERA_SQLITE_GROUP_COMMIT=1`` measures without group commit).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import uuid
from pathlib import Path

import dbsetup
import servers
from run import build_requests, run_load


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of each thread of ``pid`` by id (``#tid``)."""
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        found[f"#{task.name}"] = (int(fields[11]) + int(fields[12])) / tick
    return found


def cpu_used(
    before: dict[str, float], after: dict[str, float], pid: int
) -> tuple[float, float, float]:
    """CPU seconds between two :func:`thread_cpu` readings of worker ``pid``: all its threads,
    its event loop's, and the busiest other thread's (SQLite's writer, under writes)."""
    used = {k: after[k] - before.get(k, 0.0) for k in after}
    total = sum(used.values())
    loop = used.pop(f"#{pid}")
    return total, loop, max(used.values(), default=0.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", default=["create", "transition", "update"])
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="tessera-threadcpu-"))
    if args.backend == "sqlite":
        url = dbsetup.prepare_sqlite(tmp / "threads.db")
    else:
        url = dbsetup.prepare_postgresql(f"tessera_bench_threadcpu_{os.getpid()}")
    host = servers.start("host", workers=1, database_url=url, workdir=tmp)
    ceiling = servers.start("ceiling", workers=1, database_url=None, workdir=tmp)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print(
        "| scenario | run | ceiling req/s | host req/s | host/ceiling | p50 / p99 ms | "
        "CPU ms/req: all | event loop | writer thread | other threads | ceiling CPU ms/req | "
        "CPU ceiling/host | ceiling p50 / p99 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    try:
        (pid,) = host.workers()
        (top_pid,) = ceiling.workers()
        for scenario in args.scenarios:
            ratios = []
            cpu_ratios = []
            for run in range(args.runs):
                top_before = sum(thread_cpu(top_pid).values())
                top = run_load(
                    ceiling.port,
                    "cycle",
                    [{"method": "GET", "path": "/", "headers": {}}],
                    duration=args.duration,
                    warmup=1.0,
                    processes=1,
                    workdir=tmp,
                )
                top_used = sum(thread_cpu(top_pid).values()) - top_before
                top_cpu = top_used / max(top["completed"], 1)
                tenant = f"threads-{scenario}-{uuid.uuid4().hex[:6]}"
                mode, requests = build_requests(scenario, url, tenant, args.duration + 1, False)
                before = thread_cpu(pid)
                got = run_load(
                    host.port,
                    mode,
                    requests,
                    duration=args.duration,
                    warmup=1.0,
                    processes=1,
                    workdir=tmp,
                )
                # Every request sent counts for the CPU (warm-up included).
                sent = max(got["completed"], 1)
                total, loop, writer = cpu_used(before, thread_cpu(pid), pid)
                ratio = got["rps"] / top["rps"]
                ratios.append(ratio)
                cpu_ratios.append(top_cpu * sent / total)
                print(
                    f"| {scenario} | {run} | {top['rps']:.0f} | {got['rps']:.0f} | {ratio:.2f} | "
                    f"{got['p50_ms']:.1f} / {got['p99_ms']:.1f} | {1000 * total / sent:.2f} | "
                    f"{1000 * loop / sent:.2f} | {1000 * writer / sent:.2f} | "
                    f"{1000 * (total - loop - writer) / sent:.2f} | {1000 * top_cpu:.2f} | "
                    f"{cpu_ratios[-1]:.2f} | {top['p50_ms']:.1f} / {top['p99_ms']:.1f} |",
                    flush=True,
                )
            print(
                f"<!-- {scenario}: median host/ceiling {statistics.median(ratios):.2f}, "
                f"CPU ceiling/host {statistics.median(cpu_ratios):.2f} -->"
            )
    finally:
        host.stop()
        ceiling.stop()
        if args.backend == "postgresql":
            dbsetup.drop_postgresql(f"tessera_bench_threadcpu_{os.getpid()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
