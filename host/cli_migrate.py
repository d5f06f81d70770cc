"""``tessera migrate`` and the schema check ``tessera serve`` runs before Hypercorn.

Exit statuses: 0 done (``--plan``: nothing breaking); 1 refused (breaking changes not allowed,
or a broken plugin graph); 3 ``--plan`` found breaking changes (nothing was altered).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterable
from pathlib import Path

from databases import DatabaseURL

from host.config import Settings
from host.graph import Graph, GraphError, build_graph
from host.startup import check_database_url, reachable
from host.storage import Storage, build_schema
from host.storage.migrate import apply, plan_only, startup_evolution
from host.storage.plan import ALLOWABLE_KINDS, Plan, SchemaEvolutionError

__all__ = ["ALLOWABLE_KINDS", "migrate", "preflight"]

EXIT_REFUSED = 1
EXIT_BREAKING = 3


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


async def _migrate(
    settings: Settings, graph: Graph, *, execute: bool, allow: Iterable[str], as_json: bool
) -> int:
    check_database_url(settings)
    schema = build_schema(graph)
    storage = Storage(settings)
    await reachable(storage.connect(), settings)
    try:
        if not execute:
            plan = await plan_only(storage, graph, schema)
            _print(plan, as_json=as_json)
            return EXIT_BREAKING if plan.breaking else 0
        try:
            plan = await apply(storage, graph, schema, allow)
        except SchemaEvolutionError as exc:
            _print(exc.plan, as_json=as_json)
            print(exc.report(), file=sys.stderr)
            return EXIT_REFUSED
        _print(plan, as_json=as_json)
        if not as_json:
            print("applied" if not plan.up_to_date else "nothing to apply")
        return 0
    finally:
        await storage.disconnect()


def migrate(settings: Settings, *, execute: bool, allow: Iterable[str], as_json: bool) -> int:
    """``tessera migrate --plan`` (``execute=False``) or ``--apply``."""
    graph = _graph(settings)
    if graph is None:
        return EXIT_REFUSED
    return asyncio.run(_migrate(settings, graph, execute=execute, allow=allow, as_json=as_json))


async def _preflight(settings: Settings, graph: Graph) -> int:
    check_database_url(settings)
    schema = build_schema(graph)
    storage = Storage(settings)
    if (
        storage.dialect == "sqlite"
        and not Path(DatabaseURL(settings.database_url).database).exists()
    ):
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
