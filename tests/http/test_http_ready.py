"""Readiness: ``GET {prefix}/_ready`` answers 200 while the database answers, 503 in the error
envelope when it cannot (database really gone: SQLite file moved away, PostgreSQL database
dropped under the running host). Health stays liveness only."""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from databases import Database, DatabaseURL

from plugin_api.testing import DEFAULT_POSTGRES_URL, Host

CORS_ALLOW = "Content-Type, X-Tenant-ID, X-Actor-Id, X-Actor-Roles"


async def test_ready_while_the_database_answers(host: Host) -> None:
    result = await host.client(tenant=None).request("GET", "/_ready")
    assert result.status == 200
    assert set(result.json) == {"ok", "service", "graphHash", "database"}
    assert result.json["ok"] is True
    assert result.json["database"] in {"sqlite", "postgresql"}
    assert result.headers["access-control-allow-headers"] == CORS_ALLOW


def assert_not_ready(result: Any, reason: str) -> None:
    assert result.status == 503, result.json
    assert result.json["ok"] is False
    assert result.json["error"]["kind"] == "ServiceUnavailable"
    assert reason in result.json["error"]["message"], result.json


async def test_not_ready_when_the_sqlite_file_is_gone(host: Host) -> None:
    if not host.database_url.startswith("sqlite"):
        pytest.skip("SQLite session only")
    path = Path(DatabaseURL(host.database_url).database)
    client = host.client(tenant=None)
    moved = path.with_name("moved.db")
    path.rename(moved)
    try:
        assert_not_ready(await client.request("GET", "/_ready"), "is missing")
        health = await client.health()
        assert health.status == 200  # liveness is not readiness
    finally:
        moved.rename(path)
    assert (await client.request("GET", "/_ready")).status == 200


@pytest.mark.postgres
async def test_not_ready_when_the_postgresql_database_is_dropped(tessera: Any) -> None:
    base = os.environ.get("TESSERA_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    name = f"tessera_ready_{secrets.token_hex(4)}"
    url = urlunsplit(urlsplit(base)._replace(path=f"/{name}"))
    async with Database(base, min_size=1, max_size=1) as admin:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            host = await tessera.start(
                plugins=["helpdesk"],
                database_url=url,
                ready_timeout_s=3.0,
                pg_pool_min=1,
                timers_poll=0.01,  # the timer loop on, looking often: it must not slow the stop
            )
            client = host.client(tenant=None)
            assert (await client.request("GET", "/_ready")).status == 200
            await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            assert_not_ready(await client.request("GET", "/_ready"), "cannot be reached")
            assert (await client.health()).status == 200
            # A pooled connection the server terminated while a timer pass held it was seen
            # (Python 3.10) to keep asyncpg's pool close waiting: the stop is bounded.
            await asyncio.wait_for(host.stop(), 5.0)
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
