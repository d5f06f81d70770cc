"""SIGTERM restarts under keep-alive load: how many committed actions got no response.

``python bench/shutdown_restart.py [--cycles 3] [--clients 16] [--keyed]`` starts
``hypercorn host.asgi:app --workers 2`` on a fresh SQLite file (or ``TESSERA_DATABASE_URL``),
runs keep-alive clients that create tickets (title = a unique token), sends SIGTERM to the
server every ``--phase`` seconds and restarts it, then compares what clients were told with
the audit records. ``--keyed`` sends an ``Idempotency-Key`` and retries a request whose
answer was lost with the same key until it gets one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

IDENTITY = {"X-Tenant-ID": "bench", "X-Actor-Id": "bot", "X-Actor-Roles": "requester"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "hypercorn", "host.asgi:app", "--bind", f"127.0.0.1:{port}"]
    command += ["--workers", "2"]
    with log.open("ab") as sink:
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/_health", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.05)
    raise SystemExit(f"server did not start; see {log}")


async def client(base: str, seed: int, keyed: bool, stop: asyncio.Event, tally: dict) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:  # keep-alive
        n = 0
        while not stop.is_set():
            token = f"c{seed}-{n}"
            n += 1
            headers = {**IDENTITY, "Idempotency-Key": token} if keyed else IDENTITY
            body = {"subject": None, "inputs": {"title": token}}
            while True:
                try:
                    answer = await http.post("/actions/helpdesk.ticket.create", json=body,
                                             headers=headers)  # fmt: skip
                except httpx.HTTPError as error:
                    tally["transport_errors"] += 1
                    if not isinstance(error, httpx.ConnectError):
                        # Sent (at least in part) and not answered: the client cannot
                        # know whether the action ran.
                        tally["sent_unanswered"] += 1
                    tally["unanswered"].add(token)
                    if keyed and not stop.is_set():
                        await asyncio.sleep(0.05)
                        continue
                    break
                tally["unanswered"].discard(token)
                if answer.status_code == 200:
                    tally["acknowledged"].add(token)
                break


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--phase", type=float, default=1.5)
    parser.add_argument("--keyed", action="store_true")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tessera-shutdown-"))
    url = os.environ.get("TESSERA_DATABASE_URL", f"sqlite:///{workdir / 'bench.db'}")
    env = {**os.environ, "TESSERA_DATABASE_URL": url, "TESSERA_ACCESS_LOG": "0"}
    port = free_port()
    log = workdir / "server.log"
    process = start(port, env, log)
    stop = asyncio.Event()
    tally: dict = {
        "transport_errors": 0,
        "sent_unanswered": 0,
        "acknowledged": set(),
        "unanswered": set(),
    }
    base = f"http://127.0.0.1:{port}/api"
    tasks = [
        asyncio.create_task(client(base, seed, args.keyed, stop, tally))
        for seed in range(args.clients)
    ]
    stop_seconds = []
    for _ in range(args.cycles):
        await asyncio.sleep(args.phase)
        began = time.monotonic()
        process.send_signal(signal.SIGTERM)
        await asyncio.to_thread(process.wait)
        stop_seconds.append(round(time.monotonic() - began, 2))
        process = await asyncio.to_thread(start, port, env, log)
    await asyncio.sleep(args.phase)
    stop.set()
    await asyncio.gather(*tasks)
    process.send_signal(signal.SIGTERM)
    process.wait()

    if url.startswith("sqlite"):
        with sqlite3.connect(url.split("///", 1)[1]) as db:
            rows = db.execute("SELECT inputs FROM tessera_audit").fetchall()
        titles = [json.loads(r[0])["title"] for r in rows]
    else:  # pragma: no cover - PostgreSQL: read through the service's own driver
        from databases import Database

        async with Database(url) as db:
            rows = await db.fetch_all("SELECT inputs FROM tessera_audit")
        titles = [json.loads(r[0])["title"] for r in rows]
    committed = set(titles)
    result = {
        "keyed": args.keyed,
        "restarts": args.cycles,
        "clients": args.clients,
        "acknowledged": len(tally["acknowledged"]),
        "transport_errors": tally["transport_errors"],
        "sent_unanswered": tally["sent_unanswered"],
        "committed": len(committed),
        "committed_without_response": len(committed - tally["acknowledged"]),
        "duplicates": len(titles) - len(committed),
        "acknowledged_missing": len(tally["acknowledged"] - committed),
        "sigterm_to_exit_seconds": stop_seconds,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
