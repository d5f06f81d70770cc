"""Tamper evidence, export and retention of the audit log, on the backend of the run
(docs/history.md): the host's background sealer chains and checkpoints the records; an
UPDATE, DELETE or INSERT made with SQL behind the service's back is found by verify (the
operator route and ``tessera audit verify``), naming the record; prune keeps verification
passing; the export streams every record and resumes after a position."""

from __future__ import annotations

import asyncio
import csv
import http.server
import io
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest
from databases import Database

from plugin_api.testing import Client, Host, Result, TesseraHarness

TICKET = "helpdesk.ticket"


def auditor(host: Host, tenant: str = "t1") -> Client:
    return host.client(tenant=tenant, actor="olga", roles=["auditor"])


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    key = tmp_path / "audit.key"
    key.write_text("a signing key of the operator\n")
    return {"audit_checkpoints": str(tmp_path / "checkpoints.jsonl"), "audit_key_file": str(key)}


@pytest.fixture
async def host(tessera: TesseraHarness, files: dict[str, str]) -> Host:
    return await tessera.start(
        plugins=["helpdesk"],
        audit_seal_s=0.05,
        audit_checkpoints=files["audit_checkpoints"],
        audit_key_file=files["audit_key_file"],
    )


async def verify(host: Host, tenant: str = "t1") -> dict[str, Any]:
    result = await auditor(host, tenant).request("GET", "/_audit/verify")
    assert result.status == 200, result.json
    data: dict[str, Any] = result.json["data"]
    return data


async def write_tickets(host: Host, count: int, tenant: str = "t1") -> list[str]:
    client = host.client(tenant=tenant, actor="ann", roles=["agent"])
    ids = []
    for i in range(count):
        created = await client.action(f"{TICKET}.create", inputs={"title": f"ticket {i}"})
        assert created.status == 200, created.json
        ids.append(created.outputs["id"])
        edited = await client.action(f"{TICKET}.edit", subject=ids[-1], inputs={"priority": "high"})
        assert edited.status == 200, edited.json
    return ids


async def sealed(host: Host, count: int, tenant: str = "t1") -> dict[str, Any]:
    """Wait until the sealer has sealed and checkpointed ``count`` records of the tenant."""
    for _ in range(400):
        found = await verify(host, tenant)
        if found["ok"] and found["checked"] >= count and found["checkpoints"]:
            return found
        await asyncio.sleep(0.025)
    raise AssertionError(f"not sealed: {found}")


async def audit_ids(url: str, tenant: str = "t1") -> list[str]:
    async with Database(url) as db:
        rows = await db.fetch_all(
            "SELECT id FROM tessera_audit WHERE tenant_id = :t ORDER BY xact, seq", {"t": tenant}
        )
    return [str(row[0]) for row in rows]


async def sql(url: str, statement: str, values: dict[str, Any]) -> None:
    async with Database(url) as db:
        await db.execute(statement, values)


async def test_the_sealer_chains_every_tenant_and_writes_signed_checkpoints(
    host: Host, files: dict[str, str]
) -> None:
    await write_tickets(host, 3)
    await write_tickets(host, 2, tenant="t2")

    assert (await sealed(host, 6))["message"] == "6 records verified up to #6"
    assert (await sealed(host, 4, "t2"))["checked"] == 4
    lines = [json.loads(line) for line in Path(files["audit_checkpoints"]).read_text().splitlines()]
    assert {line["tenant"] for line in lines} == {"t1", "t2"}
    assert {"tenant", "count", "head", "at", "signature"} <= set(lines[0])
    assert max(line["count"] for line in lines if line["tenant"] == "t1") == 6


