"""Against real Hypercorn processes: abandoned requests (cancellation storm) and concurrent
writers in one and two worker processes on one SQLite file (or PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from ..server.conftest import Server, run_server
from ._support import AUDIT, TICKET, audit_rows, snapshot

pytestmark = pytest.mark.slow

AGENT = {"X-Tenant-ID": "t1", "X-Actor-Id": "alice", "X-Actor-Roles": "agent"}


def worker_pids(server: Server) -> list[int]:
    """The Hypercorn worker processes: children of the server running ``spawn_main`` (the
    multiprocessing resource tracker is a child too, and is not a worker)."""
    parent = server.process.pid
    children: list[int] = []
    for task in Path(f"/proc/{parent}/task").iterdir():
        children += [int(pid) for pid in (task / "children").read_text().split()]
    workers = []
    for pid in children:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except FileNotFoundError:
            continue
        if b"spawn_main" in cmdline:
            workers.append(pid)
    return sorted(workers)


def thread_count(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


def abandoned_request(path: str, payload: dict[str, object], *, partial: bool) -> bytes:
    body = json.dumps(payload).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nX-Tenant-ID: t1\r\nX-Actor-Id: storm\r\n"
        "X-Actor-Roles: agent\r\n\r\n"
    ).encode()
    # A partial request stops in the middle of the body: the app is cancelled while reading.
    return head + (body[: len(body) // 2] if partial else body)


async def wait_until_quiet(url: str, timeout: float = 20) -> None:
    """Wait until the audit table stops growing (the abandoned units of work are done)."""
    deadline = time.monotonic() + timeout
    last = -1
    while time.monotonic() < deadline:
        count = len((await snapshot(url, AUDIT))[AUDIT])
        if count == last:
            return
        last = count
        await asyncio.sleep(0.5)
    raise AssertionError("the audit table kept growing")


async def send_and_leave(port: int, request: bytes) -> None:
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    writer.close()  # gone before any response
    await writer.wait_closed()


async def test_abandoned_requests_leave_no_transaction_thread_or_slow_shutdown(
    tmp_path: Path, tessera_database_url: str
) -> None:
    url = tessera_database_url
    with run_server(tmp_path, database=url) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
            targets = []
            for n in range(5):
                created = await http.post(
                    "/api/actions/helpdesk.ticket.create",
                    json={"subject": None, "inputs": {"title": f"target {n}"}},
                    headers=AGENT,
                )
                assert created.status_code == 200, created.text
                targets.append(created.json()["outputs"]["id"])
            assert (
                await http.get("/api/projections/helpdesk.ticket.queue", headers=AGENT)
            ).status_code == 200
            (worker,) = worker_pids(server)
            baseline = thread_count(worker)

            requests = []
            for i in range(300):
                if i % 3 == 2:
                    target = targets[i % 5]
                    path = "/api/actions/helpdesk.ticket.edit"
                    payload: dict[str, object] = {
                        "subject": {
                            "tenantId": "t1",
                            "entityFqn": TICKET,
                            "identityHandle": target,
                        },
                        "inputs": {"estimate_hours": i},
                    }
                else:
                    path = "/api/actions/helpdesk.ticket.create"
                    payload = {"subject": None, "inputs": {"title": f"storm {i}"}}
                requests.append(abandoned_request(path, payload, partial=i % 5 == 0))
            await asyncio.gather(*(send_and_leave(port, request) for request in requests))

            # The server still serves: a write succeeds while the storm's units of work drain.
            started = time.monotonic()
            during = await http.post(
                "/api/actions/helpdesk.ticket.create",
                json={"subject": None, "inputs": {"title": "during the drain"}},
                headers=AGENT,
                timeout=15,
            )
            drain_write_seconds = time.monotonic() - started
            assert during.status_code == 200, during.text
            # Once the abandoned units of work have finished, a write is immediate: nothing
            # was left open holding the write lock (or a pooled connection).
            await wait_until_quiet(url)
            started = time.monotonic()
            after = await http.post(
                "/api/actions/helpdesk.ticket.create",
                json={"subject": None, "inputs": {"title": "after the storm"}},
                headers=AGENT,
                timeout=15,
            )
            write_seconds = time.monotonic() - started
            assert after.status_code == 200, after.text
            assert write_seconds < 1

            # No leaked connection threads in the worker.
            deadline = time.monotonic() + 10
            while thread_count(worker) != baseline and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            threads_after = thread_count(worker)
            assert threads_after == baseline

        stop_seconds = server.stop()
        assert stop_seconds < 5
    log = server.log.read_text()
    assert "database is locked" not in log
    assert "never retrieved" not in log

    # Audit rows equal the committed changes.
    rows = (await snapshot(url, TICKET))[TICKET]
    creates = await audit_rows(url, action=TICKET + ".create")
    assert sorted(r["subject_id"] for r in creates) == sorted(row["id"] for row in rows)
    edits = await audit_rows(url, action=TICKET + ".edit")
    versions = [json.loads(r["outputs"])["_version"] for r in edits]
    assert len(set(versions)) == len(versions)
    by_id = {row["id"]: row for row in rows}
    for target in targets:
        committed = [json.loads(r["outputs"]) for r in edits if r["subject_id"] == target]
        if committed:
            assert by_id[target]["_version"] == committed[-1]["_version"]
            assert by_id[target]["estimate_hours"] == committed[-1]["estimate_hours"]
    storm_creates = sum(1 for row in rows if row["title"].startswith("storm "))
    print(
        f"storm: 300 abandoned requests; committed {storm_creates} creates and {len(edits)} edits; "
        f"threads {baseline} -> {threads_after}; write during drain {drain_write_seconds:.3f}s, "
        f"after {write_seconds:.3f}s; "
        f"SIGTERM {stop_seconds:.2f}s"
    )


@pytest.mark.parametrize("workers", [1, 2])
async def test_concurrent_writers_in_worker_processes(
    tmp_path: Path, tessera_database_url: str, workers: int
) -> None:
    url = tessera_database_url
    with run_server(tmp_path, database=url, workers=workers) as server:
        assert len(worker_pids(server)) == workers
        limits = httpx.Limits(max_connections=50, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=server.base_url, timeout=60, limits=limits) as http:
            started = time.monotonic()
            creates = await asyncio.gather(
                *(
                    http.post(
                        "/api/actions/helpdesk.ticket.create",
                        json={"subject": None, "inputs": {"title": f"row {i}"}},
                        headers=AGENT,
                    )
                    for i in range(50)
                )
            )
            assert Counter(r.status_code for r in creates) == {200: 50}, [r.text for r in creates]
            ids = [r.json()["outputs"]["id"] for r in creates]
            starts = await asyncio.gather(
                *(
                    http.post(
                        "/api/actions/helpdesk.ticket.start",
                        json={
                            "subject": {"tenantId": "t1", "entityFqn": TICKET, "identityHandle": i}
                        },
                        headers=AGENT,
                    )
                    for i in ids
                )
            )
            elapsed = time.monotonic() - started
            assert Counter(r.status_code for r in starts) == {200: 50}, [r.text for r in starts]
            print(f"{workers} worker(s): 50 creates + 50 transitions in {elapsed:.2f}s")
            for response in (*creates, *starts):
                assert "locked" not in response.text
        assert server.stop() < 5
    assert "database is locked" not in server.log.read_text()
    assert len(await audit_rows(url, action=TICKET + ".create")) == 50
    assert len(await audit_rows(url, action=TICKET + ".start")) == 50
    assert len((await snapshot(url, AUDIT))[AUDIT]) == 100
    rows = (await snapshot(url, TICKET))[TICKET]
    assert sorted(row["id"] for row in rows) == sorted(ids)
    assert {row["state"] for row in rows} == {"in_progress"}
