"""Live changes: open streams on one worker while actions run (docs/live.md).

    python bench/live.py [--backend sqlite|postgresql] [--streams 1000] [--seconds 10]
                         [--clients 4] [--probes 20] [--scoped OWNERS]

One Hypercorn worker (``host.asgi:app``, ``--workers 1``) on a fresh database; the load runs
in this process over raw keep-alive sockets. In one run:

1. ``--clients`` concurrent clients create tickets for ``--seconds`` with no stream open:
   actions per second (before);
2. ``--streams`` streams are opened (``GET /api/changes?projection=helpdesk.ticket.queue``,
   all of tenant t1: every stream hears every change, the widest fan-out; ``--scoped N``:
   ``helpdesk.ticket.mine`` as requesters r0..r(N-1), stream n as r(n mod N), while the
   action clients create as r0..r9: a stream hears its own tickets only): the worker's RSS
   before and after, per stream;
3. the same load with the streams open: actions per second, and for the ``--probes``
   streams read in full, the time from each create's request (upper bound) and from its
   response (lower bound; the commit is between the two) to the change message: p50/p99;
4. the streams closed, the load again (after): the ratio is taken against the mean of
   before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servers import Server, launch, proc_status

TENANT = "t1"
CREATE = "/api/actions/helpdesk.ticket.create"


def request(port: int, method: str, path: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if method == "POST":
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def read_json(reader: asyncio.StreamReader) -> tuple[int, dict[str, object]]:
    head = await reader.readuntil(b"\r\n\r\n")
    lower = head.lower()
    at = lower.index(b"\r\ncontent-length:")
    length = int(lower[at + 17 : lower.index(b"\r\n", at + 2)])
    return int(head[9:12]), json.loads(await reader.readexactly(length))


@dataclass
class Load:
    requested: dict[str, float] = field(default_factory=dict)
    answered: dict[str, float] = field(default_factory=dict)
    done: int = 0


async def actor(port: int, load: Load, until: float, requester: str) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    headers = {"X-Tenant-ID": TENANT, "X-Actor-Id": requester, "X-Actor-Roles": "requester"}
    body = json.dumps({"inputs": {"title": "live bench"}}).encode()
    try:
        while time.perf_counter() < until:
            started = time.perf_counter()
            writer.write(request(port, "POST", CREATE, headers, body))
            try:
                status, answer = await read_json(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                # Hypercorn closes a keep-alive connection after 1,000 requests: reconnect.
                writer.close()
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                continue
            answered = time.perf_counter()
            if status != 200:
                raise RuntimeError(f"action answered {status}: {answer}")
            outputs = answer["outputs"]
            assert isinstance(outputs, dict)
            load.requested[outputs["id"]] = started
            load.answered[outputs["id"]] = answered
            load.done += 1
    finally:
        writer.close()
        await writer.wait_closed()


async def run_load(port: int, seconds: float, clients: int) -> tuple[float, Load]:
    load = Load()
    until = time.perf_counter() + seconds
    started = time.perf_counter()
    await asyncio.gather(*(actor(port, load, until, f"r{n % 10}") for n in range(clients)))
    return load.done / (time.perf_counter() - started), load


@dataclass
class Stream:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    probe: bool
    received: list[tuple[str, float]] = field(default_factory=list)
    bytes: int = 0


async def open_stream(port: int, number: int, probe: bool, scoped: int) -> Stream:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    if scoped:
        path = "/api/changes?projection=helpdesk.ticket.mine"
        headers = {"X-Actor-Id": f"r{number % scoped}", "X-Actor-Roles": "requester"}
    else:
        path = "/api/changes?projection=helpdesk.ticket.queue"
        headers = {}
    writer.write(request(port, "GET", path, {"X-Tenant-ID": TENANT, **headers}, b""))
    head = await reader.readuntil(b"\r\n\r\n")
    if head[9:12] != b"200":
        raise RuntimeError(f"stream {number} answered {head[:12]!r}")
    await reader.readuntil(b": live\n\n")  # registered
    return Stream(reader, writer, probe)


async def read_stream(stream: Stream) -> None:
    rest = b""
    while True:
        chunk = await stream.reader.read(65536)
        if not chunk:
            return
        stream.bytes += len(chunk)
        if not stream.probe:
            continue
        now = time.perf_counter()
        rest += chunk
        while b"\n" in rest:
            line, rest = rest.split(b"\n", 1)
            if line.startswith(b"data: {"):
                # chunked framing: a data line holds no CR/LF, so it is whole here
                stream.received.append((json.loads(line[6:])["id"], now))


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def bench(server: Server, args: argparse.Namespace) -> None:
    port = server.port
    (worker,) = server.workers()
    before, _ = await run_load(port, args.seconds, args.clients)
    rss_empty = proc_status(worker)["VmRSS"]
    every = max(1, args.streams // max(1, args.probes))
    opened_at = time.perf_counter()
    streams: list[Stream] = []
    for start in range(0, args.streams, 50):
        batch = range(start, min(start + 50, args.streams))
        streams += await asyncio.gather(
            *(open_stream(port, n, n % every == 0, args.scoped) for n in batch)
        )
    opening = time.perf_counter() - opened_at
    readers = [asyncio.ensure_future(read_stream(s)) for s in streams]
    await asyncio.sleep(1.0)
    rss_open = proc_status(worker)["VmRSS"]
    during, load = await run_load(port, args.seconds, args.clients)
    await asyncio.sleep(1.0)  # the last messages arrive
    from_request: list[float] = []
    from_answer: list[float] = []
    heard = 0
    for stream in streams:
        for ticket, at in stream.received:  # probes only
            if ticket in load.requested:
                heard += 1
                from_request.append(at - load.requested[ticket])
                from_answer.append(at - load.answered[ticket])
    total_bytes = sum(s.bytes for s in streams)
    for stream in streams:
        stream.writer.close()
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    await asyncio.sleep(1.0)
    after, _ = await run_load(port, args.seconds, args.clients)
    baseline = (before + after) / 2
    kind = f"scoped, {args.scoped} owners" if args.scoped else "all hear all"
    print(
        f"backend {args.backend}, {args.streams} streams ({kind}), "
        f"{args.clients} action clients, {args.seconds:g} s per phase, 1 worker"
    )
    print(
        f"actions/s: before {before:.1f}, with streams {during:.1f}, after {after:.1f}; "
        f"ratio {during / baseline:.2f}"
    )
    print(
        f"streams opened in {opening:.2f} s; worker RSS {rss_empty / 1024:.1f} MiB empty, "
        f"{rss_open / 1024:.1f} MiB with streams: {(rss_open - rss_empty) / args.streams:.1f} KiB "
        "per stream"
    )
    if from_request:
        print(
            f"commit to message on {sum(s.probe for s in streams)} probe streams "
            f"({heard} messages): from the action's response p50 "
            f"{1000 * percentile(from_answer, 0.5):.0f} ms, p99 "
            f"{1000 * percentile(from_answer, 0.99):.0f} ms; from its request p50 "
            f"{1000 * percentile(from_request, 0.5):.0f} ms, p99 "
            f"{1000 * percentile(from_request, 0.99):.0f} ms"
        )
    if not args.scoped:
        probes = [s for s in streams if s.probe]
        complete = all({t for t, _ in s.received} >= set(load.requested) for s in probes)
        print(f"every probe stream heard every create: {complete}")
    print(f"bytes sent on all streams: {total_bytes / 1e6:.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--probes", type=int, default=20)
    parser.add_argument(
        "--scoped",
        type=int,
        default=0,
        metavar="OWNERS",
        help="watch helpdesk.ticket.mine as requesters r0..r(OWNERS-1) (0: the queue)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        workdir = Path(directory)
        if args.backend == "sqlite":
            url = f"sqlite:///{workdir / 'live.db'}"
        else:
            url = os.environ.get(
                "TESSERA_BENCH_POSTGRES_URL",
                "postgresql://postgres@127.0.0.1:5432/tessera_bench_live",
            )
            import asyncpg

            async def reset() -> None:
                admin = await asyncpg.connect(url.rsplit("/", 1)[0] + "/postgres")
                name = url.rsplit("/", 1)[1]
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
                await admin.execute(f'CREATE DATABASE "{name}"')
                await admin.close()

            asyncio.run(reset())
        env = {"TESSERA_LIVE_MAX_STREAMS": str(max(args.streams, 1))}
        server = launch("host", workers=1, database_url=url, workdir=workdir, env=env)
        try:
            server.wait_ready()
            asyncio.run(bench(server, args))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
