"""Read latency tail: detail and 100-row list reads under 32 keep-alive connections on one
worker (SQLite), this tree beside an earlier revision, in the same run.

    python bench/readtail.py [--before REV] [--rounds 5] [--duration 6] [--backend sqlite]

Both hosts run at once (one Hypercorn worker each, each on its own database holding one
100-row tenant), with the constant-JSON Quart ceiling beside them. Each round measures the
ceiling, then the two hosts one after the other (their order alternates per round), for
``detail`` (a cycle over the 100 rows' detail projection) and ``list100`` (the queue of the
100 rows). The machine's load affects both hosts alike; the figures to compare are the
p99/p50 ratios and the medians over the rounds. ``--before`` takes the ``host/`` and
``plugin_api/`` of a git revision (default ``HEAD~1``) into a temporary folder that goes first
on that server's ``PYTHONPATH``. See docs/benchmarks.md, "Read latency tail".
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dbsetup
import servers
from run import BENCH_DIR, build_requests, fmt, log, run_load

SCENARIOS = ("detail", "list100")
VARIANTS = ("before", "after")


def export_tree(revision: str, into: Path) -> None:
    """``host/`` and ``plugin_api/`` of ``revision`` into ``into``."""
    archive = subprocess.run(
        ["git", "archive", revision, "host", "plugin_api"],
        cwd=BENCH_DIR.parent,
        check=True,
        capture_output=True,
    ).stdout
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def database(backend: str, workdir: Path, name: str) -> str:
    if backend == "sqlite":
        return dbsetup.prepare_sqlite(workdir / f"{name}.db")
    return dbsetup.prepare_postgresql(f"tessera_bench_tail_{name}")


def measure(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    before_tree = workdir / "before"
    export_tree(args.before, before_tree)
    python_path = os.pathsep.join(filter(None, [str(BENCH_DIR), os.environ.get("PYTHONPATH")]))
    paths = {"before": f"{BENCH_DIR}{os.pathsep}{before_tree}", "after": python_path}
    urls = {variant: database(args.backend, workdir, variant) for variant in VARIANTS}
    running = {
        variant: servers.launch(
            "host",
            workers=1,
            database_url=urls[variant],
            workdir=workdir,
            env={"PYTHONPATH": paths[variant]},
        )
        for variant in VARIANTS
    }
    running["ceiling"] = servers.launch("ceiling", workers=1, database_url=None, workdir=workdir)
    results: list[dict[str, Any]] = []
    try:
        for server in running.values():
            server.wait_ready()
        requests = {
            (variant, scenario): build_requests(
                scenario, urls[variant], f"tail-{scenario}", 0, True
            )
            for variant in VARIANTS
            for scenario in SCENARIOS
        }
        for (variant, _), (mode, reqs) in requests.items():  # first requests: not measured
            run_load(
                running[variant].port,
                mode,
                reqs,
                duration=1,
                warmup=0,
                processes=1,
                workdir=workdir,
            )
        for round_ in range(args.rounds):
            ceiling = load(args, workdir, running["ceiling"], "cycle", [{"path": "/"}])
            results.append({"round": round_, "variant": "ceiling", "scenario": "-", **ceiling})
            order = VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]
            for scenario in SCENARIOS:
                for variant in order:
                    mode, reqs = requests[(variant, scenario)]
                    got = load(args, workdir, running[variant], mode, reqs)
                    results.append(
                        {"round": round_, "variant": variant, "scenario": scenario, **got}
                    )
                    log(
                        f"round {round_} {scenario} {variant}: {got['rps']:.0f} req/s "
                        f"p50 {fmt(got['p50_ms'], 1)} p99 {fmt(got['p99_ms'], 1)} ms "
                        f"statuses {got['statuses']} errors {got['errors']} "
                        f"(load average {got['loadavg_before']:.1f})"
                    )
    finally:
        for server in running.values():
            server.stop()
        if args.backend == "postgresql":
            for variant in VARIANTS:
                dbsetup.drop_postgresql(f"tessera_bench_tail_{variant}")
    return results


def load(
    args: argparse.Namespace,
    workdir: Path,
    server: servers.Server,
    mode: str,
    requests: list[dict[str, Any]],
) -> dict[str, Any]:
    return run_load(
        server.port,
        mode,
        requests,
        duration=args.duration,
        warmup=args.warmup,
        processes=1,
        workdir=workdir,
        worker_pids=server.workers(),
    )


def report(results: Sequence[dict[str, Any]], args: argparse.Namespace) -> str:
    ceilings = [r["rps"] for r in results if r["variant"] == "ceiling"]
    out = [
        f"{args.rounds} rounds of {args.duration:g} s after {args.warmup:g} s warm-up, 32 "
        f"connections, {args.backend}, before = {args.before}; medians over the rounds "
        f"(ceiling {fmt(statistics.median(ceilings))} req/s, from {fmt(min(ceilings))} to "
        f"{fmt(max(ceilings))}).",
        "",
        "| scenario | tree | req/s | p50 ms | p99 ms | p99 / p50 | worst round p99 / p50 "
        "| non-2xx |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for scenario in SCENARIOS:
        for variant in VARIANTS:
            cells = [r for r in results if r["variant"] == variant and r["scenario"] == scenario]
            cells = [r for r in cells if r["p50_ms"] is not None]
            if not cells:
                out.append(f"| {scenario} | {variant} | no request measured |")
                continue
            ratios = [r["p99_ms"] / r["p50_ms"] for r in cells]
            out.append(
                f"| {scenario} | {variant} | {fmt(statistics.median(r['rps'] for r in cells))} "
                f"| {fmt(statistics.median(r['p50_ms'] for r in cells), 1)} "
                f"| {fmt(statistics.median(r['p99_ms'] for r in cells), 1)} "
                f"| {fmt(statistics.median(ratios), 1)} | {fmt(max(ratios), 1)} "
                f"| {sum(r['non_2xx'] + r['errors'] for r in cells)} |"
            )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="HEAD~1", help="git revision to compare against")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tessera-tail-") as tmp:
        results = measure(args, Path(tmp))
    print(report(results, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
