"""Schema evolution cost at startup on a large table (SQLite, in process).

    python bench/evolution.py [--rows 100000] [--runs 3] [--progress]

For each run, on a fresh SQLite file holding ``--rows`` rows of one entity, it times:

- ``unchanged``: a start whose graph equals the recorded one (what every restart pays);
- ``metadata``: a start after a label change (records the graph, touches no table);
- ``additive``: a start after a new field with a default (adds the column and backfills it);
- ``plan type-change``: ``migrate --plan`` for an integer -> string change (tries every value);
- ``apply type-change``: ``migrate --apply --allow type-changed`` (moves the column aside and
  converts every value).
- ``plan converted type-change`` / ``apply converted type-change``: the same for an enum
  (``LOW`` ... ``URGENT``) turned integer through the plugin's ``ConvertField`` mapping, the
  field not nullable with a default; ``--progress`` shows ``migrate --apply``'s progress
  lines (plain lines every second) on stderr for this step.

Medians over the runs are printed as a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

from host.config import Settings
from host.graph import Graph, compile_graph
from host.plugins import load_plugins
from host.service import Service
from host.storage import Storage, build_schema
from host.storage.migrate import apply, plan_only
from host.storage.progress import NO_PROGRESS, Progress, StreamProgress
from plugin_api import ConvertField, Entity, Field, FieldType, Migration, hookimpl

FQN = "bench.item"
TABLE = "bench__item"
LEVELS = ("LOW", "NORMAL", "HIGH", "URGENT")
LEVEL_ENUM = Field(name="level", type=FieldType.ENUM, options=LEVELS, default="NORMAL")
LEVEL_INTEGER = Field(name="level", type=FieldType.INTEGER, default=3)
TO_INTEGER = ConvertField(
    entity=FQN,
    field="level",
    from_type=FieldType.ENUM,
    to_type=FieldType.INTEGER,
    mapping={level: n for n, level in enumerate(LEVELS, 1)},
)


def graph(
    *extra: Field,
    qty: FieldType = FieldType.INTEGER,
    label: str | None = None,
    level: Field = LEVEL_ENUM,
    migrations: tuple[Migration, ...] = (),
) -> Graph:
    entity = Entity(
        fqn=FQN,
        fields=(
            Field(name="title", type=FieldType.STRING, label=label),
            Field(name="qty", type=qty, nullable=True),
            level,
            *extra,
        ),
    )
    plugin = SimpleNamespace(
        tessera_entities=hookimpl(lambda: [entity]),
        tessera_migrations=hookimpl(lambda: list(migrations)),
    )
    return compile_graph(load_plugins(Settings(), extra=[("bench", plugin)], entry_points=False))


def seed(path: Path, rows: int) -> None:
    stamp = "2030-01-01T00:00:00.000000Z"
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executemany(
            f"INSERT INTO {TABLE} (tenant_id, id, title, qty, level, created_at, updated_at, "
            "_version) VALUES ('t1', ?, ?, ?, ?, ?, ?, ?)",
            (
                (f"{n:026d}", f"item {n}", n, LEVELS[n % 4], stamp, stamp, f"{n:026d}")
                for n in range(rows)
            ),
        )


async def timed(work: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await work()
    return time.perf_counter() - started


async def one_run(rows: int, progress: Progress) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "evo.db"
        settings = Settings(database_url=f"sqlite:///{path}", access_log=False)

        async def start(g: Graph) -> None:
            service = await Service.start(settings, g)
            await service.stop()

        async def with_storage(g: Graph, work: Callable[[Storage], Awaitable[object]]) -> None:
            storage = Storage(settings)
            await storage.connect()
            try:
                await work(storage)
            finally:
                await storage.disconnect()

        v1 = graph()
        await start(v1)
        seed(path, rows)
        labelled = graph(label="Name")
        added = graph(Field(name="score", type=FieldType.INTEGER, default=7), label="Name")
        retyped = graph(
            Field(name="score", type=FieldType.INTEGER, default=7),
            qty=FieldType.STRING,
            label="Name",
        )
        converted = graph(
            Field(name="score", type=FieldType.INTEGER, default=7),
            qty=FieldType.STRING,
            label="Name",
            level=LEVEL_INTEGER,
            migrations=(TO_INTEGER,),
        )
        result = {
            "unchanged": await timed(lambda: start(v1)),
            "metadata": await timed(lambda: start(labelled)),
            "additive": await timed(lambda: start(added)),
            "plan type-change": await timed(
                lambda: with_storage(
                    retyped, lambda s: plan_only(s, retyped, build_schema(retyped, s.dialect))
                )
            ),
            "apply type-change": await timed(
                lambda: with_storage(
                    retyped,
                    lambda s: apply(
                        s, retyped, build_schema(retyped, s.dialect), ("type-changed",)
                    ),
                )
            ),
            "plan converted type-change": await timed(
                lambda: with_storage(
                    converted, lambda s: plan_only(s, converted, build_schema(converted, s.dialect))
                )
            ),
            "apply converted type-change": await timed(
                lambda: with_storage(
                    converted,
                    lambda s: apply(
                        s,
                        converted,
                        build_schema(converted, s.dialect),
                        ("type-changed",),
                        progress,
                    ),
                )
            ),
        }
        with closing(sqlite3.connect(path)) as conn:
            (scored,) = conn.execute(f"SELECT count(*) FROM {TABLE} WHERE score = 7").fetchone()
            (text,) = conn.execute(f"SELECT count(*) FROM {TABLE} WHERE qty = '5'").fetchone()
            (urgent,) = conn.execute(f"SELECT count(*) FROM {TABLE} WHERE level = 4").fetchone()
        assert scored == rows and text == (1 if rows > 5 else 0), (scored, text)
        assert urgent == rows // 4, urgent
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--progress",
        action="store_true",
        help="show the apply's progress lines on stderr (converted type change)",
    )
    args = parser.parse_args()
    progress = StreamProgress(sys.stderr, interval=1.0) if args.progress else NO_PROGRESS
    runs = [asyncio.run(one_run(args.rows, progress)) for _ in range(args.runs)]
    print(f"| step ({args.rows:,} rows, SQLite, median of {args.runs}) | seconds |")
    print("|---|---:|")
    for step in runs[0]:
        print(f"| {step} | {statistics.median(r[step] for r in runs):.3f} |")


if __name__ == "__main__":
    main()
