"""Tessera benchmarks: the host against a hand-written baseline and a Quart ceiling.

    python bench/run.py [--smoke] [--scenarios ...] [--workers 1 2]
                        [--backend sqlite postgresql] [--duration S] [--runs N]

Writes ``bench/results/<timestamp>.json`` and prints a Markdown summary. See
``docs/benchmarks.md`` for what each scenario does and how to read the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import dbsetup
import servers
from loadgen import percentile

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"

THROUGHPUT = ("create", "transition", "update", "detail", "list100")
MATRIX_DEFAULT = ("create", "list100")
"""Scenarios run for the backend/worker combinations other than the first one."""
OTHER = ("scaling", "startup", "compile")
ALL_SCENARIOS = (*THROUGHPUT, *OTHER)
COMPARED = ("host", "baseline")
CONNECTIONS = 32
SCALING_SIZES = (1_000, 10_000, 100_000)
COMPILE_SIZES = (10, 100, 1_000)
EST_MAX_RPS = 2_500
"""Upper estimate of transitions per second, to seed enough open tickets."""

HEADERS = {
    "X-Actor-Id": "alice",
    "X-Actor-Roles": "agent,requester",
    "Content-Type": "application/json",
}
CREATE_INPUTS = {
    "title": "Printer on fire",
    "description": "The printer on floor 3 is on fire again.",
    "priority": "high",
    "estimate_hours": 3,
    "due_at": "2030-01-02T03:04:00Z",
    "billable": True,
    "budget": {"amount": "12.50", "currency": "EUR"},
}


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


# -- scenarios: requests to send (and rows to seed first) --------------------------------------


def headers(tenant: str) -> dict[str, str]:
    return {"X-Tenant-ID": tenant, **HEADERS}


def subject(tenant: str, ticket: str) -> dict[str, str]:
    return {"tenantId": tenant, "entityFqn": "helpdesk.ticket", "identityHandle": ticket}


def _ms(value: float | None) -> str:
    """A latency for the log (``n/a`` when no request completed in the window)."""
    return "n/a" if value is None else f"{value:.1f} ms"


def build_requests(
    scenario: str, url: str, tenant: str, budget_s: float, smoke: bool
) -> tuple[str, list[dict[str, Any]]]:
    """Seed what ``scenario`` needs in ``url`` under ``tenant``; return (mode, requests)."""
    h = headers(tenant)
    if scenario == "create":
        body = json.dumps({"subject": None, "inputs": CREATE_INPUTS})
        return "cycle", [
            {
                "method": "POST",
                "path": "/api/actions/helpdesk.ticket.create",
                "headers": h,
                "body": body,
            }
        ]
    if scenario == "transition":
        count = 300 if smoke else int(budget_s * EST_MAX_RPS) + 100
        ids = dbsetup.seed([url], tenant, count, state="open")
        return "once", [
            {
                "method": "POST",
                "path": "/api/actions/helpdesk.ticket.start",
                "headers": h,
                "body": json.dumps({"subject": subject(tenant, i), "inputs": {}}),
            }
            for i in ids
        ]
    if scenario == "update":
        ids = dbsetup.seed([url], tenant, 100 if smoke else 2_000)
        return "cycle", [
            {
                "method": "POST",
                "path": "/api/actions/helpdesk.ticket.edit",
                "headers": h,
                "body": json.dumps(
                    {
                        "subject": subject(tenant, i),
                        "inputs": {"title": f"Edited {n}", "estimate_hours": n % 40},
                    }
                ),
            }
            for n, i in enumerate(ids)
        ]
    if scenario == "detail":
        ids = dbsetup.seed([url], tenant, 100 if smoke else 1_000)
        return "cycle", [
            {
                "method": "GET",
                "path": f"/api/projections/helpdesk.ticket.detail?subject={i}",
                "headers": h,
            }
            for i in ids
        ]
    if scenario == "list100":
        dbsetup.seed([url], tenant, 100)
        return "cycle", [
            {"method": "GET", "path": "/api/projections/helpdesk.ticket.queue", "headers": h}
        ]
    raise ValueError(scenario)


# -- load ------------------------------------------------------------------------------------


def run_load(
    port: int,
    mode: str,
    requests: list[dict[str, Any]],
    *,
    duration: float,
    warmup: float,
    processes: int,
    workdir: Path,
    worker_pids: Sequence[int] = (),
    min_requests: int = 0,
) -> dict[str, Any]:
    """Drive ``requests`` at ``port`` from ``processes`` generator processes (32 connections
    in all); return throughput, latency percentiles and the CPU used on each side."""
    spec = workdir / f"spec-{uuid.uuid4().hex[:8]}.json"
    spec.write_text(
        json.dumps({"host": "127.0.0.1", "port": port, "mode": mode, "requests": requests})
    )
    per = [
        CONNECTIONS // processes + (1 if i < CONNECTIONS % processes else 0)
        for i in range(processes)
    ]
    cpu_before = {pid: servers.cpu_seconds(pid) for pid in worker_pids}
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()[0]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(BENCH_DIR / "loadgen.py"),
                "--spec",
                str(spec),
                "--connections",
                str(per[i]),
                "--duration",
                str(duration),
                "--warmup",
                str(warmup),
                "--slice",
                f"{i}/{processes}",
                "--min-requests",
                str(min_requests),
            ],
            stdout=subprocess.PIPE,
        )
        for i in range(processes)
    ]
    outputs = []
    for proc in procs:
        out, _ = proc.communicate(timeout=duration + warmup + 150)
        if proc.returncode != 0:
            raise RuntimeError(f"load generator failed with {proc.returncode}")
        outputs.append(json.loads(out))
    usage_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_after = {pid: servers.cpu_seconds(pid) for pid in worker_pids}
    spec.unlink()
    latencies = [value for out in outputs for value in out["latencies_ms"]]
    statuses: dict[str, int] = {}
    for out in outputs:
        for status, count in out["statuses"].items():
            statuses[status] = statuses.get(status, 0) + count
    window = max(out["window_s"] for out in outputs)
    loadgen_cpu = (usage_after.ru_utime + usage_after.ru_stime) - (
        usage_before.ru_utime + usage_before.ru_stime
    )
    return {
        "rps": sum(out["rps"] for out in outputs),
        "count": len(latencies),
        "window_s": window,
        "p50_ms": percentile(latencies, 0.50),
        "p99_ms": percentile(latencies, 0.99),
        "statuses": statuses,
        "non_2xx": sum(n for s, n in statuses.items() if not s.startswith("2")),
        "errors": sum(sum(out["errors"].values()) for out in outputs),
        "exhausted": any(out["exhausted"] for out in outputs),
        "completed": sum(out["completed"] for out in outputs),
        "server_cpu_s": sum(cpu_after[p] - cpu_before[p] for p in cpu_before),
        "loadgen_cpu_s": loadgen_cpu,
        "loadavg_before": load_before,
    }


# -- one-shot timed request (time to first and last byte) --------------------------------------


def timed_get(port: int, path: str, hdrs: dict[str, str]) -> dict[str, Any]:
    request = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    request.extend(f"{k}: {v}" for k, v in hdrs.items())
    raw = ("\r\n".join(request) + "\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=300) as sock:
        started = time.perf_counter()
        sock.sendall(raw)
        chunk = sock.recv(1 << 20)
        first = time.perf_counter()
        data = bytearray(chunk)
        while chunk:
            chunk = sock.recv(1 << 20)
            data += chunk
        last = time.perf_counter()
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    return {
        "status": int(head[9:12]),
        "ttfb_ms": (first - started) * 1000,
        "ttlb_ms": (last - started) * 1000,
        "bytes": len(body),
    }


# -- phases ------------------------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.smoke: bool = args.smoke
        self.tmp = Path(tempfile.mkdtemp(prefix="tessera-bench-"))
        self.pg_databases: list[str] = []
        self.result: dict[str, Any] = {
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": machine(),
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "connections": CONNECTIONS,
            "ceiling": [],
            "throughput": [],
            "parity": [],
            "scaling": [],
            "startup": [],
            "compile": [],
        }

    def database(self, backend: str, name: str) -> str:
        if backend == "sqlite":
            return dbsetup.prepare_sqlite(self.tmp / f"{name}-{uuid.uuid4().hex[:6]}.db")
        database = f"tessera_bench_{name}_{os.getpid()}"  # two runs at once never share one
        self.pg_databases.append(database)
        return dbsetup.prepare_postgresql(database)

    def load(self, server: servers.Server, mode: str, requests: list[dict[str, Any]]) -> dict:
        return run_load(
            server.port,
            mode,
            requests,
            duration=self.args.duration,
            warmup=self.args.warmup,
            processes=self.args.loadgen_processes,
            workdir=self.tmp,
            worker_pids=server.workers(),
            # A smoke run checks that every scenario works, whatever the machine's load.
            min_requests=1 if self.smoke else 0,
        )

    # throughput: every scenario for host and baseline, alternating, per backend/workers

    def throughput(self, backend: str, workers: int, scenarios: Sequence[str]) -> None:
        urls = {name: self.database(backend, name) for name in COMPARED}
        running: dict[str, servers.Server] = {}
        try:
            for name in (*COMPARED, "ceiling"):
                running[name] = servers.launch(
                    name, workers=workers, database_url=urls.get(name), workdir=self.tmp
                )
            for server in running.values():
                server.wait_ready()
            if not self.result["parity"]:
                self.parity(running, urls)
            for run in range(self.args.runs):
                ceiling = self.load(
                    running["ceiling"], "cycle", [{"method": "GET", "path": "/", "headers": {}}]
                )
                ceiling.update(backend=backend, workers=workers, run=run)
                self.result["ceiling"].append(ceiling)
                log(f"ceiling {backend} w{workers} run {run}: {ceiling['rps']:.0f} req/s")
            budget = self.args.duration + self.args.warmup
            for scenario in scenarios:
                for run in range(self.args.runs):
                    if not self.smoke:
                        self.ceiling_beside(running["ceiling"], backend, workers, run, scenario)
                    for name in COMPARED:
                        tenant = f"{scenario}-{name}-r{run}-{uuid.uuid4().hex[:6]}"
                        mode, requests = build_requests(
                            scenario, urls[name], tenant, budget, self.smoke
                        )
                        measured = self.load(running[name], mode, requests)
                        measured.update(
                            target=name,
                            scenario=scenario,
                            backend=backend,
                            workers=workers,
                            run=run,
                        )
                        self.result["throughput"].append(measured)
                        log(
                            f"{scenario} {backend} w{workers} {name} run {run}: "
                            f"{measured['rps']:.0f} req/s p50 {_ms(measured['p50_ms'])} "
                            f"non-2xx {measured['non_2xx']}"
                        )
        finally:
            for server in running.values():
                server.stop()

    def ceiling_beside(
        self, ceiling: servers.Server, backend: str, workers: int, run: int, scenario: str
    ) -> None:
        """The ceiling again, in this round of ``scenario``, just before the host: host/ceiling
        then compares two loads seconds apart, not minutes (the machine's other load moves
        both)."""
        beside = self.load(ceiling, "cycle", [{"method": "GET", "path": "/", "headers": {}}])
        beside.update(backend=backend, workers=workers, run=run, scenario=scenario)
        self.result["ceiling"].append(beside)

    def parity(self, running: dict[str, servers.Server], urls: dict[str, str]) -> None:
        """Same rows in both databases: host and baseline must answer the same documents."""
        tenant = f"parity-{uuid.uuid4().hex[:6]}"
        ids = dbsetup.seed(list(urls.values()), tenant, 5)
        paths = [
            "/api/projections/helpdesk.ticket.queue",
            f"/api/projections/helpdesk.ticket.detail?subject={ids[0]}",
        ]
        for path in paths:
            documents = {}
            for name in COMPARED:
                got = timed_get_body(running[name].port, path, headers(tenant))
                got["metadata"].pop("generatedAt", None)
                documents[name] = got
            same = documents["host"] == documents["baseline"]
            self.result["parity"].append({"path": path.split("?")[0], "identical": same})
            if not same:
                log(f"PARITY DIFFERENCE on {path}")

    # list scaling: a fresh server per size, time to first/last byte and peak RSS

    def scaling(self, backend: str) -> None:
        sizes = (1_000,) if self.smoke else SCALING_SIZES
        urls = {name: self.database(backend, f"scale_{name}") for name in COMPARED}
        warm = f"warm-{uuid.uuid4().hex[:6]}"
        dbsetup.seed(list(urls.values()), warm, 10)
        for size in sizes:
            tenant = f"scale-{size}"
            started = time.perf_counter()
            dbsetup.seed(list(urls.values()), tenant, size)
            log(f"seeded {size} rows ({backend}) in {time.perf_counter() - started:.1f}s")
            for name in COMPARED:
                server = servers.start(name, workers=1, database_url=urls[name], workdir=self.tmp)
                try:
                    path = "/api/projections/helpdesk.ticket.queue"
                    for _ in range(3):
                        timed_get(server.port, path, headers(warm))
                    (pid,) = server.workers()
                    before = servers.proc_status(pid)
                    samples = [
                        timed_get(server.port, path, headers(tenant))
                        for _ in range(1 if self.smoke else self.args.runs)
                    ]
                    after = servers.proc_status(pid)
                finally:
                    server.stop()
                body = samples[0]["bytes"]
                peak_delta = (after["VmHWM"] - before["VmRSS"]) * 1024
                entry = {
                    "backend": backend,
                    "target": name,
                    "rows": size,
                    "bytes": body,
                    "status": samples[0]["status"],
                    "ttfb_ms": median([s["ttfb_ms"] for s in samples]),
                    "ttlb_ms": median([s["ttlb_ms"] for s in samples]),
                    "rss_before_kib": before["VmRSS"],
                    "hwm_after_kib": after["VmHWM"],
                    "peak_over_rest_bytes": peak_delta,
                    "peak_over_body": peak_delta / body if body else None,
                }
                self.result["scaling"].append(entry)
                log(
                    f"scaling {backend} {name} {size}: {entry['ttlb_ms']:.0f} ms, "
                    f"{body / 1e6:.1f} MB, peak +{peak_delta / 1e6:.1f} MB"
                )

    def startup(self) -> None:
        url = self.database("sqlite", "startup")
        for run in range(1 if self.smoke else self.args.runs):
            for name in (*COMPARED, "ceiling"):
                server = servers.start(name, workers=1, database_url=url, workdir=self.tmp)
                server.stop()
                self.result["startup"].append(
                    {"target": name, "run": run, "ready_s": server.ready_after}
                )
                log(f"startup {name}: {server.ready_after:.2f}s")

    def compile(self) -> None:
        for size in (10,) if self.smoke else COMPILE_SIZES:
            out = subprocess.run(
                [
                    sys.executable,
                    str(BENCH_DIR / "synthetic.py"),
                    "--entities",
                    str(size),
                    "--runs",
                    "1" if self.smoke else "3",
                ],
                check=True,
                capture_output=True,
                text=True,
                timeout=600,
            )
            entry = json.loads(out.stdout)
            entry["compile_graph_median_s"] = compile_graph_measure(size, 1 if self.smoke else 3)
            self.result["compile"].append(entry)
            log(f"compile {size} entities: {entry['compile_median_s']:.3f}s")

    def cleanup(self) -> None:
        for database in self.pg_databases:
            try:
                dbsetup.drop_postgresql(database)
            except Exception as exc:  # leave the benchmark's result intact
                log(f"could not drop {database}: {exc}")
        shutil.rmtree(self.tmp, ignore_errors=True)


def compile_graph_measure(entities: int, runs: int) -> float | None:
    """``bench/compile_graph.py``'s own measure (median wall seconds of compile + hash of
    20-field entities, plugin loading excluded), in a fresh process, when it is present."""
    if not (BENCH_DIR / "compile_graph.py").exists():
        return None
    code = (
        f"import sys; sys.path.insert(0, {str(BENCH_DIR)!r}); import compile_graph; "
        f"m = compile_graph.measure({entities}, {runs}); "
        "print(m[0] if isinstance(m, tuple) else m)"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=600
        )
        return float(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError) as exc:
        log(f"bench/compile_graph.py could not be used: {exc}")
        return None


def timed_get_body(port: int, path: str, hdrs: dict[str, str]) -> Any:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path, headers=hdrs)
    body = conn.getresponse().read()
    conn.close()
    return json.loads(body)


def machine() -> dict[str, Any]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": os.getloadavg(),
    }


# -- report --------------------------------------------------------------------------------


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """Medians over runs, ratios host/baseline and against the ceiling."""
    ceilings: dict[tuple[str, int], float | None] = {}
    first = [e for e in result["ceiling"] if "scenario" not in e]  # before the scenarios
    for entry in first:
        key = (entry["backend"], entry["workers"])
        ceilings.setdefault(key, None)
    for key in ceilings:
        ceilings[key] = median([e["rps"] for e in first if (e["backend"], e["workers"]) == key])
    rows = []
    keys = []
    for entry in result["throughput"]:
        key = (entry["backend"], entry["workers"], entry["scenario"])
        if key not in keys:
            keys.append(key)
    for backend, workers, scenario in keys:
        row: dict[str, Any] = {"backend": backend, "workers": workers, "scenario": scenario}
        for name in COMPARED:
            runs = [
                e
                for e in result["throughput"]
                if e["target"] == name
                and (e["backend"], e["workers"], e["scenario"]) == (backend, workers, scenario)
            ]
            row[name] = {
                "rps": median([e["rps"] for e in runs]),
                "p50_ms": median([e["p50_ms"] for e in runs]),
                "p99_ms": median([e["p99_ms"] for e in runs]),
                "non_2xx": sum(e["non_2xx"] + e["errors"] for e in runs),
                "cpu_ms_per_req": median(
                    [1000 * e["server_cpu_s"] / e["completed"] for e in runs if e["completed"]]
                ),
                "runs": [round(e["rps"], 1) for e in runs],
            }
        host, base = row["host"]["rps"], row["baseline"]["rps"]
        row["ratio"] = host / base if host and base else None
        host_cpu, base_cpu = row["host"]["cpu_ms_per_req"], row["baseline"]["cpu_ms_per_req"]
        row["cpu_ratio"] = host_cpu / base_cpu if host_cpu and base_cpu else None
        ceiling = ceilings.get((backend, workers))
        row["ceiling_rps"] = ceiling
        row["host_over_ceiling"] = host / ceiling if host and ceiling else None
        # The ceiling measured in each round of this scenario, just before the host.
        beside = [
            e
            for e in result["ceiling"]
            if (e["backend"], e["workers"], e.get("scenario")) == (backend, workers, scenario)
        ]
        round_rps = median([e["rps"] for e in beside]) if beside else None
        round_cpu = median(
            [1000 * e["server_cpu_s"] / e["completed"] for e in beside if e["completed"]]
        )
        row["loadavg"] = median(
            [
                e.get("loadavg_before")
                for e in result["throughput"]
                if (e["backend"], e["workers"], e["scenario"]) == (backend, workers, scenario)
            ]
        )
        row["round_ceiling_rps"] = round_rps
        row["host_over_round_ceiling"] = host / round_rps if host and round_rps else None
        row["ceiling_cpu_ms_per_req"] = round_cpu
        row["ceiling_over_host_cpu"] = round_cpu / host_cpu if round_cpu and host_cpu else None
        rows.append(row)
    scaling = {}
    for entry in result["scaling"]:
        scaling.setdefault((entry["backend"], entry["rows"]), {})[entry["target"]] = entry
    startup = {
        name: median([e["ready_s"] for e in result["startup"] if e["target"] == name])
        for name in ("host", "baseline", "ceiling")
    }
    return {
        "throughput": rows,
        "ceilings": [{"backend": b, "workers": w, "rps": r} for (b, w), r in ceilings.items()],
        "scaling": [{"backend": b, "rows": n, **v} for (b, n), v in scaling.items()],
        "startup_s": startup,
    }


def fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def markdown(result: dict[str, Any]) -> str:
    summary = result["summary"]
    out = [
        f"Runs per cell: {result['args']['runs']} (median), duration {result['args']['duration']}s "
        f"after {result['args']['warmup']}s warm-up, {CONNECTIONS} connections, "
        f"{result['args']['loadgen_processes']} load generator process(es).",
        "",
        "| backend | workers | scenario | host req/s | baseline req/s | host/baseline "
        "| ceiling req/s | host/ceiling | ceiling req/s in the round | host/ceiling in the round "
        "| host p50 / p99 ms | baseline p50 / p99 ms "
        "| server CPU ms/req host / baseline (ratio) | ceiling CPU ms/req (ceiling/host) "
        "| non-2xx | load average |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in summary["throughput"]:
        h, b = row["host"], row["baseline"]
        out.append(
            f"| {row['backend']} | {row['workers']} | {row['scenario']} | {fmt(h['rps'])} "
            f"| {fmt(b['rps'])} | {fmt(row['ratio'], 2)} | {fmt(row['ceiling_rps'])} "
            f"| {fmt(row['host_over_ceiling'], 2)} | {fmt(row.get('round_ceiling_rps'))} "
            f"| {fmt(row.get('host_over_round_ceiling'), 2)} "
            f"| {fmt(h['p50_ms'], 1)} / {fmt(h['p99_ms'], 1)} "
            f"| {fmt(b['p50_ms'], 1)} / {fmt(b['p99_ms'], 1)} "
            f"| {fmt(h['cpu_ms_per_req'], 2)} / {fmt(b['cpu_ms_per_req'], 2)} "
            f"({fmt(row['cpu_ratio'], 2)}) | {fmt(row.get('ceiling_cpu_ms_per_req'), 2)} "
            f"({fmt(row.get('ceiling_over_host_cpu'), 2)}) | {h['non_2xx']} / {b['non_2xx']} "
            f"| {fmt(row.get('loadavg'), 1)} |"
        )
    if result["parity"]:
        out += [
            "",
            "Parity (same rows, host vs baseline documents): "
            + ", ".join(
                f"{p['path']} {'identical' if p['identical'] else 'DIFFERENT'}"
                for p in result["parity"]
            ),
        ]
    if summary["scaling"]:
        out += [
            "",
            "| backend | rows | body MB | host TTFB / TTLB ms | baseline TTFB / TTLB ms "
            "| host/baseline (TTLB) | host peak over rest MB (x body) "
            "| baseline peak over rest MB (x body) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in summary["scaling"]:
            h, b = row.get("host"), row.get("baseline")
            if not h or not b:
                continue
            out.append(
                f"| {row['backend']} | {row['rows']:,} | {h['bytes'] / 1e6:.2f} "
                f"| {fmt(h['ttfb_ms'])} / {fmt(h['ttlb_ms'])} "
                f"| {fmt(b['ttfb_ms'])} / {fmt(b['ttlb_ms'])} "
                f"| {fmt(h['ttlb_ms'] / b['ttlb_ms'], 2)} "
                f"| {h['peak_over_rest_bytes'] / 1e6:.1f} ({fmt(h['peak_over_body'], 1)}) "
                f"| {b['peak_over_rest_bytes'] / 1e6:.1f} ({fmt(b['peak_over_body'], 1)}) |"
            )
    if result["startup"]:
        s = summary["startup_s"]
        out += [
            "",
            "Startup to first 200 on /api/_health (median s): "
            f"host {fmt(s['host'], 2)}, baseline {fmt(s['baseline'], 2)}, "
            f"ceiling {fmt(s['ceiling'], 2)}",
        ]
    if result["compile"]:
        out += [
            "",
            "| entities | actions | projections | build_graph s (with plugin loading) "
            "| build_schema s | compile_graph.py s (20 fields, compile + hash) |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for entry in result["compile"]:
            out.append(
                f"| {entry['entities']:,} | {entry['actions']:,} | "
                f"{entry['projections']:,} | {entry['compile_median_s']:.3f} | "
                f"{entry['schema_median_s']:.3f} | {fmt(entry.get('compile_graph_median_s'), 3)} |"
            )
    return "\n".join(out)


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Tessera benchmarks (see docs/benchmarks.md)")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny counts, SQLite only, 1 worker, 1 run (< 60 s)"
    )
    parser.add_argument("--scenarios", nargs="+", choices=ALL_SCENARIOS, default=None)
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    parser.add_argument(
        "--backend", nargs="+", choices=("sqlite", "postgresql"), default=["sqlite", "postgresql"]
    )
    parser.add_argument("--duration", type=float, default=5.0, help="seconds measured per cell")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--loadgen-processes", type=int, default=1)
    parser.add_argument(
        "--full-matrix",
        action="store_true",
        help="every throughput scenario on every backend/worker combination "
        "(default: create and list100 beyond the first combination)",
    )
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument(
        "--report",
        type=Path,
        default=None,
        help="only print the Markdown summary of an existing result file",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.backend, args.workers, args.runs = ["sqlite"], [1], 1
        args.duration, args.warmup = 1.5, 0.3  # long enough on a loaded CI machine
    if args.scenarios is None:
        args.scenarios = list(ALL_SCENARIOS)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report is not None:
        result = json.loads(args.report.read_text())
        result["summary"] = summarise(result)
        print(markdown(result))
        return 0
    bench = Bench(args)
    wanted = [s for s in THROUGHPUT if s in args.scenarios]
    phases: list[tuple[str, Callable[[], None]]] = []
    first = True
    for backend in args.backend:
        for workers in args.workers:
            chosen = (
                wanted if first or args.full_matrix else [s for s in wanted if s in MATRIX_DEFAULT]
            )
            first = False
            if chosen:
                phases.append(
                    (
                        f"throughput {backend} w{workers}",
                        lambda b=backend, w=workers, c=chosen: bench.throughput(b, w, c),
                    )
                )
    if "scaling" in args.scenarios:
        for backend in args.backend:
            phases.append((f"scaling {backend}", lambda b=backend: bench.scaling(b)))
    if "startup" in args.scenarios:
        phases.append(("startup", bench.startup))
    if "compile" in args.scenarios:
        phases.append(("compile", bench.compile))
    started = time.perf_counter()
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    output = args.output or RESULTS_DIR / (
        time.strftime("%Y%m%d-%H%M%S") + ("-smoke" if args.smoke else "") + ".json"
    )
    result = bench.result

    def save() -> None:
        result["elapsed_s"] = time.perf_counter() - started
        result["summary"] = summarise(result)
        output.write_text(json.dumps(result, indent=1, default=str))

    try:
        for title, phase in phases:
            log(f"== {title}")
            phase()
            save()  # a failure later keeps what was measured
    finally:
        bench.cleanup()
    print(markdown(result))
    print(f"\nResult file: {output} ({result['elapsed_s']:.0f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
