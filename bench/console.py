"""The console's list page on a large tenant: page weight and server time (a real server).

    python bench/console.py [--backend sqlite|postgresql|both] [--rows 100000] [--samples 51]

For each backend: a fresh database gets one tenant of ``--rows`` tickets by bulk INSERT (the
rows of bench/lists.py, never through the HTTP API); a real Hypercorn process of the host
with the console on serves ``GET /-/console/p/helpdesk.ticket.queue?pageSize=50`` (identity
from the gateway's headers) ``--samples`` times after three warm-up requests, then the same
page filtered (``state = open``, sorted by title) and the 50th page of the default order (by
its cursor link). Server time is the host's own access-log duration (ASGI call to the last
body byte); page weight is the HTML's bytes (the stylesheet is one more request, cached).
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dbsetup
import servers
from lists import PG_DATABASE, percentile, seed

PATH = "/-/console/p/helpdesk.ticket.queue"
CSS = "/-/console/static/console.css"
_LOG_LINE = re.compile(r"GET /-/console/p/\S+ tenant=(\S+) .*status=(\d+).* ([0-9.]+)ms")
_NEXT = re.compile(r'href="([^"]+)" rel="next"')
SCENARIOS = {
    "first page, default order": {"pageSize": "50"},
    "state = open, by title": {"pageSize": "50", "f.state.op": "eq", "f.state.v": "open",
                               "sort": "title"},
}  # fmt: skip


class Client:
    def __init__(self, server: servers.Server) -> None:
        self.server = server
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        self.offset = server.log.stat().st_size

    def get(self, path: str) -> bytes:
        self.conn.request("GET", path, headers={"X-Tenant-ID": "big"})
        response = self.conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"{response.status} for {path}: {body[:300]!r}")
        return body

    def server_times(self) -> list[float]:
        with self.server.log.open("rb") as log:
            log.seek(self.offset)
            text = log.read().decode(errors="replace")
        self.offset += len(text.encode())
        return [float(m.group(3)) for m in _LOG_LINE.finditer(text)]


def measure(client: Client, path: str, samples: int) -> dict[str, Any]:
    for _ in range(3):
        body = client.get(path)
    time.sleep(0.1)  # the access log line is written after the last byte
    client.server_times()
    for _ in range(samples):
        body = client.get(path)
    time.sleep(0.1)
    times = client.server_times()
    assert len(times) == samples, (len(times), samples)
    return {
        "html_bytes": len(body),
        "rows": body.count(b'<td><a href="/-/console/p/helpdesk.ticket.queue/'),
        "server_p50_ms": round(statistics.median(times), 1),
        "server_p95_ms": round(percentile(times, 0.95), 1),
    }


def run_backend(backend: str, rows: int, samples: int, workdir: Path) -> dict[str, Any]:
    if backend == "sqlite":
        url = dbsetup.prepare_sqlite(workdir / "console.db")
    else:
        url = dbsetup.prepare_postgresql(PG_DATABASE)
    seed(url, [("big", rows)])
    env = {"TESSERA_ACCESS_LOG": "1", "TESSERA_PLUGINS_ONLY": "helpdesk", "TESSERA_CONSOLE": "on"}
    server = servers.launch("host", workers=1, database_url=url, workdir=workdir, env=env)
    server.wait_ready(timeout=1800)
    results: dict[str, Any] = {"backend": backend, "rows": rows}
    try:
        client = Client(server)
        results["css_bytes"] = len(client.get(CSS))
        for name, query in SCENARIOS.items():
            results[name] = measure(client, f"{PATH}?{urlencode(query)}", samples)
        path = f"{PATH}?pageSize=50"
        for _ in range(49):
            found = _NEXT.search(client.get(path).decode())
            assert found, "fewer than 50 pages"
            path = found.group(1).replace("&amp;", "&")
        results["page 50, default order"] = measure(client, path, samples)
    finally:
        server.stop()
        if backend == "postgresql":
            dbsetup.drop_postgresql(PG_DATABASE)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=51)
    args = parser.parse_args()
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    with tempfile.TemporaryDirectory() as tmp:
        for backend in backends:
            print(json.dumps(run_backend(backend, args.rows, args.samples, Path(tmp))), flush=True)


if __name__ == "__main__":
    main()
