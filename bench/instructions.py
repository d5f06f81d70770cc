"""Instructions per request, counted by valgrind: a measure the machine's other load cannot move.

    python bench/instructions.py [--scenarios create transition update] [--requests 150]
                                 [--warmup 20] [--ceiling] [--clients 1]

Starts the host (Hypercorn, one process, ``--workers 0``) under ``valgrind --tool=callgrind``
with instrumentation off, sends ``--warmup`` requests of the scenario, turns instrumentation
on (``callgrind_control -i on``), sends ``--requests`` more, dumps the counts and divides the
instructions executed by every thread of the process (event loop, SQLite's threads) by the
requests. ``--ceiling`` counts the Quart ceiling's GET the same way, so that the ratio of the
two is the instruction form of "host / ceiling".

By default the requests go one at a time on one keep-alive connection; ``--clients 32`` sends
them over 32 connections at once, the load of ``bench/run.py``. The default figure is a lone
client's request, without what 32 concurrent clients add or save (the event loop's batching, group
commit), and without the host's background loops (timer poll, event delivery, audit sealing:
turned off in the counted process, see ``QUIET``). Three runs of one commit agree within
0.02 %: on a noisy machine it tells a 0.1 % cut from no cut, which req/s and CPU seconds do
not (docs/benchmarks.md, "Instructions per request"). The same command on two commits
compares them; valgrind makes each request about 50 times slower, so a scenario takes a
minute or two.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import itertools
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

import dbsetup
import servers
from run import EST_MAX_RPS, build_requests

QUIET = {
    "PYTHONHASHSEED": "0",  # the same dict and set layouts on every run
    # The host's background loops (timer poll, event dispatcher, audit sealer) would run in
    # the counted process a number of times that depends on the wall time: off, so that the
    # count is the requests' alone (they still arm timers, write deliveries and audit rows).
    "TESSERA_TIMERS_POLL": "off",
    "TESSERA_EVENTS_DISPATCH": "false",
    "TESSERA_AUDIT_SEAL_S": "0",
}

TOTALS = re.compile(rb"^(?:summary|totals):\s+(\d+)", re.MULTILINE)


def _send(conn: http.client.HTTPConnection, spec: dict[str, Any]) -> int:
    body = spec.get("body")
    headers = dict(spec.get("headers", {}))
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request(spec["method"], spec["path"], body=body, headers=headers)
    response = conn.getresponse()
    response.read()
    return response.status


def count(
    target: str,
    requests: list[dict[str, Any]],
    *,
    once: bool,
    warmup: int,
    measured: int,
    database_url: str | None,
    workdir: Path,
    clients: int = 1,
) -> float:
    """Instructions per request of ``target`` (a key of ``servers.TARGETS``) over
    ``measured`` requests taken from ``requests`` (in turn; each one once if ``once``), sent
    by ``clients`` connections at once (each one request at a time)."""
    if once and len(requests) < warmup + measured:
        raise ValueError(f"{len(requests)} requests for {warmup} + {measured} sent once")
    out = workdir / f"callgrind-{target}-{uuid.uuid4().hex[:6]}.out"
    callgrind = (
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}",
    )
    server = servers.launch(
        target,
        workers=0,  # Hypercorn serves in the process valgrind runs
        database_url=database_url,
        workdir=workdir,
        env=QUIET,
        wrapper=callgrind,
    )
    pid = str(server.process.pid)
    try:
        server.wait_ready(timeout=300)
        taken = iter(requests) if once else None
        lock = threading.Lock()
        sent = itertools.count()

        def next_spec() -> dict[str, Any]:
            with lock:
                n = next(sent)
                return next(taken) if taken is not None else requests[n % len(requests)]

        conns = [
            http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
            for _ in range(clients)
        ]

        def send_all(total: int, what: str) -> None:
            """``total`` requests over the ``clients`` keep-alive connections at once."""

            def client(conn: http.client.HTTPConnection, share: int) -> None:
                for _ in range(share):
                    status = _send(conn, next_spec())
                    if status >= 300:
                        raise RuntimeError(f"{what} request answered {status}")

            shares = [total // clients + (i < total % clients) for i in range(clients)]
            with concurrent.futures.ThreadPoolExecutor(clients) as pool:
                futures = [pool.submit(client, c, n) for c, n in zip(conns, shares, strict=True)]
                for done in futures:
                    done.result()

        send_all(warmup, "warm-up")
        subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
        send_all(measured, "measured")
        subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True)
        for conn in conns:
            conn.close()
    finally:
        server.stop(timeout=120)
    # The dump asked for after the load (``<out>.1``), not the one written at exit.
    dump = out.with_name(out.name + ".1")
    found = TOTALS.search(dump.read_bytes()) if dump.exists() else None
    if found is None or b"Trigger: dump" not in dump.read_bytes()[:4096]:
        raise RuntimeError(f"no callgrind dump of the load in {dump}")
    total = int(found.group(1))
    return total / measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", default=["create", "transition", "update"])
    parser.add_argument("--requests", type=int, default=150)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--ceiling", action="store_true")
    parser.add_argument(
        "--clients",
        type=int,
        default=1,
        help="connections sending at once (32: the load of bench/run.py; default 1)",
    )
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind (callgrind) is not installed", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="tessera-instructions-"))
    results: dict[str, float] = {}
    try:
        url = dbsetup.prepare_sqlite(tmp / "instructions.db")
        for scenario in args.scenarios:
            tenant = f"instr-{scenario}-{uuid.uuid4().hex[:6]}"
            wanted = args.warmup + args.requests  # a "once" scenario seeds a row per request
            small = wanted <= 200  # the smoke seeding (300 rows) is enough
            budget_s = wanted / EST_MAX_RPS
            mode, requests = build_requests(scenario, url, tenant, budget_s, small)
            results[scenario] = count(
                "host",
                requests,
                once=mode == "once",
                warmup=args.warmup,
                measured=args.requests,
                database_url=url,
                workdir=tmp,
                clients=args.clients,
            )
            print(f"{scenario}: {results[scenario] / 1e6:.3f} M instructions per request")
        if args.ceiling:
            get = [{"method": "GET", "path": "/", "headers": {}}]
            results["ceiling"] = count(
                "ceiling",
                get,
                once=False,
                warmup=args.warmup,
                measured=args.requests,
                database_url=None,
                workdir=tmp,
                clients=args.clients,
            )
            print(f"ceiling: {results['ceiling'] / 1e6:.3f} M instructions per request")
            for scenario in args.scenarios:
                print(f"{scenario}: ceiling / host {results['ceiling'] / results[scenario]:.3f}")
        print(json.dumps({k: round(v) for k, v in results.items()}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
