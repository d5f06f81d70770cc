"""Entity rules: the cost of a validator on a create.

    python bench/rules.py [--backend sqlite|postgresql] [--creates 300] [--rounds 5]

PostgreSQL: a fresh database ``tessera_bench_rules`` on the local server, dropped at the end
(or the database named by ``TESSERA_BENCH_POSTGRES_URL``, emptied first).

In process (the host's Quart app and its test client; no network), on a fresh database, one
host with three entities of the same shape (a title and a reference to a project), each
with a create action of the same inputs:

* ``bench.plain``: no validator (the baseline);
* ``bench.checked``: one validator that only looks at the values (what the mechanism costs:
  the rows rendered for it, the call);
* ``bench.reading``: one validator that reads the referenced project through its read-only
  data API (one more statement: the common "is the parent archived?" rule).

Each round creates ``--creates`` rows of each entity, one request at a time (so the figure
is the latency of one create), the entities interleaved (plain, checked, reading, plain...);
``--rounds`` rounds after a warm-up round. Printed: the median and p95 milliseconds per
create of each entity over all rounds, and the ratios of the medians against the baseline
measured in the same run.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host.config import Settings
from host.http import create_app
from plugin_api import (
    Action,
    BadRequest,
    CreateAction,
    Entity,
    Field,
    FieldType,
    RowWrite,
    ValidatorHandler,
    hookimpl,
)

PROJECT = "bench.project"
KINDS = ("plain", "checked", "reading")
HEADERS = {"X-Tenant-ID": "t1", "X-Actor-Id": "ann"}


def checked(write: RowWrite) -> None:
    if not write.after["title"]:
        raise BadRequest("A title is needed")


async def reading(write: RowWrite) -> None:
    project = await write.data.get(PROJECT, write.after["project"])
    if project is None or project["archived"]:
        raise BadRequest("The project is archived")


class BenchPlugin:
    TESSERA_PLUGIN_API = "1.8"

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        project = Entity(
            fqn=PROJECT,
            fields=(
                Field(name="name", type=FieldType.STRING),
                Field(name="archived", type=FieldType.BOOLEAN, default=False),
            ),
        )
        shape = (
            Field(name="title", type=FieldType.STRING),
            Field(name="project", type=FieldType.REFERENCE, target=PROJECT),
        )
        validators = {"plain": (), "checked": ("bench.checked",), "reading": ("bench.reading",)}
        return (
            project,
            *(Entity(fqn=f"bench.{k}", fields=shape, validators=validators[k]) for k in KINDS),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn=f"{PROJECT}.create", entity=PROJECT, inputs=("name",)),
            *(
                CreateAction(
                    fqn=f"bench.{k}.create", entity=f"bench.{k}", inputs=("title", "project")
                )
                for k in KINDS
            ),
        )

    @hookimpl
    def tessera_validators(self) -> Mapping[str, ValidatorHandler]:
        return {"bench.checked": checked, "bench.reading": reading}


def _settings(url: str) -> Settings:
    return replace(Settings(database_url=url, access_log=False), events_dispatch=False)


async def measure(url: str, creates: int, rounds: int) -> dict[str, list[float]]:
    app = create_app(_settings(url), extra_plugins=[("bench", BenchPlugin())], entry_points=False)
    samples: dict[str, list[float]] = {kind: [] for kind in KINDS}
    async with app.test_app() as test_app:
        client = test_app.test_client()
        answer = await client.post(
            f"/api/actions/{PROJECT}.create",
            json={"subject": None, "inputs": {"name": "p"}},
            headers=HEADERS,
        )
        project = (await answer.get_json())["outputs"]["id"]
        for round_number in range(rounds + 1):  # round 0 warms up
            for _ in range(creates):
                for kind in KINDS:  # interleaved: the load on the machine hits all alike
                    began = time.perf_counter()
                    answer = await client.post(
                        f"/api/actions/bench.{kind}.create",
                        json={"subject": None, "inputs": {"title": "t", "project": project}},
                        headers=HEADERS,
                    )
                    took = time.perf_counter() - began
                    assert answer.status_code == 200, await answer.get_data()
                    if round_number:
                        samples[kind].append(took)
    return samples


def report(backend: str, samples: dict[str, list[float]]) -> None:
    base = statistics.median(samples["plain"])
    for kind in KINDS:
        ordered = sorted(samples[kind])
        median = statistics.median(ordered)
        p95 = ordered[int(len(ordered) * 0.95) - 1]
        print(
            f"  {backend} bench.{kind}.create: median {median * 1000:.2f} ms, "
            f"p95 {p95 * 1000:.2f} ms, ratio {median / base:.3f} ({len(ordered)} creates)"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--creates", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if args.backend == "sqlite":
            url = f"sqlite:///{folder}/rules.db"
        elif "TESSERA_BENCH_POSTGRES_URL" in os.environ:
            url = os.environ["TESSERA_BENCH_POSTGRES_URL"]  # emptied first
            from plugin_api.testing import reset_postgres

            await reset_postgres(url)
        else:
            url = await _fresh_postgres(FRESH)
        try:
            report(args.backend, await measure(url, args.creates, args.rounds))
        finally:
            if url.endswith("/" + FRESH):
                await _admin(f'DROP DATABASE IF EXISTS "{FRESH}" WITH (FORCE)')


FRESH = "tessera_bench_rules"
ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


async def _admin(statement: str) -> None:
    import asyncpg

    admin = await asyncpg.connect(ADMIN)
    try:
        await admin.execute(statement)
    finally:
        await admin.close()


async def _fresh_postgres(name: str) -> str:
    """A new, empty database ``name`` on the local server (dropped first if it exists)."""
    await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await _admin(f'CREATE DATABASE "{name}"')
    return ADMIN.rsplit("/", 1)[0] + "/" + name


if __name__ == "__main__":
    asyncio.run(main())
