"""A worker that starts on a prepared PostgreSQL database while others write to it takes no
table lock (docs/deploy.md, "PostgreSQL"): ``CREATE INDEX IF NOT EXISTS`` takes its table's
SHARE lock before it finds the index there, and a worker restarted beside one that was
firing timers deadlocked with it on two tables, which stopped the whole server. A start
creates only what is missing."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from plugin_api.testing import TesseraHarness

pytestmark = pytest.mark.postgres


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
