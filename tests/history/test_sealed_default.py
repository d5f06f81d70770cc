"""Sealed by default (issue 39): a fresh install seals the audit log with no setting but a
short interval, keeps the key and checkpoints beside the SQLite database (none by default on
PostgreSQL), and ``tessera audit verify`` exits non-zero on a record altered with SQL behind
the service, and on records left unsealed longer than the sealing interval."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from databases import Database

from plugin_api.testing import Host, TesseraHarness

TICKET = "helpdesk.ticket"
INTERVAL = 0.2
POSTGRES = os.environ.get("TESSERA_TEST_BACKEND") == "postgresql"


def verify_cli(url: str, interval: float) -> subprocess.CompletedProcess[str]:
    """``tessera audit verify`` as an operator runs it: the database URL and the interval,
    every other setting (key, checkpoints) left to its default."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESSERA_")}
    env.update(
        TESSERA_DATABASE_URL=url,
        TESSERA_PLUGINS_ONLY="helpdesk",
        TESSERA_AUDIT_SEAL_S=str(interval),
    )
    return subprocess.run(
        [sys.executable, "-m", "host", "audit", "verify"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def work_a_ticket(host: Host) -> str:
    agent = host.client(tenant="acme", actor="ann", roles=["agent", "requester"])
    created = await agent.action(f"{TICKET}.create", inputs={"title": "Printer on fire"})
    assert created.status == 200, created.json
    ticket = str(created.outputs["id"])
    for action, inputs in (("start", {}), ("resolve", {"resolution": "fuser replaced"})):
        done = await agent.action(f"{TICKET}.{action}", subject=ticket, inputs=inputs)
        assert done.status == 200, done.json
    return ticket


async def verified(host: Host) -> dict[str, Any]:
    auditor = host.client(tenant="acme", actor="olga", roles=["auditor"])
    for _ in range(200):
        result = await auditor.request("GET", "/_audit/verify")
        assert result.status == 200, result.json
        data: dict[str, Any] = result.json["data"]
        if data["checked"] >= 3:
            return data
        await asyncio.sleep(INTERVAL / 4)
    raise AssertionError(f"never sealed: {data}")


async def test_a_fresh_install_seals_and_verify_fails_on_a_record_altered_with_sql(
    tessera: TesseraHarness, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="tessera.service"):
        # No event delivery: the resolve's notification (helpdesk.notify_requester) would add
        # a fourth record whenever the dispatcher gets to it, before or after a seal.
        host = await tessera.start(
            plugins=["helpdesk"], audit_seal_s=INTERVAL, events_dispatch=False
        )
    await work_a_ticket(host)
    assert (await verified(host))["message"] == "3 records verified up to #3"

    url = host.database_url
    async with Database(url) as db:
        victim = await db.fetch_val(
            "SELECT id FROM tessera_audit WHERE tenant_id = 'acme' ORDER BY seq LIMIT 1 OFFSET 1"
        )
        await db.execute(
            "UPDATE tessera_audit SET actor_id = 'mallory' WHERE id = :id", {"id": victim}
        )
    found = await asyncio.to_thread(verify_cli, url, INTERVAL)
    assert found.returncode == 1, (found.stdout, found.stderr)
    assert found.stdout == f"acme: DIFFERS: record {victim} (#2) changed after sealing\n"

    started = [r.getMessage() for r in caplog.records if r.getMessage().startswith("audit:")]
    if POSTGRES:  # no default place for the files of a database server
        assert started == [
            f"audit: sealing every {INTERVAL:g} s, no signed checkpoints: set TESSERA_DATA_DIR "
            "or TESSERA_AUDIT_CHECKPOINTS and TESSERA_AUDIT_KEY_FILE (docs/history.md)"
        ]
        return
    database = Path(url.removeprefix("sqlite:///"))
    key = database.with_name("tessera.db.audit-key")
    checkpoints = database.with_name("tessera.db.audit-checkpoints")
    assert len(key.read_text().strip()) == 64 and key.stat().st_mode & 0o077 == 0
    assert '"count":3' in checkpoints.read_text()
    assert len(started) == 1 and "ship them elsewhere" in started[0]
    assert f"key {key} and checkpoints {checkpoints} are beside the data" in started[0]


async def test_verify_fails_on_records_left_unsealed_longer_than_the_interval(
    tessera: TesseraHarness,
) -> None:
    host = await tessera.start(plugins=["helpdesk"], audit_seal_s=0)  # nothing seals
    await work_a_ticket(host)
    auditor = host.client(tenant="acme", actor="olga", roles=["auditor"])

    young = await auditor.request("GET", "/_audit/verify")
    # On PostgreSQL a record is read once every older transaction of the cluster has ended
    # (docs/history.md, "Order"): under a parallel suite it may not be counted yet.
    assert young.json["data"]["checked"] == 0 and "unsealed" in young.json["data"]

    await asyncio.sleep(INTERVAL)
    found = await asyncio.to_thread(verify_cli, host.database_url, INTERVAL)
    assert found.returncode == 1, (found.stdout, found.stderr)
    assert found.stdout.startswith("acme: UNSEALED: 0 records verified up to #0; ")
    assert f"(sealing interval {INTERVAL:g} s): unverified" in found.stdout
