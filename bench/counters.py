"""Counters and migrated rows: 50 concurrent increments of one row against read-then-patch
(the same run), and a migration mapping an option on N rows with versioning against
without it.

    python bench/counters.py [--backend sqlite|postgresql] [--clients 50] [--runs 5]
                             [--rows 10000]

In process (the host's Quart app and its test client; no network), on a fresh database
(PostgreSQL: drops and re-creates ``TESSERA_BENCH_POSTGRES_URL``, default
``postgresql://postgres@127.0.0.1:5432/tessera_bench_counters``):

1. **counters**: ``--clients`` concurrent actions each add 1 to the same row's counter,
   through ``ctx.data.increment`` or by reading the row and patching it (``ctx.data.get``
   then ``patch``); a 409 is retried at once until the action succeeds. Per run: seconds
   until every client got its 200, and the 409s answered on the way; medians of ``--runs``.
2. **migration**: ``--rows`` rows hold a removed option that the plugin maps to another;
   ``migrate --apply`` (``host.service.migrate``) with ``migration_versions`` on (a new
   version and an audit record per row) and off; median seconds of ``--runs`` applies each.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host.config import Settings
from host.graph import build_graph
from host.http import create_app
from host.service import migrate
from host.systemfields import new_ulid
from plugin_api import (
    Action,
    ActionContext,
    CreateAction,
    EffectHandler,
    Entity,
    Field,
    FieldType,
    MapOptions,
    Migration,
    hookimpl,
)

TALLY, HIT = "bench.tally", "bench.hit"
HEADERS = {"X-Tenant-ID": "t1", "X-Actor-Id": "ann"}


async def _count(ctx: ActionContext) -> None:
    tally = ctx.changes["tally"]
    if ctx.changes["how"] == "increment":
        await ctx.data.increment(TALLY, tally, "hits")
        return
    row = await ctx.data.get(TALLY, tally)
    assert row is not None
    await ctx.data.patch(TALLY, tally, {"hits": row["hits"] + 1})


class Bench:
    """A tally (a counter row) and hits, each counting on its tally; ``SIZES`` for the
    migration (``BenchV2`` maps ``XL`` to ``L``)."""

    SIZES: tuple[str, ...] = ("S", "XL")

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=TALLY,
                fields=(
                    Field(name="hits", type=FieldType.INTEGER, default=0),
                    Field(name="size", type=FieldType.ENUM, options=self.SIZES, default="S"),
                ),
            ),
            Entity(
                fqn=HIT,
                fields=(
                    Field(name="tally", type=FieldType.REFERENCE, target=TALLY),
                    Field(name="how", type=FieldType.STRING),
                ),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn=f"{TALLY}.create", entity=TALLY, inputs=("size",)),
            CreateAction(
                fqn=f"{HIT}.create", entity=HIT, inputs=("tally", "how"), effect="bench.count"
            ),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"bench.count": _count}


class BenchV2(Bench):
    SIZES = ("S", "L")

    @hookimpl
    def tessera_migrations(self) -> Sequence[Migration]:
        return (MapOptions(entity=TALLY, field="size", mapping={"XL": "L"}),)


def _settings(url: str, **more: Any) -> Settings:
    return replace(Settings(database_url=url, access_log=False), **more)


async def _fresh(backend: str, folder: str, name: str) -> str:
    if backend == "sqlite":
        return f"sqlite:///{folder}/{name}.db"
    import asyncpg

    url = os.environ.get(
        "TESSERA_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/tessera_bench_counters"
    )
    database = url.rsplit("/", 1)[1]
    admin = await asyncpg.connect(url.rsplit("/", 1)[0] + "/postgres")
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{database}"')
    finally:
        await admin.close()
    return url


async def counters(url: str, clients: int, runs: int) -> None:
    app = create_app(_settings(url), extra_plugins=[("bench", Bench())], entry_points=False)
    async with app.test_app() as test_app:
        client = test_app.test_client()

        async def post(fqn: str, inputs: dict[str, Any]) -> Any:
            answer = await client.post(
                f"/api/actions/{fqn}", json={"subject": None, "inputs": inputs}, headers=HEADERS
            )
            return answer.status_code, await answer.get_json()

        results: dict[str, list[tuple[float, int]]] = {"increment": [], "read-then-patch": []}
        for _ in range(runs):
            for how, samples in results.items():
                _, body = await post(f"{TALLY}.create", {})
                tally = body["outputs"]["id"]
                conflicts = 0

                async def one(tally: str = tally, how: str = how) -> None:
                    nonlocal conflicts
                    while True:
                        status, answer = await post(f"{HIT}.create", {"tally": tally, "how": how})
                        if status == 200:
                            return
                        assert status == 409, answer
                        conflicts += 1

                began = time.perf_counter()
                await asyncio.gather(*(one() for _ in range(clients)))
                samples.append((time.perf_counter() - began, conflicts))
        base = statistics.median(s for s, _ in results["read-then-patch"])
        for how, samples in results.items():
            seconds = statistics.median(s for s, _ in samples)
            refused = statistics.median(c for _, c in samples)
            print(
                f"  {how}: {clients} concurrent counts in {seconds:.3f} s "
                f"({clients / seconds:.0f} counts/s), 409s answered: median {refused:g} "
                f"(runs: {[c for _, c in samples]}); time vs read-then-patch {seconds / base:.2f}"
            )


async def migration(backend: str, folder: str, rows: int, runs: int) -> None:
    timings: dict[bool, list[float]] = {True: [], False: []}
    for run in range(runs):
        for versioned in (True, False):
            url = await _fresh(backend, folder, f"migration-{run}-{versioned}")
            settings = _settings(url)
            app = create_app(settings, extra_plugins=[("bench", Bench())], entry_points=False)
            async with app.test_app():
                pass  # the schema of version 1
            await _fill(url, rows)
            graph = build_graph(settings, extra=[("bench", BenchV2())], entry_points=False)
            began = time.perf_counter()
            plan = await migrate(
                _settings(url, migration_versions=versioned), graph, ("enum-option-removed",)
            )
            timings[versioned].append(time.perf_counter() - began)
            assert any(c.affected_rows == rows for c in plan.changes), plan.changes
    off = statistics.median(timings[False])
    for versioned, samples in timings.items():
        seconds = statistics.median(samples)
        label = "versioned (new _version + audit record per row)" if versioned else "in place"
        print(
            f"  {rows} rows mapped, {label}: median {seconds:.3f} s "
            f"({[round(s, 3) for s in samples]}); ratio to in place {seconds / off:.2f}"
        )


async def _fill(url: str, rows: int) -> None:
    """``rows`` tallies of size XL, inserted straight into the table."""
    from databases import Database

    now = "2030-01-01T00:00:00.000000Z"
    values = [
        {"t": "t1", "i": new_ulid(), "c": now, "u": now, "v": new_ulid(), "h": 0, "s": "XL"}
        for _ in range(rows)
    ]
    async with Database(url) as db:
        await db.execute_many(
            "INSERT INTO bench__tally (tenant_id, id, created_at, updated_at, _version, hits, "
            "size) VALUES (:t, :i, :c, :u, :v, :h, :s)",
            values,
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print(f"counters ({args.backend}):", flush=True)
        await counters(await _fresh(args.backend, folder, "counters"), args.clients, args.runs)
        print(f"migration ({args.backend}):", flush=True)
        await migration(args.backend, folder, args.rows, args.runs)


if __name__ == "__main__":
    asyncio.run(main())