@pytest.mark.parametrize("tamper", ["update", "delete", "insert"])
async def test_a_change_behind_the_services_back_is_found_naming_the_record(
    host: Host, tamper: str
) -> None:
    await write_tickets(host, 4)
    await sealed(host, 8)
    ids = await audit_ids(host.database_url)
    victim = ids[3]

    if tamper == "update":
        await sql(
            host.database_url,
            "UPDATE tessera_audit SET actor_id = 'mallory' WHERE id = :id",
            {"id": victim},
        )
        expected = (victim, 4, "changed after sealing")
    elif tamper == "delete":
        await sql(host.database_url, "DELETE FROM tessera_audit WHERE id = :id", {"id": victim})
        expected = (victim, 4, "was removed")
    else:
        victim = "01J0000000000000000000FAKE"
        await sql(
            host.database_url,
            "INSERT INTO tessera_audit (seq, xact, id, tenant_id, actor_id, roles, action, "
            "entity, subject_id, inputs, outputs, graph_hash, created_at) SELECT 0, 0, :id, "
            "tenant_id, 'mallory', roles, action, entity, subject_id, inputs, outputs, "
            "graph_hash, created_at FROM tessera_audit WHERE id = :copied",
            {"id": victim, "copied": ids[0]},
        )
        expected = (victim, 1, "was not sealed there")

    found = await verify(host)

    assert found["ok"] is False
    assert (found["record"], found["n"]) == expected[:2]
    assert expected[2] in found["message"]


