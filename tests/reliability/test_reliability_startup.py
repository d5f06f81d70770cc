"""Several host processes starting at once against one fresh database all come up.

Schema preparation runs in every worker of every process. On PostgreSQL two concurrent
``CREATE TABLE IF NOT EXISTS`` of the same table can still fail (a unique violation on
``pg_type``): the storage serialises preparation with an advisory lock. On SQLite the
``BEGIN IMMEDIATE`` of the preparing transaction and the busy timeout do.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from plugin_api.testing import reset_postgres

from .conftest import AUDIT_TABLE, BACKEND, PREFIX, TICKET_TABLE, HostProcess, table_names

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

PROCESSES = 4
ROUNDS = 2


async def test_four_processes_start_at_once_on_a_fresh_database(
    tmp_path: Path, database: str, figures: dict[str, Any]
) -> None:
    figures.update(processes=PROCESSES, workers_per_process=2, rounds=ROUNDS, startup_failures=0)
    for round_ in range(ROUNDS):
        if round_:
            # Empty the database again so every round races on creating the schema.
            if BACKEND == "postgresql":
                await reset_postgres(database)
            else:
                database = f"sqlite:///{tmp_path / f'round{round_}.db'}"
        hosts = [HostProcess(tmp_path, database, workers=2) for _ in range(PROCESSES)]
        try:
            for host in hosts:  # all spawned before any is waited for
                host.spawn()
            for host in hosts:
                host.wait_ready(timeout=90)
            hashes = set()
            for host in hosts:
                answered = httpx.get(f"{host.base_url}{PREFIX}/_health", timeout=10)
                assert answered.status_code == 200
                hashes.add(answered.json()["graphHash"])
            assert len(hashes) == 1, hashes
            logs = "".join(host.log.read_text(errors="replace") for host in hosts)
            assert "Traceback" not in logs, logs
            assert all(host.alive() for host in hosts)
        finally:
            for host in hosts:
                host.stop()
        tables = await table_names(database)
        assert AUDIT_TABLE in tables and TICKET_TABLE in tables, tables
        assert len(tables) == len(set(tables))
    figures["graph_hash"] = hashes.pop()[:12]


SQLITE_STARTS = 6


@pytest.mark.skipif(BACKEND != "sqlite", reason="a new SQLite file each start")
def test_two_workers_start_on_a_new_sqlite_file_every_time(
    tmp_path: Path, figures: dict[str, Any]
) -> None:
    # The two workers of one start both switch the new file to WAL; SQLite can refuse that
    # at once with "database is locked" (no busy handler there): the switch is retried.
    failures = []
    for start in range(SQLITE_STARTS):
        host = HostProcess(tmp_path, f"sqlite:///{tmp_path / f'new{start}.db'}", workers=2)
        try:
            host.spawn()
            host.wait_ready(timeout=90)
            assert httpx.get(f"{host.base_url}{PREFIX}/_health", timeout=10).status_code == 200
            time.sleep(0.5)  # both workers are up, or one has died
            log = host.log.read_text(errors="replace")
            if "locked" in log or "Traceback" in log or not host.alive():
                failures.append(log)
        finally:
            host.stop()
    figures.update(starts=SQLITE_STARTS, workers_per_start=2, failed_starts=len(failures))
    assert failures == [], failures[0]
