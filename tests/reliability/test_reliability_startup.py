"""Several host processes starting at once against one fresh database all come up.

Schema preparation runs in every worker of every process. On PostgreSQL two concurrent
``CREATE TABLE IF NOT EXISTS`` of the same table can still fail (a unique violation on
``pg_type``): the storage serialises preparation with an advisory lock. On SQLite the
``BEGIN IMMEDIATE`` of the preparing transaction and the busy timeout do.
"""

from __future__ import annotations

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
