"""Relations: a list page with a followed reference field (``project.key``, one ``LEFT JOIN``)
against the same page without it, on a real server, in the same run.

    python bench/relations.py [--backend sqlite|postgresql|both] [--projects 50]
                              [--issues 2000] [--samples 201] [--output FILE]

For each backend: a fresh database, a real Hypercorn process (one worker) serving the host
with ``bench/apps/relations.py``, ``--projects`` projects and ``--issues`` issues of one tenant
created through the API. Each scenario requests a 50-row page (ViewSchema 1.4.0) and its
baseline alternately, ``--samples`` times each after ten warm-up requests, over one keep-alive
connection:

* ``by title + project.key``: ``rel.issue.board`` sorted by title (the issue's own index),
  showing ``project.key``; baseline ``rel.issue.plain``, the same page without it;
* ``sorted by project.key``: the board sorted by the followed field; baseline the board
  sorted by title;
* ``filter project.key=P7``: the board filtered on the followed field; baseline the board
  unfiltered;
* ``followed under a read floor``: ``rel.issue.guarded`` (the target entity has a row scope
  the reader passes through the join); baseline ``rel.issue.plain``.

Reported: the client's round-trip median and p95 of each and the ratio of medians.
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

PG_DATABASE = f"tessera_bench_relations_{os.getpid()}"
TENANT = "acme"
PAGE = 50
HEADERS = {"X-Tenant-ID": TENANT, "X-Actor-Id": "olga", "Content-Type": "application/json"}
BOARD = f"/api/projections/rel.issue.board?pageSize={PAGE}&acceptSchemaVersions=1.4.0"
PLAIN = f"/api/projections/rel.issue.plain?pageSize={PAGE}&acceptSchemaVersions=1.4.0"
GUARDED = f"/api/projections/rel.issue.guarded?pageSize={PAGE}&acceptSchemaVersions=1.4.0"
SCENARIOS: dict[str, tuple[str, str]] = {
    "by title + project.key": (f"{BOARD}&sort=title", f"{PLAIN}&sort=title"),
    "sorted by project.key": (f"{BOARD}&sort=project.key", f"{BOARD}&sort=title"),
    "filter project.key=P7": (f"{BOARD}&filter.project.key=P7", BOARD),
    "followed under a read floor": (f"{GUARDED}&sort=title", f"{PLAIN}&sort=title"),
}
servers.TARGETS["relations"] = "apps.relations:app"


def call(conn: http.client.HTTPConnection, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body)
    conn.request(method, path, body=data, headers=HEADERS)
    response = conn.getresponse()
    raw = response.read()
    if response.status != 200:
        raise RuntimeError(f"{method} {path}: {response.status} {raw[:300]!r}")
    return json.loads(raw)


def seed(conn: http.client.HTTPConnection, projects: int, issues: int) -> None:
    ids, guarded = [], []
    for n in range(projects):
        inputs = {"key": f"P{n}", "owner": "olga" if n % 2 else "piet"}
        made = call(conn, "POST", "/api/actions/rel.project.create", {"inputs": inputs})
        ids.append(made["outputs"]["id"])
        made = call(conn, "POST", "/api/actions/rel.guarded.create", {"inputs": inputs})
        guarded.append(made["outputs"]["id"])
    for n in range(issues):
        inputs = {
            "title": f"issue {n * 7919 % issues:06d}",
            "project": ids[n % projects],
            "guarded": guarded[n % projects],
        }
        call(conn, "POST", "/api/actions/rel.issue.create", {"inputs": inputs})


def timed(conn: http.client.HTTPConnection, path: str) -> float:
    started = time.perf_counter()
    call(conn, "GET", path)
    return (time.perf_counter() - started) * 1000


def measure(conn: http.client.HTTPConnection, samples: int) -> list[dict[str, Any]]:
    page = call(conn, "GET", f"{BOARD}&sort=project.key")
    items = page["data"]["items"]
    assert len(items) == PAGE and all(i["_display"]["project"] == i["project.key"] for i in items)
    results = []
    for name, (followed, baseline) in SCENARIOS.items():
        times: dict[str, list[float]] = {"followed": [], "baseline": []}
        for n in range(10 + samples):
            order = ("followed", "baseline") if n % 2 else ("baseline", "followed")
            for which in order:
                elapsed = timed(conn, followed if which == "followed" else baseline)
                if n >= 10:
                    times[which].append(elapsed)
        cell: dict[str, Any] = {"scenario": name}
        for which, values in times.items():
            ordered = sorted(values)
            cell[which] = {
                "p50_ms": statistics.median(ordered),
                "p95_ms": ordered[max(int(len(ordered) * 0.95) - 1, 0)],
            }
        cell["ratio_p50"] = cell["followed"]["p50_ms"] / cell["baseline"]["p50_ms"]
        results.append(cell)
    return results


def run_backend(
    backend: str, projects: int, issues: int, samples: int, workdir: Path
) -> dict[str, Any]:
    if backend == "sqlite":
        url = dbsetup.prepare_sqlite(workdir / "relations.db")
    else:
        url = dbsetup.prepare_postgresql(PG_DATABASE)
    try:
        server = servers.start("relations", workers=1, database_url=url, workdir=workdir)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            try:
                seed(conn, projects, issues)
                cells = measure(conn, samples)
            finally:
                conn.close()
        finally:
            server.stop()
    finally:
        if backend == "postgresql":
            dbsetup.drop_postgresql(PG_DATABASE)
    return {
        "backend": backend,
        "projects": projects,
        "issues": issues,
        "samples": samples,
        "cells": cells,
    }


def markdown(results: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| backend | scenario | followed p50 / p95 ms | baseline p50 / p95 ms | ratio (p50) |",
        "|---|---|---|---|---|",
    ]
    for result in results:
        for cell in result["cells"]:
            new, old = cell["followed"], cell["baseline"]
            lines.append(
                f"| {result['backend']} | {cell['scenario']} | {new['p50_ms']:.2f} / "
                f"{new['p95_ms']:.2f} | {old['p50_ms']:.2f} / {old['p95_ms']:.2f} | "
                f"{cell['ratio_p50']:.2f} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--projects", type=int, default=50)
    parser.add_argument("--issues", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=201)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    results = []
    with tempfile.TemporaryDirectory(prefix="tessera-bench-relations-") as tmp:
        for backend in backends:
            workdir = Path(tmp) / backend
            results.append(run_backend(backend, args.projects, args.issues, args.samples, workdir))
    print(markdown(results))
    if args.output is not None:
        args.output.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
