"""Versions of a real plugin distribution (``tests/evolution/dists/``), installed one per
directory with ``pip --target``, and a runner for the host in subprocesses against the test's
database (SQLite file, or PostgreSQL with ``TESSERA_TEST_BACKEND=postgresql``)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
DISTS = HERE / "dists"
DRIVER = HERE / "driver.py"
VERSIONS = ("v1", "v1_1", "v1_2", "v2", "v3", "v3_1", "t1", "t2")


def _install(version: str, root: Path) -> Path:
    target = root / version
    subprocess.run(
        [
            sys.executable,
            *("-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"),
            *("--no-index", "--target", str(target), str(DISTS / version)),
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    return target


@pytest.fixture(scope="session")
def evo_installs(tmp_path_factory: pytest.TempPathFactory) -> Mapping[str, Path]:
    """Each version of ``tessera-test-evo`` installed in a directory of its own."""
    root = tmp_path_factory.mktemp("evo-installs")
    with ThreadPoolExecutor(len(VERSIONS)) as pool:
        targets = list(pool.map(lambda v: _install(v, root), VERSIONS))
    return dict(zip(VERSIONS, targets, strict=True))


class Evo:
    """Runs ``python -m host`` and the app-factory driver with one plugin version."""

    def __init__(
        self, installs: Mapping[str, Path], database_url: str, cwd: Path, plugin: str = "evo"
    ) -> None:
        self.installs = installs
        self.plugin = plugin
        self.database_url = database_url
        self.cwd = cwd
        self.backend = "sqlite" if database_url.startswith("sqlite") else "postgresql"

    def env(self, version: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TESSERA_")}
        env.update(
            TESSERA_DATABASE_URL=self.database_url,
            TESSERA_PLUGINS_ONLY=self.plugin,
            TESSERA_ACCESS_LOG="0",
            PYTHONPATH=str(self.installs[version]),
        )
        return env

    def popen(self, version: str, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, *args],
            env=self.env(version),
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def host(
        self, version: str, *args: str, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """``python -m host <args>`` with ``version`` installed."""
        return subprocess.run(
            [sys.executable, "-m", "host", *args],
            env=self.env(version),
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def plan(self, version: str) -> tuple[int, dict[str, Any]]:
        done = self.host(version, "migrate", "--plan", "--json")
        assert done.returncode in (0, 3), done.stderr
        return done.returncode, json.loads(done.stdout)

    def drive(
        self, version: str, requests: Sequence[Mapping[str, Any]] = ()
    ) -> tuple[int, list[Any], str]:
        """Start the app (app factory, lifespan) and run ``requests``; (status, results,
        stderr)."""
        process = self.popen(version, str(DRIVER), json.dumps(list(requests)))
        out, err = process.communicate(timeout=60)
        return process.returncode, (json.loads(out) if out.strip() else []), err

    def ok(self, version: str, requests: Sequence[Mapping[str, Any]] = ()) -> list[Any]:
        status, results, err = self.drive(version, requests)
        assert status == 0, err
        return results

    # -- reading the database directly ------------------------------------------------

    async def query(self, sql: str) -> list[tuple[Any, ...]]:
        if self.backend == "sqlite":
            path = self.database_url.removeprefix("sqlite:///")
            with closing(sqlite3.connect(path)) as conn, conn:
                return [tuple(row) for row in conn.execute(sql).fetchall()]
        import asyncpg

        conn = await asyncpg.connect(self.database_url)
        try:
            return [tuple(row) for row in await conn.fetch(sql)]
        finally:
            await conn.close()

    async def columns(self, table: str) -> list[str]:
        if self.backend == "sqlite":
            rows = await self.query(f"SELECT name FROM pragma_table_info('{table}')")
        else:
            rows = await self.query(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = "
                f"'public' AND table_name = '{table}' ORDER BY ordinal_position"
            )
        return [str(r[0]) for r in rows]

    async def tables(self) -> list[str]:
        if self.backend == "sqlite":
            rows = await self.query("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            rows = await self.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            )
        return sorted(str(r[0]) for r in rows)

    async def snapshot(self) -> Any:
        """Everything stored: SQLite's full dump; PostgreSQL's columns (with types,
        nullability, defaults) and every row of every table."""
        if self.backend == "sqlite":
            path = self.database_url.removeprefix("sqlite:///")
            with closing(sqlite3.connect(path)) as conn, conn:
                master = conn.execute("SELECT * FROM sqlite_master ORDER BY name").fetchall()
                return master, list(conn.iterdump())
        columns = await self.query(
            "SELECT table_name, column_name, ordinal_position, data_type, is_nullable, "
            "column_default FROM information_schema.columns WHERE table_schema = 'public' "
            "ORDER BY table_name, ordinal_position"
        )
        rows = {}
        for table in await self.tables():
            count = len(await self.columns(table))
            order = ", ".join(str(i) for i in range(1, count + 1))
            rows[table] = await self.query(f'SELECT * FROM "{table}" ORDER BY {order}')
        return columns, rows


@pytest.fixture
def evo(evo_installs: Mapping[str, Path], tessera_database_url: str, tmp_path: Path) -> Evo:
    return Evo(evo_installs, tessera_database_url, tmp_path)


@pytest.fixture
def tracker(evo_installs: Mapping[str, Path], tessera_database_url: str, tmp_path: Path) -> Evo:
    """Runs the host with ``tessera-test-tracker`` (``t1``, ``t2``) installed."""
    return Evo(evo_installs, tessera_database_url, tmp_path, plugin="tracker")


def create_item(**inputs: Any) -> dict[str, Any]:
    return {"action": "evo.item.create", "inputs": inputs}


def outputs(results: list[Any]) -> list[dict[str, Any]]:
    """The outputs of action results (each must have succeeded)."""
    found = []
    for status, body in results:
        assert status == 200, body
        found.append(body.get("outputs", body))
    return found


@pytest.fixture
def helpers() -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(create_item=create_item, outputs=outputs)
