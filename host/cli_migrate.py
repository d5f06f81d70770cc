"""``tessera migrate``, the schema check ``tessera serve`` runs before Hypercorn, and the
database part of ``tessera check``.

Exit statuses: 0 done (``--plan``: nothing breaking); 1 refused (breaking changes not allowed,
rows that would break their declared rules, or a broken plugin graph); 3 ``--plan`` found
breaking changes (nothing was altered); 130 / 143 ``--apply`` interrupted by SIGINT / SIGTERM
(rolled back: nothing was applied).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Iterable, Iterator

from host.config import Settings
from host.graph import Graph, GraphError, build_graph
from host.startup import check_database_url, reachable
from host.storage import Storage, build_schema
from host.storage.database import Tx
from host.storage.deliveries import DeliveryStore
from host.storage.dialect import EvolutionDialect
from host.storage.migrate import apply, plan_only, startup_check, startup_evolution
from host.storage.plan import ALLOWABLE_KINDS, Plan, SchemaEvolutionError
from host.storage.progress import Interrupted, StreamProgress
from host.storage.schema import AUDIT_TABLE, DELIVERIES_TABLE
from host.storage.tenantkeys import distribution_problems, statement_problems

__all__ = ["ALLOWABLE_KINDS", "check_schema", "migrate", "preflight"]

EXIT_REFUSED = 1
EXIT_BREAKING = 3
EXIT_SIGNAL_BASE = 128


def _graph(settings: Settings) -> Graph | None:
    try:
        return build_graph(settings)
    except GraphError as exc:
        print(f"{len(exc.errors)} error(s) in the plugin graph:", file=sys.stderr)
        for error in exc.errors:
            print(f"error: {error}", file=sys.stderr)
        return None


def _print(plan: Plan, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(plan.as_json(), indent=2, sort_keys=True, ensure_ascii=False))
    else:
        print(plan.render())


@contextlib.contextmanager
def _interruptible(progress: StreamProgress, received: list[int]) -> Iterator[None]:
    """SIGINT and SIGTERM ask ``progress`` to stop the evolution at its next page (its
    transaction is then rolled back) instead of killing the process mid-way."""
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)

    def stop(number: int) -> None:
        received.append(number)
        progress.interrupt()

    installed = []
    for number in signals:
        try:
            loop.add_signal_handler(number, stop, number)
            installed.append(number)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - not on Linux
            pass
    try:
        yield
    finally:
        for number in installed:
            loop.remove_signal_handler(number)


async def _apply(
    storage: Storage,
    graph: Graph,
    allow: Iterable[str],
    as_json: bool,
    interval: float,
    versioned: bool,
) -> int:
    progress = StreamProgress(sys.stderr, interval=interval)
    received: list[int] = []
    try:
        with _interruptible(progress, received):
            schema = build_schema(graph, storage.dialect)
            plan = await apply(storage, graph, schema, allow, progress, versioned=versioned)
    except SchemaEvolutionError as exc:
        _print(exc.plan, as_json=as_json)
        print(exc.report(), file=sys.stderr)
        return EXIT_REFUSED
    except Interrupted as exc:
        print(
            f"{exc}: rolled back, nothing was applied (the database is as it was)",
            file=sys.stderr,
        )
        return EXIT_SIGNAL_BASE + (received[0] if received else signal.SIGINT)
    _print(plan, as_json=as_json)
    if not as_json:
        print("applied" if not plan.up_to_date else "nothing to apply")
    return 0


async def _migrate(
    settings: Settings,
    graph: Graph,
    *,
    execute: bool,
    allow: Iterable[str],
    as_json: bool,
    interval: float,
) -> int:
    check_database_url(settings)
    storage = Storage(settings)
    schema = build_schema(graph, storage.dialect)
    await reachable(storage.connect(), settings)
    try:
        if not execute:
            plan = await plan_only(storage, graph, schema)
            _print(plan, as_json=as_json)
            return EXIT_BREAKING if plan.breaking else 0
        return await _apply(storage, graph, allow, as_json, interval, settings.migration_versions)
    finally:
        await storage.disconnect()


def migrate(
    settings: Settings,
    *,
    execute: bool,
    allow: Iterable[str],
    as_json: bool,
    interval: float = 5.0,
) -> int:
    """``tessera migrate --plan`` (``execute=False``) or ``--apply`` (progress on stderr:
    a live line on a terminal, else a line every ``interval`` seconds)."""
    graph = _graph(settings)
    if graph is None:
        return EXIT_REFUSED
    return asyncio.run(
        _migrate(settings, graph, execute=execute, allow=allow, as_json=as_json, interval=interval)
    )


async def check_schema(settings: Settings, graph: Graph) -> int:
    """``tessera check``'s database part: print the plan a start would find (stderr) and
    return 1 exactly when a start would refuse it (the startup evolution's own decision,
    run without applying anything), else 0. A SQLite file that does not exist yet has
    nothing to check."""
    storage = Storage(settings)
    if storage.is_new_file():
        return 0
    await reachable(storage.connect(), settings)
    try:
        plan = await startup_check(storage, graph, build_schema(graph, storage.dialect))
    except SchemaEvolutionError as exc:
        print(exc.plan.render(), file=sys.stderr)
        print(exc.report(), file=sys.stderr)
        return EXIT_REFUSED
    finally:
        await storage.disconnect()
    print(plan.render(), file=sys.stderr)
    return 0


async def check_distributed(settings: Settings) -> int:
    """``tessera check --distributed``: 1 when the live schema, or a statement of the host
    that locks or joins rows, breaks a rule of a database distributed by ``tenant_id`` (each
    broken rule on stderr), else 0. PostgreSQL only
    (a SQLite file is never distributed: 1, saying so)."""
    storage = Storage(settings)
    if storage.dialect.embedded:
        print("error: --distributed checks a PostgreSQL database, not SQLite", file=sys.stderr)
        return EXIT_REFUSED
    await reachable(storage.connect(), settings)
    try:

        async def work(tx: Tx) -> list[str]:
            return await distribution_problems(tx, EvolutionDialect(storage.dialect))

        problems = await storage.transaction(work)
    finally:
        await storage.disconnect()
    store = DeliveryStore(storage, DELIVERIES_TABLE, AUDIT_TABLE)
    problems += statement_problems(store.statements())
    for line in problems:
        print(f"distributed: {line}", file=sys.stderr)
    return EXIT_REFUSED if problems else 0


async def _preflight(settings: Settings, graph: Graph) -> int:
    check_database_url(settings)
    storage = Storage(settings)
    schema = build_schema(graph, storage.dialect)
    if storage.is_new_file():
        return 0  # a new database: nothing can break, the worker creates it
    await reachable(storage.connect(), settings)
    try:
        await storage.prepare(schema, evolve=startup_evolution(graph, schema, storage.dialect))
    except SchemaEvolutionError as exc:
        print(exc.report(), file=sys.stderr)
        return EXIT_REFUSED
    finally:
        await storage.disconnect()
    return 0


def preflight(settings: Settings) -> int:
    """Compile the graph and prepare the database as a worker would, before ``serve``
    starts Hypercorn (whose exit status is 0 even when the app fails to start)."""
    graph = _graph(settings)
    if graph is None:
        return EXIT_REFUSED
    return asyncio.run(_preflight(settings, graph))
