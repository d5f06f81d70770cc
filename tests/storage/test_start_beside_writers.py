"""A worker that starts on a prepared PostgreSQL database while others write to it takes no
table lock (docs/deploy.md, "PostgreSQL"): ``CREATE INDEX IF NOT EXISTS`` takes its table's
SHARE lock before it finds the index there, and a worker restarted beside one that was
firing timers deadlocked with it on two tables, which stopped the whole server. A start
creates only what is missing."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
from databases import Database

from plugin_api.testing import DEFAULT_POSTGRES_URL, TesseraHarness

pytestmark = pytest.mark.postgres


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    base = os.environ.get("TESSERA_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    name = f"tessera_beside_{secrets.token_hex(4)}"
    async with Database(base, min_size=1, max_size=1) as admin:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield urlunsplit(urlsplit(base)._replace(path=f"/{name}"))
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def test_a_start_waits_for_no_writer(tessera: TesseraHarness, pg_url: str) -> None:
    first = await tessera.start(plugins=["helpdesk"], database_url=pg_url)
    agent = first.client(tenant="t1", actor="ann", roles=["agent"])
    assert (await agent.action("helpdesk.ticket.create", inputs={"title": "x"})).status == 200
    writer = await asyncpg.connect(pg_url)
    try:
        # What every writing transaction holds on the tables it writes, left open.
        async with writer.transaction():
            tables = [
                row[0]
                for row in await writer.fetch(
                    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                )
            ]
            for table in tables:
                await writer.execute(f'LOCK TABLE "{table}" IN ROW EXCLUSIVE MODE')
            second = await asyncio.wait_for(
                tessera.start(plugins=["helpdesk"], database_url=pg_url), timeout=15
            )
        created = await second.client(tenant="t1", actor="ann", roles=["agent"]).action(
            "helpdesk.ticket.create", inputs={"title": "y"}
        )
        assert created.status == 200, created.json
    finally:
        await writer.close()
