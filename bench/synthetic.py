"""Graph compile time for a synthetic plugin of N entities (run in a fresh process).

``python bench/synthetic.py --entities 1000 --runs 3`` prints JSON: the time of
``host.graph.build_graph`` with the synthetic plugin registered via ``extra=`` and entry points
off, for each run (the first includes the compiler's lazy work), plus the schema derivation.
With ``--startup`` it also times the service start on a fresh SQLite file (creating every
table and recording the graph) and a restart on that file (graph unchanged).

Each entity looks like ``helpdesk.ticket``: 9 fields of every type, a workflow of 3
transitions, 4 actions (create, update, 2 transitions) and 2 projections.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from plugin_api import (
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
    Projection,
    Stamp,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    hookimpl,
)

STATES = ("open", "active", "done")


def entity(i: int) -> tuple[Entity, list[Action], list[Projection]]:
    fqn = f"synth.e{i:05d}"
    fields = (
        Field(name="title", type=FieldType.STRING, max_length=120),
        Field(name="notes", type=FieldType.STRING, nullable=True),
        Field(name="rank", type=FieldType.ENUM, options=("a", "b", "c"), default="a"),
        Field(name="hours", type=FieldType.INTEGER, nullable=True, label="Hours (h)"),
        Field(name="due_at", type=FieldType.DATETIME, nullable=True),
        Field(name="flag", type=FieldType.BOOLEAN, default=False),
        Field(name="budget", type=FieldType.MONEY, currency="EUR", nullable=True),
        Field(name="state", type=FieldType.ENUM, options=STATES),
        Field(name="owner", type=FieldType.STRING, nullable=True),
    )
    workflow = Workflow(
        state_field="state",
        initial="open",
        transitions=(
            Transition(
                name="begin", sources=("open",), target="active", stamps=(Stamp.actor("owner"),)
            ),
            Transition(name="finish", sources=("active",), target="done"),
            Transition(name="reset", sources=("active", "done"), target="open"),
        ),
    )
    editable = ("title", "notes", "rank", "hours", "due_at", "flag", "budget")
    actions: list[Action] = [
        CreateAction(fqn=f"{fqn}.create", entity=fqn, inputs=editable, roles=("user",)),
        UpdateAction(fqn=f"{fqn}.edit", entity=fqn, patchable=editable, roles=("user",)),
        TransitionAction(fqn=f"{fqn}.begin", entity=fqn, transition="begin", roles=("user",)),
        TransitionAction(fqn=f"{fqn}.finish", entity=fqn, transition="finish", roles=("user",)),
    ]
    projections = [
        Projection(
            fqn=f"{fqn}.list",
            entity=fqn,
            fields=("id", "title", "rank", "state", "due_at", "created_at"),
            actions=(f"{fqn}.create", f"{fqn}.begin"),
        ),
        Projection(
            fqn=f"{fqn}.detail",
            entity=fqn,
            fields=("id", *editable, "state", "owner", "created_at", "updated_at", "_version"),
            actions=tuple(action.fqn for action in actions),
        ),
    ]
    return Entity(fqn=fqn, fields=fields, workflow=workflow), actions, projections


class SyntheticPlugin:
    def __init__(self, count: int) -> None:
        built = [entity(i) for i in range(count)]
        self.entities = [item[0] for item in built]
        self.actions = [action for item in built for action in item[1]]
        self.projections = [projection for item in built for projection in item[2]]

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return self.entities

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return self.actions

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return self.projections


async def _time_starts(graph: Any, runs: int) -> tuple[list[float], list[float]]:
    """Service start on a fresh SQLite file, then a restart on it, ``runs`` times."""
    from host.config import Settings
    from host.service import Service

    first, again = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            settings = Settings(database_url=f"sqlite:///{tmp}/synth.db", access_log=False)
            for times in (first, again):
                started = time.perf_counter()
                service = await Service.start(settings, graph)
                times.append(time.perf_counter() - started)
                await service.stop()
    return first, again


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--startup", action="store_true", help="also time service starts")
    args = parser.parse_args(argv)

    from host.config import Settings
    from host.graph import build_graph
    from host.storage.dialects import SQLITE
    from host.storage.schema import build_schema

    settings = Settings()
    compile_s, schema_s = [], []
    graph = None
    for _ in range(args.runs):
        plugin = SyntheticPlugin(args.entities)
        started = time.perf_counter()
        graph = build_graph(settings, extra=[("synthetic", plugin)], entry_points=False)
        compile_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        build_schema(graph, SQLITE)
        schema_s.append(time.perf_counter() - started)
    assert graph is not None and len(graph.entities) == args.entities
    result: dict[str, object] = {
        "entities": args.entities,
        "actions": len(graph.actions),
        "projections": len(graph.projections),
        "compile_s": compile_s,
        "compile_median_s": statistics.median(compile_s),
        "schema_median_s": statistics.median(schema_s),
    }
    if args.startup:
        first, again = asyncio.run(_time_starts(graph, args.runs))
        result["first_start_median_s"] = statistics.median(first)
        result["restart_median_s"] = statistics.median(again)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