def cli(url: str, files: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "TESSERA_DATABASE_URL": url,
        "TESSERA_PLUGINS_ONLY": "helpdesk",
        "TESSERA_AUDIT_CHECKPOINTS": files["audit_checkpoints"],
        "TESSERA_AUDIT_KEY_FILE": files["audit_key_file"],
    }
    return subprocess.run(
        [sys.executable, "-m", "host", "audit", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_the_cli_verifies_names_the_record_and_prunes_keeping_the_chain(
    host: Host, files: dict[str, str]
) -> None:
    await write_tickets(host, 3)
    await sealed(host, 6)
    url = host.database_url

    ok = await asyncio.to_thread(cli, url, files, "verify", "--tenant", "t1")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == "t1: ok: 6 records verified up to #6\n"

    pruned = await asyncio.to_thread(cli, url, files, "prune", "--older-than-days", "0")
    assert pruned.returncode == 0, pruned.stderr
    assert "t1: 5 records before #6 removed" in pruned.stderr
    assert len(await audit_ids(url)) == 1  # the anchor's record
    assert (await verify(host))["ok"] is True

    await write_tickets(host, 2)
    found = await sealed(host, 4)
    assert found["message"] == "4 records verified up to #10"
    again = await asyncio.to_thread(cli, url, files, "prune", "--older-than-days", "0")
    assert "t1: 4 records before #10 removed" in again.stderr
    after = await asyncio.to_thread(cli, url, files, "verify", "--json")
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["ok"] is True

    await write_tickets(host, 1)
    await sealed(host, 2)
    victim = (await audit_ids(url))[1]
    await sql(url, "UPDATE tessera_audit SET inputs = '{}' WHERE id = :id", {"id": victim})
    changed = await asyncio.to_thread(cli, url, files, "verify")
    assert changed.returncode == 1
    assert changed.stdout == f"t1: DIFFERS: record {victim} (#11) changed after sealing\n"


async def test_the_cli_names_the_columns_an_older_audit_log_lacks(
    host: Host, files: dict[str, str]
) -> None:
    """A database last written by an older version (no ``via`` column) is refused in one line
    that says what to do, not with the database's own error; the CLI alters nothing."""
    await write_tickets(host, 1)
    await host.stop()
    url = host.database_url
    await sql(url, "ALTER TABLE tessera_audit DROP COLUMN via", {})
    refused = await asyncio.to_thread(cli, url, files, "verify")
    assert refused.returncode != 0
    assert refused.stdout == ""
    assert refused.stderr == (
        "error: the audit log of this database predates this version of Tessera (no column "
        "via): start the service once with this version, which adds them, then run this "
        "command again\n"
    )


async def test_a_tampered_checkpoint_file_is_refused(host: Host, files: dict[str, str]) -> None:
    await write_tickets(host, 1)
    await sealed(host, 2)
    path = Path(files["audit_checkpoints"])
    line = json.loads(path.read_text().splitlines()[0])
    path.write_text(json.dumps({**line, "count": line["count"] + 1}) + "\n")

    result = await auditor(host).request("GET", "/_audit/verify")

    assert result.status == 500
    assert "signature does not match" in result.json["error"]["message"]


async def export(host: Host, **query: str) -> Result:
    return await auditor(host).request("GET", "/_audit/export", query=query)


async def test_export_streams_every_record_and_resumes_after_a_position(
    host: Host, caplog: pytest.LogCaptureFixture
) -> None:
    await write_tickets(host, 3)
    ids = await audit_ids(host.database_url)
    caplog.set_level(logging.INFO, logger="tessera.audit")

    # The export walks below the PostgreSQL horizon: other clients of the cluster may hold
    # it back for a moment.
    for _ in range(400):
        whole = await export(host)
        lines = [json.loads(line) for line in whole.body.decode().splitlines()]
        if len(lines) == len(ids):
            break
        await asyncio.sleep(0.025)
    rest = await export(host, after=lines[1]["position"])
    table = list(csv.DictReader(io.StringIO((await export(host, format="csv")).body.decode())))

    assert whole.status == 200
    assert {k.lower(): v for k, v in whole.headers.items()}[
        "content-type"
    ] == "application/x-ndjson"
    assert [line["id"] for line in lines] == ids
    assert lines[0]["action"] == f"{TICKET}.create" and lines[0]["actor"] == "ann"
    assert lines[1]["changes"]["priority"] == ["normal", "high"]
    assert [json.loads(line)["id"] for line in rest.body.decode().splitlines()] == ids[2:]
    assert [row["id"] for row in table] == ids
    assert json.loads(table[1]["changes"])["priority"] == ["normal", "high"]
    assert any("audit export by olga in tenant t1" in r.getMessage() for r in caplog.records)
    assert (await export(host, since="2999-01-01T00:00:00Z")).body == b""


@pytest.mark.parametrize("query", [{"format": "xml"}, {"after": "x"}, {"since": "soon"}])
async def test_bad_export_parameters_are_400(host: Host, query: dict[str, str]) -> None:
    result = await export(host, **query)
    assert result.status == 400
    assert result.json["error"]["kind"] == "BadRequest"


async def test_the_audit_routes_need_an_audit_role(host: Host) -> None:
    for path in ("/_audit/verify", "/_audit/export"):
        result = await host.client(actor="ann", roles=["agent"]).request("GET", path)
        assert result.status == 403
        assert result.json["error"]["kind"] == "PolicyDenied"


class Collector(http.server.BaseHTTPRequestHandler):
    """Keeps every body POSTed to it (the checkpoints)."""

    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        type(self).bodies.append(self.rfile.read(length))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


async def test_checkpoints_posted_to_a_webhook_verify_the_chain(
    tessera: TesseraHarness, files: dict[str, str], tmp_path: Path
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    Collector.bodies = []
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        host = await tessera.start(
            plugins=["helpdesk"],
            audit_seal_s=0.05,
            audit_checkpoint_url=f"http://127.0.0.1:{server.server_address[1]}/checkpoints",
            audit_key_file=files["audit_key_file"],
        )
        await write_tickets(host, 2)
        for _ in range(400):
            if any(json.loads(body)["count"] == 4 for body in Collector.bodies):
                break
            await asyncio.sleep(0.025)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    received = tmp_path / "received.jsonl"
    received.write_bytes(b"".join(Collector.bodies))
    assert json.loads(Collector.bodies[-1])["count"] == 4

    ok = await asyncio.to_thread(
        cli, host.database_url, files, "verify", "--checkpoints", str(received)
    )
    assert (ok.returncode, ok.stdout) == (0, "t1: ok: 4 records verified up to #4\n")
    victim = (await audit_ids(host.database_url))[2]
    await sql(host.database_url, "DELETE FROM tessera_audit WHERE id = :id", {"id": victim})
    await sql(
        host.database_url, "DELETE FROM tessera_audit_seals WHERE record_id = :id", {"id": victim}
    )
    found = await asyncio.to_thread(
        cli, host.database_url, files, "verify", "--checkpoints", str(received)
    )
    assert found.returncode == 1
    assert found.stdout == "t1: DIFFERS: records #3 to #3 were removed with their seals\n"
