"""A small HTTP/1.1 keep-alive load generator on raw asyncio streams (no dependencies).

Fixed concurrency (``--connections``), fixed duration (``--duration`` after ``--warmup``) and
optionally a fixed request count. Requests come from a JSON spec file::

    {"host": "127.0.0.1", "port": 8000, "mode": "cycle" | "once",
     "requests": [{"method": "GET", "path": "/x", "headers": {...}, "body": "..."}, ...]}

``cycle`` repeats the list round-robin; ``once`` sends every request at most once (used for
transitions, which succeed only once per row) and stops when the list is exhausted.

Only requests started after the warm-up and finished before the end of the window are
recorded. The result (JSON on stdout) holds the count, the window, statuses and every latency
in milliseconds, so several generator processes can be merged by the caller.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any


def encode_request(host: str, port: int, spec: dict[str, Any]) -> bytes:
    """One request as raw HTTP/1.1 bytes (keep-alive)."""
    body = spec.get("body")
    payload = b"" if body is None else body.encode()
    lines = [f"{spec.get('method', 'GET')} {spec['path']} HTTP/1.1", f"Host: {host}:{port}"]
    lines.extend(f"{name}: {value}" for name, value in spec.get("headers", {}).items())
    if body is not None or spec.get("method", "GET") == "POST":
        lines.append(f"Content-Length: {len(payload)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


async def read_response(reader: asyncio.StreamReader) -> tuple[int, int]:
    """Read one response; return (status, body length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    lower = head.lower()
    at = lower.find(b"\r\ncontent-length:")
    if at >= 0:
        end = lower.index(b"\r\n", at + 2)
        length = int(lower[at + 17 : end])
        if length:
            await reader.readexactly(length)
        return status, length
    if b"transfer-encoding: chunked" in lower:
        total = 0
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            total += size
            if size == 0:
                return status, total
    raise RuntimeError("response without Content-Length or chunked encoding")


class Run:
    """Shared state of one load run."""

    def __init__(
        self, requests: list[bytes], mode: str, max_requests: int | None, min_requests: int = 0
    ) -> None:
        self.requests = requests
        self.min_requests = min_requests
        self.measure_cap = 0.0
        self.mode = mode
        self.max_requests = max_requests
        self.next_index = 0
        self.started = 0.0
        self.measure_from = 0.0
        self.measure_until = 0.0
        self.latencies: list[float] = []
        self.statuses: Counter[int] = Counter()
        self.errors: Counter[str] = Counter()
        self.exhausted_at: float | None = None
        self.last_done = 0.0
        self.completed = 0

    def take(self) -> bytes | None:
        now = time.perf_counter()
        if now >= self.measure_until:
            if len(self.latencies) >= self.min_requests or now >= self.measure_cap:
                return None
            self.measure_until = now + 0.25  # too few recorded yet: keep the window open
        if self.max_requests is not None and len(self.latencies) >= self.max_requests:
            return None
        index = self.next_index
        if self.mode == "once" and now < self.measure_from and index >= len(self.requests) // 2:
            # Half of a "once" list went in the warm-up (a fast host, a short list): the
            # window starts now, so that the rest is measured rather than spent warming up.
            self.measure_until -= self.measure_from - now
            self.measure_from = now
        if index >= len(self.requests):
            if self.mode == "once":
                if self.exhausted_at is None:
                    self.exhausted_at = now
                return None
            index %= len(self.requests)
        self.next_index = index + 1
        return self.requests[index]


async def connection(run: Run, host: str, port: int) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while True:
            raw = run.take()
            if raw is None:
                return
            started = time.perf_counter()
            writer.write(raw)
            try:
                status, _ = await read_response(reader)
            except (asyncio.IncompleteReadError, ConnectionError) as exc:
                run.errors[type(exc).__name__] += 1
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
                continue
            done = time.perf_counter()
            run.completed += 1
            if started >= run.measure_from and done <= run.measure_until:
                run.latencies.append((done - started) * 1000.0)
                run.statuses[status] += 1
                run.last_done = done
    finally:
        writer.close()


async def drive(
    host: str,
    port: int,
    requests: list[bytes],
    *,
    mode: str,
    connections: int,
    duration: float,
    warmup: float,
    max_requests: int | None,
    min_requests: int = 0,
) -> dict[str, Any]:
    run = Run(requests, mode, max_requests, min_requests)
    run.started = time.perf_counter()
    run.measure_from = run.started + warmup
    run.measure_until = run.measure_from + duration
    run.measure_cap = run.measure_until + 30.0
    await asyncio.gather(*(connection(run, host, port) for _ in range(connections)))
    # The window ends at the deadline, or earlier when a "once" list ran out.
    end = run.measure_until
    if run.exhausted_at is not None or (
        max_requests is not None and len(run.latencies) >= max_requests
    ):
        end = max(run.last_done, run.measure_from)
    window = max(end - run.measure_from, 1e-9)
    return {
        "count": len(run.latencies),
        "completed": run.completed,
        "window_s": window,
        "rps": len(run.latencies) / window,
        "statuses": {str(k): v for k, v in sorted(run.statuses.items())},
        "errors": dict(run.errors),
        "exhausted": run.exhausted_at is not None,
        "latencies_ms": run.latencies,
    }


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile of unsorted ``values`` (``None`` when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[rank]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, type=Path)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--requests", type=int, default=None, help="stop after N recorded")
    parser.add_argument(
        "--min-requests",
        type=int,
        default=0,
        help="keep the window open (at most 30 s more) until N requests were recorded",
    )
    parser.add_argument("--slice", default="0/1", help="i/n: use every n-th request from i")
    parser.add_argument("--summary", action="store_true", help="print rps/p50/p99 only")
    args = parser.parse_args(argv)
    spec = json.loads(args.spec.read_text())
    index, count = (int(part) for part in args.slice.split("/"))
    chosen = spec["requests"][index::count]
    raw = [encode_request(spec["host"], spec["port"], item) for item in chosen]
    result = asyncio.run(
        drive(
            spec["host"],
            spec["port"],
            raw,
            mode=spec.get("mode", "cycle"),
            connections=args.connections,
            duration=args.duration,
            warmup=args.warmup,
            max_requests=args.requests,
            min_requests=args.min_requests,
        )
    )
    if args.summary:
        latencies = result.pop("latencies_ms")
        result["p50_ms"] = percentile(latencies, 0.50)
        result["p99_ms"] = percentile(latencies, 0.99)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
