"""Profile the host's worker under the create and list loads with py-spy.

    python bench/profile_host.py [--duration 10] [--scenarios create list100] [--backend sqlite]
                                 [--native]

Starts the host (1 worker), drives the scenario with the bench load generator while
``py-spy record --format raw --threads`` samples the worker, and prints the top frames:
inclusive and self share of the samples of the event-loop thread, self share by package, and
the share of the database threads (aiosqlite). Raw collapsed stacks are kept under
``bench/results/`` (render them with ``inferno-flamegraph`` or ``flamegraph.pl``).
Needs ``pip install py-spy`` and ptrace permission on the worker.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import dbsetup
import servers
from run import RESULTS_DIR, build_requests, run_load

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^:]*)(?::(?P<line>\d+))?\)$")


def package_of(path: str) -> str:
    for marker in ("site-packages/", "/lib/python3"):
        if marker in path:
            tail = path.split(marker, 1)[1]
            if marker == "/lib/python3":
                return "stdlib:" + tail.split("/", 2)[1].removesuffix(".py")
            return tail.split("/", 1)[0].removesuffix(".py")
    for first_party in ("host/", "plugin_api/", "tessera_"):
        if first_party in path:
            return path[path.index(first_party) :]
    return path


def short(frame: str) -> str:
    match = FRAME.match(frame)
    if not match:
        return frame
    return f"{match['func']} ({package_of(match['file'])})"


def analyse(raw: Path, top: int = 25) -> str:
    threads: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    self_time: Counter[str] = Counter()
    packages: Counter[str] = Counter()
    loop_total = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = stack.split(";")
        thread, frames = frames[0], frames[1:]
        is_loop = any("run_forever" in f or ("asyncio" in f and "run" in f) for f in frames[:6])
        kind = "event loop" if is_loop else ("aiosqlite" if "aiosqlite" in stack else thread)
        threads[kind] += count
        if not is_loop:
            continue
        loop_total += count
        for name in {short(frame) for frame in frames}:
            inclusive[name] += count
        if frames:
            self_time[short(frames[-1])] += count
            match = FRAME.match(frames[-1])
            packages[package_of(match["file"]) if match else frames[-1]] += count
    total = sum(threads.values()) or 1
    out = [
        "Samples by thread: " + ", ".join(f"{k} {v / total:.0%}" for k, v in threads.most_common())
    ]
    loop_total = loop_total or 1
    out += ["", f"Event-loop thread, inclusive (top {top}):"]
    out += [f"  {n / loop_total:6.1%}  {name}" for name, n in inclusive.most_common(top)]
    out += ["", f"Event-loop thread, self (top {top}):"]
    out += [f"  {n / loop_total:6.1%}  {name}" for name, n in self_time.most_common(top)]
    out += ["", "Event-loop thread, self time by package / module:"]
    out += [f"  {n / loop_total:6.1%}  {name}" for name, n in packages.most_common(20)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--scenarios", nargs="+", default=["create", "list100"])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument(
        "--native", action="store_true", help="py-spy --native: C frames too (SQLite's)"
    )
    args = parser.parse_args(argv)
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    tmp = Path(tempfile.mkdtemp(prefix="tessera-profile-"))
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    if args.backend == "sqlite":
        url = dbsetup.prepare_sqlite(tmp / "profile.db")
    else:
        url = dbsetup.prepare_postgresql("tessera_bench_profile")
    server = servers.start("host", workers=1, database_url=url, workdir=tmp)
    try:
        (pid,) = server.workers()
        for scenario in args.scenarios:
            tenant = f"profile-{scenario}-{uuid.uuid4().hex[:6]}"
            mode, requests = build_requests(scenario, url, tenant, args.duration + 2, False)
            raw = RESULTS_DIR / f"profile-{scenario}-{args.backend}-{time.strftime('%H%M%S')}.txt"
            spy = subprocess.Popen(
                [
                    py_spy,
                    "record",
                    "--pid",
                    str(pid),
                    "--duration",
                    str(int(args.duration)),
                    "--rate",
                    str(args.rate),
                    "--format",
                    "raw",
                    "--threads",
                    *(["--native"] if args.native else []),
                    "-o",
                    str(raw),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            measured = run_load(
                server.port,
                mode,
                requests,
                duration=args.duration,
                warmup=0.5,
                processes=1,
                workdir=tmp,
                worker_pids=[pid],
            )
            _, err = spy.communicate(timeout=args.duration + 60)
            print(f"## {scenario} ({args.backend}, under py-spy): {measured['rps']:.0f} req/s")
            if not raw.exists():
                print(f"py-spy produced nothing: {err.decode(errors='replace')[-500:]}")
                continue
            print(analyse(raw))
            print(f"(raw stacks: {raw})\n")
    finally:
        server.stop()
        if args.backend == "postgresql":
            dbsetup.drop_postgresql("tessera_bench_profile")
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
