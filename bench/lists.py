"""Lists that scale: filtered, sorted, searched pages on a large tenant (a real server).

    python bench/lists.py [--backend sqlite|postgresql|both] [--big 1000000] [--small 10000]
                          [--noise 200000] [--pages 1000] [--samples 101] [--q-samples 11]
                          [--output FILE]

For each backend: a fresh database with the host's tables gets, by bulk INSERT (SQLite
``executemany``, PostgreSQL ``COPY``; never through the HTTP API), one tenant of ``--big``
tickets, one of ``--small`` tickets and ``--noise`` tickets spread over three other tenants.
A real Hypercorn process of the host then starts (its startup evolution builds the list
indexes of the sample plugins' declarations: that time is reported), and for each scenario
and tenant the script walks the pages through ``nextCursor`` down to page ``--pages`` (or the
last page), then requests the first and the deepest page ``--samples`` times each (``--q-samples``
for a search, which may scan the whole tenant), after three warm-up requests. Server time
is the host's own access-log duration of each request (from the ASGI call to the last body
byte); p50 and p95 are reported with the client's round trip. The ``EXPLAIN`` of each query,
built by the host's own SQL builder, is printed for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import http.client
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dbsetup
import servers

QUEUE = "helpdesk.ticket.queue"
PG_DATABASE = f"tessera_bench_lists_{os.getpid()}"
STATES = ("open", "open", "in_progress", "resolved", "closed")
PRIORITIES = ("low", "normal", "high", "urgent")
WORDS = ("printer", "laptop", "network", "screen", "mail", "badge", "chair", "coffee", "vpn", "fax")
BASE = datetime(2025, 1, 1, tzinfo=timezone.utc)
SCENARIOS: dict[str, dict[str, str]] = {
    "open, newest first": {"filter.state": "open", "sort": "-created_at"},
    "all, by title": {"sort": "title"},
    "q=printer (1 row in 10)": {"q": "printer"},
    "q=zebra (1 row in 100,000)": {"q": "zebra"},
    "q=nomatch (no row)": {"q": "nomatch"},
    "q=pr (2 chars: no trigram)": {"q": "pr"},
    "open, count + 2 facets": {
        "filter.state": "open",
        "count": "true",
        "facet": ["state", "priority"],  # type: ignore[dict-item]
    },
    "q=printer, count": {"q": "printer", "count": "true"},
}
PAGED = ("open, newest first", "all, by title")
_LOG_LINE = re.compile(r"GET /api/projections/\S+ tenant=(\S+) .*status=(\d+).* ([0-9.]+)ms")


def ticket_rows(tenant: str, start: int, count: int, salt: int) -> list[tuple[Any, ...]]:
    """``count`` varied tickets: 40% open, 4 priorities, 50 assignees, increasing creation
    times, a word of ``WORDS`` in each title and ``zebra`` in one title in 100,000."""
    ids = dbsetup.ulids(count)
    version = ids[0]
    rows = []
    for n, row_id in enumerate(ids, start):
        created = dbsetup_time(BASE + timedelta(seconds=n * 7 + salt))
        word = "zebra" if n % 100_000 == 99_999 else WORDS[(n * 7 + salt) % len(WORDS)]
        rows.append(
            (
                tenant,
                row_id,
                created,
                created,
                version,
                f"Ticket {n} {word} trouble",
                None,
                PRIORITIES[n % 4],
                n % 40,
                dbsetup_time(BASE + timedelta(days=n % 365)) if n % 3 else None,
                bool(n % 2),
                None,
                STATES[(n * 3 + salt) % 5],
                f"user{n % 1000}",
                f"agent{n % 50}" if n % 4 else None,
                None,
                None,
            )
        )
    return rows


def dbsetup_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def seed(url: str, tenants: Sequence[tuple[str, int]], chunk: int = 200_000) -> float:
    started = time.perf_counter()
    for salt, (tenant, count) in enumerate(tenants):
        for offset in range(0, count, chunk):  # each chunk's ids get a prefix of their own
            dbsetup.insert_rows(url, ticket_rows(tenant, offset, min(chunk, count - offset), salt))
    if url.startswith("sqlite"):
        with closing(sqlite3.connect(dbsetup.sqlite_path(url))) as conn:
            conn.execute("ANALYZE")
    else:
        asyncio.run(_pg(url, "ANALYZE"))
    return time.perf_counter() - started


async def _pg(url: str, sql: str, *args: Any) -> list[Any]:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return list(await conn.fetch(sql, *args))
    finally:
        await conn.close()


class Client:
    """Sequential GETs on one keep-alive connection, reading the server log's durations."""

    def __init__(self, server: servers.Server) -> None:
        self.server = server
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        self.offset = server.log.stat().st_size

    def get(self, tenant: str, query: dict[str, str]) -> tuple[dict[str, Any], float]:
        path = f"/api/projections/{QUEUE}?{urlencode(query, doseq=True)}"
        started = time.perf_counter()
        try:
            self.conn.request("GET", path, headers={"X-Tenant-ID": tenant})
            response = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # Hypercorn closes a keep-alive connection idle for 5 s (while a plan was taken)
            self.conn.close()
            started = time.perf_counter()
            self.conn.request("GET", path, headers={"X-Tenant-ID": tenant})
            response = self.conn.getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise RuntimeError(f"{response.status} for {path}: {body[:500]!r}")
        if query.get("format"):
            return {"body": body}, elapsed
        return json.loads(body), elapsed

    def post(self, path: str, tenant: str, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        headers = {
            "X-Tenant-ID": tenant,
            "X-Actor-Id": "alice",
            "X-Actor-Roles": "agent,requester",
            "Content-Type": "application/json",
        }
        self.conn.request("POST", path, body=data, headers=headers)
        response = self.conn.getresponse()
        answer = response.read()
        if response.status != 200:
            raise RuntimeError(f"{response.status} for {path}: {answer[:500]!r}")

    def server_times(self) -> list[float]:
        """The access-log durations (ms) of the requests since the last call."""
        time.sleep(0.05)
        with self.server.log.open("rb") as log:
            log.seek(self.offset)
            text = log.read().decode(errors="replace")
        self.offset += len(text.encode())
        return [float(m.group(3)) for m in _LOG_LINE.finditer(text)]

    def close(self) -> None:
        self.conn.close()


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def timed(client: Client, tenant: str, query: dict[str, str], samples: int) -> dict[str, Any]:
    for _ in range(min(3, samples // 4 + 1)):  # warm-up: caches, prepared statements
        client.get(tenant, query)
    client.server_times()
    rounds = [client.get(tenant, query)[1] for _ in range(samples)]
    server = client.server_times()
    assert len(server) == samples, (len(server), samples)
    return {
        "server_p50_ms": round(statistics.median(server), 2),
        "server_p95_ms": round(percentile(server, 0.95), 2),
        "client_p50_ms": round(statistics.median(rounds), 2),
    }


def walk(client: Client, tenant: str, query: dict[str, str], pages: int) -> tuple[int, str | None]:
    """Follow ``nextCursor`` from page 1 to page ``pages`` (or the last); return the page
    reached and the cursor that requests it (``None`` for page 1)."""
    cursor: str | None = None
    page = 1
    while page < pages:
        document, _ = client.get(tenant, {**query, **({"cursor": cursor} if cursor else {})})
        following = document["data"]["pagination"]["nextCursor"]
        if following is None:
            break
        cursor, page = following, page + 1
    return page, cursor


def cursor_key(url: str) -> bytes:
    """The database's cursor key (cursors are sealed: only the host's key opens them)."""
    from host.config import Settings
    from host.storage import Storage
    from host.storage.secrets import shared_secret

    async def read() -> bytes:
        storage = Storage(Settings(database_url=url, access_log=False))
        await storage.connect()
        try:
            return await shared_secret(storage, "cursor")
        finally:
            await storage.disconnect()

    return asyncio.run(read())


def explain(url: str, tenant: str, query: dict[str, str], cursor: str | None) -> str:
    """The plan of the statement the host runs for this page (the host's own SQL builder)."""
    from werkzeug.datastructures import MultiDict

    from host.config import Settings
    from host.graph import build_graph
    from host.query.cursor import CursorCodec
    from host.query.params import parse_list_query
    from host.query.spec import ID_COLUMN, list_spec
    from host.storage.dialects import dialect_named
    from host.storage.listsql import select_list
    from host.storage.reads import ProjectionList

    graph = build_graph(Settings(plugins_only=("helpdesk",)))
    projection = graph.projections[QUEUE]
    read = ProjectionList(projection, projection.entity.table_name)
    spec = list_spec(projection)
    args = MultiDict({**query, **({"cursor": cursor} if cursor else {})})
    parsed = parse_list_query(args, spec, "1.0.0", tenant, CursorCodec(cursor_key(url)))
    assert parsed is not None and parsed.page_size is not None
    if parsed.count or getattr(parsed, "facets", ()):
        return "(counts: see the host's count statements)"
    dialect = dialect_named("sqlite" if url.startswith("sqlite") else "postgresql")
    after = parsed.after  # the keyset the host decoded from the cursor (None: page 1)
    sql, params = select_list(
        dialect,
        read.table,
        read.columns,
        dataclasses.replace(parsed, after=None),
        search=spec.search,
        id_column=ID_COLUMN,
        tenant=tenant,
        after=after,
        limit=parsed.page_size + 1,
    )
    if dialect.embedded:
        with closing(sqlite3.connect(dbsetup.sqlite_path(url))) as conn:
            rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
        plan = "\n".join(str(row[-1]) for row in rows)
    else:
        rows = asyncio.run(_pg(url, f"EXPLAIN (ANALYZE, BUFFERS) {sql}", *params))
        plan = "\n".join(str(row[0]) for row in rows)
    return f"{sql}\n-- parameters: {params}\n{plan}"


def run_backend(backend: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    if backend == "sqlite":
        url = dbsetup.prepare_sqlite(workdir / "lists.db")
    else:
        url = dbsetup.prepare_postgresql(PG_DATABASE)
    tenants = [("big", args.big), ("small", args.small)]
    tenants += [(f"noise{n}", args.noise // 3) for n in range(3)]
    seconds = seed(url, tenants)
    print(f"[{backend}] seeded {sum(c for _, c in tenants):,} rows in {seconds:.1f} s", flush=True)
    env = {"TESSERA_ACCESS_LOG": "1", "TESSERA_PLUGINS_ONLY": "helpdesk"}
    # The schema evolution (list indexes, the text index of q with every row folded) as an
    # operator runs it on a large table before starting: `tessera migrate --apply`.
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "host", "migrate", "--apply"],
        env={**os.environ, **env, "TESSERA_DATABASE_URL": url},
        cwd=workdir,
        check=True,
        capture_output=True,
    )
    migrated = time.perf_counter() - started
    print(f"[{backend}] migrate --apply (indexes, text index) in {migrated:.1f} s", flush=True)
    launched = servers.launch("host", workers=1, database_url=url, workdir=workdir, env=env)
    launched.wait_ready(timeout=1800)
    print(f"[{backend}] server ready (index build) in {launched.ready_after:.1f} s", flush=True)
    result: dict[str, Any] = {
        "backend": backend,
        "rows": dict(tenants),
        "seed_s": round(seconds, 1),
        "migrate_apply_s": round(migrated, 1),
        "startup_s": round(launched.ready_after, 1),
        "measurements": [],
        "explain": {},
    }
    client = Client(launched)
    try:
        for name, scenario in ({} if args.creates_only else SCENARIOS).items():
            query = {**scenario, "pageSize": str(args.page_size)}
            for tenant in ("big", "small"):
                pages: list[tuple[int, str | None]] = [(1, None)]
                if name in PAGED:
                    deepest, cursor = walk(client, tenant, query, args.pages)
                    if cursor is not None:
                        pages.append((deepest, cursor))
                for page, cursor in pages:
                    full = {**query, **({"cursor": cursor} if cursor else {})}
                    samples = args.q_samples if "q" in query else args.samples
                    figures = timed(client, tenant, full, samples)
                    entry = {"scenario": name, "tenant": tenant, "page": page, **figures}
                    result["measurements"].append(entry)
                    print(f"[{backend}] {json.dumps(entry)}", flush=True)
                    if tenant == "big":
                        key = f"{name} / page {page}"
                        result["explain"][key] = explain(url, tenant, full, cursor)
        if not args.creates_only:
            result["export"] = export(client, launched, args.big)
            print(f"[{backend}] export {json.dumps(result['export'])}", flush=True)
        result["create"] = creates(client, args.creates)
        print(f"[{backend}] create {json.dumps(result['create'])}", flush=True)
    finally:
        client.close()
        launched.stop()
        if args.keep_log:
            args.keep_log.write_bytes(launched.log.read_bytes())
        if backend == "postgresql" and not args.keep:
            dbsetup.drop_postgresql(PG_DATABASE)
    return result


def export(client: Client, server: servers.Server, rows: int) -> dict[str, Any]:
    """The big tenant as NDJSON (every row, streamed): rate, the worker's peak memory, and
    that it parses back to the rows of the paged JSON list (first and last pages compared)."""
    worker = server.workers()[0]
    before = servers.proc_status(worker)
    started = time.perf_counter()
    document, _ = client.get("big", {"format": "ndjson", "sort": "title"})
    seconds = time.perf_counter() - started
    after = servers.proc_status(worker)
    lines = document["body"].splitlines()
    parsed = [json.loads(line) for line in lines]
    first, _ = client.get("big", {"sort": "title", "pageSize": "1000"})
    assert parsed[:1000] == first["data"]["items"], "export differs from the JSON list"
    assert len(parsed) == rows, (len(parsed), rows)
    return {
        "rows": len(parsed),
        "bytes": len(document["body"]),
        "seconds": round(seconds, 2),
        "rows_per_s": round(len(parsed) / seconds),
        "worker_rss_before_mib": round(before.get("VmRSS", 0) / 1024, 1),
        "worker_peak_mib": round(after.get("VmHWM", 0) / 1024, 1),
    }


def creates(client: Client, count: int) -> dict[str, Any]:
    """``count`` sequential ticket creates (the title is searched: folded and indexed)."""
    started = time.perf_counter()
    for n in range(count):
        body = {"inputs": {"title": f"Créé {n} imprimante", "priority": "low"}}
        client.post("/api/actions/helpdesk.ticket.create", "bench", body)
    seconds = time.perf_counter() - started
    return {"creates": count, "per_s": round(count / seconds, 1)}


def markdown(results: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| backend | scenario | tenant | page | server p50 ms | server p95 ms | client p50 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for result in results:
        for m in result["measurements"]:
            lines.append(
                f"| {result['backend']} | {m['scenario']} | {m['tenant']} | {m['page']} | "
                f"{m['server_p50_ms']} | {m['server_p95_ms']} | {m['client_p50_ms']} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--big", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--noise", type=int, default=200_000)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--page-size", type=int, default=50)
    parser.add_argument("--samples", type=int, default=101)
    parser.add_argument(
        "--q-samples", type=int, default=11, help="samples of a q search (may scan the tenant)"
    )
    parser.add_argument("--creates", type=int, default=300, help="sequential creates timed")
    parser.add_argument(
        "--creates-only",
        action="store_true",
        help="only the creates (to compare with a host without the text index)",
    )
    parser.add_argument("--output", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the PostgreSQL database")
    parser.add_argument("--keep-log", type=Path, help="copy the server's log there")
    args = parser.parse_args()
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    with tempfile.TemporaryDirectory(prefix="tessera-lists-") as tmp:
        results = [run_backend(backend, args, Path(tmp)) for backend in backends]
    print(markdown(results))
    for result in results:
        for key, plan in result["explain"].items():
            print(f"\n### {result['backend']}: {key}\n```\n{plan}\n```")
    if args.output:
        args.output.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
