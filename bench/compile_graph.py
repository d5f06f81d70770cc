"""Benchmark: compile and hash a synthetic graph of N entities x 20 fields.

Each entity has a workflow, create/update/transition actions and a projection. Prints the
median of several runs of ``compile_graph`` (validation, model building, canonical form and
hash; plugin loading excluded) for N in 10, 100, 1000.

    python bench/compile_graph.py [--smoke] [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Mapping, Sequence
from types import SimpleNamespace

from host.config import Settings
from host.graph import compile_graph
from host.plugins import load_plugins
from plugin_api import (
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
    PolicyHandler,
    Projection,
    Stamp,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    hookimpl,
)

STATES = ("draft", "active", "done")


def _fields() -> tuple[Field, ...]:
    fixed = (
        Field(name="title", type=FieldType.STRING, max_length=120),
        Field(name="state", type=FieldType.ENUM, options=STATES),
        Field(name="owner", type=FieldType.STRING, nullable=True),
        Field(name="done_at", type=FieldType.DATETIME, nullable=True),
        Field(name="budget", type=FieldType.MONEY, currency="EUR", nullable=True),
        Field(name="kind", type=FieldType.ENUM, options=("a", "b", "c"), default="a"),
        Field(name="flag", type=FieldType.BOOLEAN, default=False),
    )
    rest = tuple(
        Field(name=f"f{i:02d}", type=FieldType.INTEGER, nullable=True, default=i)
        for i in range(20 - len(fixed))
    )
    return fixed + rest


def synthetic(n: int) -> tuple[list[Entity], list[Action], list[Projection]]:
    """``n`` entities with their actions and projections."""
    fields = _fields()
    workflow = Workflow(
        state_field="state",
        initial="draft",
        transitions=(
            Transition(name="start", sources=("draft",), target="active"),
            Transition(
                name="finish",
                sources=("active",),
                target="done",
                stamps=(Stamp.now("done_at"), Stamp.literal("flag", True)),
            ),
        ),
    )
    entities, actions, projections = [], [], []
    for i in range(n):
        fqn = f"bench.entity{i}"
        entities.append(Entity(fqn=fqn, fields=fields, workflow=workflow))
        names = [f.name for f in fields if f.name != "state"]
        actions += [
            CreateAction(
                fqn=f"{fqn}.create",
                entity=fqn,
                inputs=tuple(names),
                stamps=(Stamp.actor("owner"),),
                roles=("clerk",),
                policies=("bench.allow",),
            ),
            UpdateAction(fqn=f"{fqn}.edit", entity=fqn, patchable=tuple(names[:10])),
            TransitionAction(fqn=f"{fqn}.start", entity=fqn, transition="start"),
            TransitionAction(fqn=f"{fqn}.finish", entity=fqn, transition="finish"),
        ]
        projections.append(
            Projection(
                fqn=f"{fqn}.list",
                entity=fqn,
                fields=("id", *names, "created_at"),
                actions=(f"{fqn}.create", f"{fqn}.start", f"{fqn}.finish"),
            )
        )
    return entities, actions, projections


def plugin(n: int) -> object:
    """An in-memory plugin contributing :func:`synthetic` ``(n)``."""
    entities, actions, projections = synthetic(n)

    @hookimpl
    def tessera_entities() -> Sequence[Entity]:
        return entities

    @hookimpl
    def tessera_actions() -> Sequence[Action]:
        return actions

    @hookimpl
    def tessera_projections() -> Sequence[Projection]:
        return projections

    @hookimpl
    def tessera_policies() -> Mapping[str, PolicyHandler]:
        return {"bench.allow": lambda ctx: True}

    return SimpleNamespace(
        tessera_entities=tessera_entities,
        tessera_actions=tessera_actions,
        tessera_projections=tessera_projections,
        tessera_policies=tessera_policies,
    )


def measure(n: int, runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``compile_graph`` (hash included) over ``runs`` runs.

    CPU time is reported too because wall time is noisy on a shared machine.
    """
    loaded = load_plugins(Settings(), extra=[("bench", plugin(n))], entry_points=False)
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        graph = compile_graph(loaded)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    assert len(graph.entities) == n
    return statistics.median(wall), statistics.median(cpu)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, for CI (< 5 s)")
    parser.add_argument("--runs", type=int, default=None, help="runs per size (default 5)")
    args = parser.parse_args(argv)
    sizes = (2, 10) if args.smoke else (10, 100, 1000)
    runs = args.runs or (2 if args.smoke else 5)
    for n in sizes:
        wall, cpu = measure(n, runs)
        print(
            f"{n:>5} entities x 20 fields ({5 * n} actions+projections): median "
            f"{wall * 1000:8.1f} ms wall, {cpu * 1000:8.1f} ms CPU over {runs} runs"
        )


if __name__ == "__main__":
    main()
