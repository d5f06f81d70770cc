"""Hypercorn server processes for the benchmark: start, wait for health, find workers, stop.

Every target is served the same way: ``python -m hypercorn <module>:app --bind
127.0.0.1:<port> --workers N`` (Hypercorn's access log is off unless asked for; the host's
own access log is switched off with ``TESSERA_ACCESS_LOG=0``).
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent

TARGETS = {
    "host": "host.asgi:app",
    "baseline": "apps.baseline:app",
    "ceiling": "apps.ceiling:app",
}
HEALTH_PATH = "/api/_health"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def health_ok(port: int, timeout: float = 1.0) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request("GET", HEALTH_PATH)
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except OSError:
        return False


def children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return []
    found: list[int] = []
    for task in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
        except OSError:
            continue
        found.extend(int(part) for part in text.split())
    return found


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of ``pid`` in KiB."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    started: float
    expected_workers: int = 1
    ready_after: float = 0.0

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait for the first 200 on the health route (records :attr:`ready_after`), then
        for every worker process to exist."""
        deadline = self.started + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited at startup:\n{self.tail()}")
            if health_ok(self.port, timeout=0.5):
                self.ready_after = time.perf_counter() - self.started
                break
            if time.perf_counter() > deadline:
                self.stop()
                raise RuntimeError(f"{self.name} did not start:\n{self.tail()}")
            time.sleep(0.01)
        while len(self.workers()) < self.expected_workers and time.perf_counter() < deadline:
            time.sleep(0.05)
        if self.expected_workers > 1:  # the others may still be starting their app
            time.sleep(1.0)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def workers(self) -> list[int]:
        """The Hypercorn worker processes (children other than the resource tracker)."""
        pids = []
        for pid in children(self.process.pid):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"resource_tracker" not in cmdline:
                pids.append(pid)
        return pids

    def stop(self, timeout: float = 15.0) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def launch(
    name: str,
    *,
    workers: int,
    database_url: str | None,
    workdir: Path,
    env: Mapping[str, str] | None = None,
    wrapper: Sequence[str] = (),
) -> Server:
    """Start target ``name`` on a free port (see :meth:`Server.wait_ready`); ``wrapper``:
    a command the server runs under (``valgrind ...``; ``workers=0``: in one process)."""
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"{name}-{port}.log"
    full_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(BENCH_DIR), os.environ.get("PYTHONPATH")])),
        "TESSERA_ACCESS_LOG": "0",
        **(env or {}),
    }
    if database_url is not None:
        full_env["TESSERA_DATABASE_URL"] = database_url
    command = [
        *wrapper,
        sys.executable,
        "-m",
        "hypercorn",
        TARGETS[name],
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
    ]
    started = time.perf_counter()
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, env=full_env, stdout=sink, stderr=subprocess.STDOUT, cwd=workdir
        )
    return Server(name, process, port, log, started, workers)


def start(
    name: str,
    *,
    workers: int,
    database_url: str | None,
    workdir: Path,
    env: Mapping[str, str] | None = None,
) -> Server:
    """Start target ``name`` and wait until its health route answers 200."""
    server = launch(name, workers=workers, database_url=database_url, workdir=workdir, env=env)
    server.wait_ready()
    return server
