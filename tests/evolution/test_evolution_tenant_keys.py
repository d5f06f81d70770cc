"""Tenant-led keys on PostgreSQL: a database holding the old system-table keys (``seq`` alone,
``tessera_audit.id`` unique alone, deliveries unique without the tenant) is re-keyed by the
startup evolution with its rows kept, and ``tessera check --distributed`` is green on the
sample plugins' schema and names every table that breaks a rule."""

from __future__ import annotations

import asyncio

import pytest
from databases import Database

from host import cli
from host.config import SETTINGS
from plugin_api.testing import TesseraHarness

pytestmark = pytest.mark.postgres

OLD_KEYS = (
    "ALTER TABLE tessera_audit DROP CONSTRAINT tessera_audit_pkey, "
    "DROP CONSTRAINT uq_tessera_audit_id, ADD PRIMARY KEY (seq), "
    "ADD CONSTRAINT tessera_audit_id_key UNIQUE (id)",
    "ALTER TABLE tessera_deliveries DROP CONSTRAINT tessera_deliveries_pkey, "
    "DROP CONSTRAINT uq_tessera_deliveries_event, ADD PRIMARY KEY (seq), "
    "ADD CONSTRAINT uq_tessera_deliveries_event UNIQUE (event_id, subscriber)",
)
"""The keys main created before this change (PostgreSQL's default names included)."""

KEYS = """
SELECT t.relname, i.relname, pg_get_indexdef(x.indexrelid)
FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
WHERE x.indisunique AND t.relname IN ('tessera_audit', 'tessera_deliveries')
ORDER BY 1, 2
"""


async def sql(url: str, *statements: str) -> list[tuple[object, ...]]:
    async with Database(url, min_size=1, max_size=1) as db:
        rows: list[tuple[object, ...]] = []
        for statement in statements:
            rows = [tuple(row._mapping.values()) for row in await db.fetch_all(statement)]
        return rows


async def seed(tessera: TesseraHarness, url: str) -> None:
    """Tickets in two tenants, one resolved (an event for helpdesk.notify_requester)."""
    host = await tessera.start(plugins=["helpdesk"], database_url=url, events_dispatch=False)
    for tenant in ("t1", "t2"):
        agent = host.client(tenant=tenant, actor="ann", roles=["agent", "requester"])
        created = await agent.action("helpdesk.ticket.create", inputs={"title": tenant})
        ticket = created.outputs["id"]
        for step in ("start", "resolve"):
            assert (await agent.action(f"helpdesk.ticket.{step}", subject=ticket)).status == 200


async def check(monkeypatch: pytest.MonkeyPatch, url: str, *args: str) -> int:
    """``tessera check`` (its own event loop: in a thread)."""
    for setting in SETTINGS:
        monkeypatch.delenv(setting.env_var, raising=False)
    monkeypatch.setenv("TESSERA_DATABASE_URL", url)
    monkeypatch.setenv("TESSERA_PLUGINS_ONLY", "helpdesk,billing")
    return await asyncio.to_thread(cli.main, ["check", *args])


async def test_old_keys_are_led_by_the_tenant_after_a_start(
    pg_url: str,
    tessera: TesseraHarness,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await seed(tessera, pg_url)
    new_keys = await sql(pg_url, KEYS)
    assert all("tenant_id" in str(definition) for _, _, definition in new_keys), new_keys
    await sql(pg_url, *OLD_KEYS)
    before = await sql(pg_url, "SELECT seq, id, tenant_id FROM tessera_audit ORDER BY seq")
    deliveries = await sql(pg_url, "SELECT seq, event_id, tenant_id FROM tessera_deliveries")
    assert len(before) == 6 and len(deliveries) == 2
    # The old keys break the rules: the lint says which.
    assert await check(monkeypatch, pg_url, "--distributed") == 1
    err = capsys.readouterr().err
    assert "keys-tenant-led" in err  # the plan a start would apply
    assert "table tessera_audit: primary key (seq) does not include tenant_id" in err
    assert "tessera_audit_id_key (id) does not include tenant_id" in err
    assert "uq_tessera_deliveries_event (event_id, subscriber) does not include" in err
    # A start re-keys them (additive), rows untouched; the keys are those of a new database.
    await seed(tessera, pg_url)
    assert await sql(pg_url, KEYS) == new_keys
    after = await sql(pg_url, "SELECT seq, id, tenant_id FROM tessera_audit ORDER BY seq")
    assert after[: len(before)] == before and len(after) == 12
    assert await check(monkeypatch, pg_url, "--distributed") == 0
    history = await sql(pg_url, "SELECT changes FROM tessera_graph ORDER BY seq")
    assert "keys-tenant-led" in str(history[-1][0])


async def test_the_lint_is_green_on_the_samples_and_names_each_broken_table(
    pg_url: str,
    tessera: TesseraHarness,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await tessera.start(plugins=["helpdesk", "billing"], database_url=pg_url)
    assert await check(monkeypatch, pg_url, "--distributed") == 0
    capsys.readouterr()
    await sql(
        pg_url,
        "CREATE TABLE stray (id TEXT PRIMARY KEY)",
        "CREATE TABLE keyed_alone (tenant_id TEXT NOT NULL, id TEXT PRIMARY KEY)",
        "CREATE TABLE unique_alone (tenant_id TEXT, code TEXT, PRIMARY KEY (tenant_id, code))",
        "CREATE UNIQUE INDEX ux_unique_alone_code ON unique_alone (code)",
        "CREATE TABLE child (tenant_id TEXT, id TEXT, parent TEXT, PRIMARY KEY (tenant_id, id),"
        " FOREIGN KEY (parent) REFERENCES keyed_alone (id))",
    )
    assert await check(monkeypatch, pg_url, "--distributed") == 1
    lines = sorted(
        line for line in capsys.readouterr().err.splitlines() if line.startswith("distributed:")
    )
    assert lines == [
        "distributed: table child: foreign key child_parent_fkey to keyed_alone does not "
        "carry tenant_id on both sides",
        "distributed: table keyed_alone: primary key (id) does not include tenant_id",
        "distributed: table stray: no tenant_id column, and not a reference table of the "
        "host (tessera_graph, tessera_secrets)",
        "distributed: table unique_alone: unique key ux_unique_alone_code (code) does not "
        "include tenant_id",
    ]
    # Without --distributed, check stays what it was.
    assert await check(monkeypatch, pg_url) == 0


def test_the_statement_lint_passes_the_host_and_catches_cross_tenant_ones() -> None:
    from host.storage.deliveries import DeliveryStore
    from host.storage.dialects import POSTGRESQL
    from host.storage.tenantkeys import statement_problems

    class _Storage:
        dialect = POSTGRESQL

    store = DeliveryStore(_Storage(), "tessera_deliveries", "tessera_audit")  # type: ignore[arg-type]
    statements = store.statements()
    assert "FOR UPDATE" in statements["take: lock due deliveries"]
    assert statement_problems(statements) == []
    bad = {
        "lease": "SELECT d.seq FROM t d WHERE d.state = 'x' ORDER BY d.seq FOR UPDATE OF d",
        "join": "SELECT 1 FROM t d JOIN audit a ON a.id = d.event_id WHERE d.tenant_id = $1",
        "left join": "SELECT 1 FROM t d LEFT JOIN audit a ON a.id = d.event_id ORDER BY d.seq",
    }
    assert statement_problems(bad) == [
        "statement 'lease': locks rows of more than one tenant",
        "statement 'join': joins a without its tenant_id",
        "statement 'left join': joins a without its tenant_id",
    ]
