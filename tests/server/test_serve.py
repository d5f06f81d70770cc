"""``tessera serve`` as a real process: ``--host``/``--port``, and a worker lost to
``kill -9`` ends the server with a non-zero status (for a supervisor to restart it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .conftest import free_port

# Process supervision, not storage (a SQLite file of the test's own on every backend): the
# module runs once, in the SQLite environments.
pytestmark = [pytest.mark.slow, pytest.mark.backend_neutral]


def _serve(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "serve.log"
    # Process supervision, not storage: a SQLite file of the test's own on every backend.
    database = f"sqlite:///{tmp_path / 'serve.db'}"
    env = {**os.environ, "TESSERA_DATABASE_URL": database, "TESSERA_ACCESS_LOG": "0"}
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "host", "serve", *args],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
        )
    return process, log


def _wait_healthy(process: subprocess.Popen[bytes], log: Path, url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(f"{url}/api/_health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    process.kill()
    raise AssertionError(f"server did not start:\n{log.read_text()}")


def _workers(master: int) -> list[int]:
    """The pids of the master's Hypercorn workers (not multiprocessing's resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        if parent == master and b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return found


def test_serve_takes_host_and_port(tmp_path: Path) -> None:
    port = free_port()
    process, log = _serve(tmp_path, "--host", "127.0.0.1", "--port", str(port))
    try:
        _wait_healthy(process, log, f"http://127.0.0.1:{port}")
    finally:
        process.send_signal(signal.SIGTERM)
        status = process.wait(30)
    assert status == 0, log.read_text()


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs Linux /proc")
def test_a_worker_killed_with_sigkill_ends_the_server_non_zero(tmp_path: Path) -> None:
    port = free_port()
    process, log = _serve(tmp_path, "--port", str(port), "--workers", "2")
    try:
        _wait_healthy(process, log, f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 30
        while len(workers := _workers(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(workers) == 2, workers
        os.kill(workers[0], signal.SIGKILL)
        status = process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert status == 128 + signal.SIGKILL, log.read_text()
    assert f"worker {workers[0]} died (exit status 137)" in log.read_text()
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()], "workers left behind"
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{port}/api/_health", timeout=1)
