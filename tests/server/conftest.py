"""Real Hypercorn processes on loopback for end-to-end tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """A running ``hypercorn host.asgi:app`` process."""

    def __init__(self, process: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
        self.process = process
        self.base_url = base_url
        self.log = log

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=30)

    def stop(self, timeout: float = 15.0) -> float:
        """SIGTERM the server; return how long it took to exit."""
        started = time.monotonic()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError(f"server did not stop within {timeout}s") from None
        return time.monotonic() - started


def database_url(tmp_path: Path) -> str:
    if os.environ.get("TESSERA_TEST_BACKEND") == "postgresql":
        return os.environ.get(
            "TESSERA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
        )
    return f"sqlite:///{tmp_path / 'server.db'}"


@contextmanager
def run_server(
    tmp_path: Path,
    *,
    workers: int = 1,
    env: Mapping[str, str] | None = None,
    database: str | None = None,
    startup_timeout: float = 30.0,
    certificate: tuple[Path, Path] | None = None,
) -> Iterator[Server]:
    """Start hypercorn on a free loopback port and wait until ``/_health`` answers; with a
    ``(certfile, keyfile)`` pair it serves TLS (not verified by the probe)."""
    port = free_port()
    tls = (
        ["--certfile", str(certificate[0]), "--keyfile", str(certificate[1])] if certificate else []
    )
    log = tmp_path / f"server-{port}.log"
    full_env = {
        **os.environ,
        "TESSERA_DATABASE_URL": database or database_url(tmp_path),
        "TESSERA_ACCESS_LOG": "0",
        **(env or {}),
    }
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hypercorn",
                "host.asgi:app",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(workers),
                *tls,
            ],
            env=full_env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
        )
    scheme = "https" if certificate else "http"
    server = Server(process, f"{scheme}://127.0.0.1:{port}", log)
    prefix = full_env.get("TESSERA_API_PREFIX", "/api")
    deadline = time.monotonic() + startup_timeout
    try:
        while True:
            if process.poll() is not None:
                raise AssertionError(f"server exited at startup:\n{log.read_text()}")
            try:
                probe = httpx.get(f"{server.base_url}{prefix}/_health", timeout=1, verify=False)
                if probe.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"server did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            server.stop()


class Responses:
    """Reads HTTP/1.1 responses one after the other from a socket; bytes of the next
    response that arrive with the current one are kept for the next read."""

    def __init__(self, sock: socket.socket, buffer: bytes = b"") -> None:
        self._sock = sock
        self._buffer = buffer

    def _fill(self) -> bool:
        chunk = self._sock.recv(65536)
        self._buffer += chunk
        return bool(chunk)

    def next(self) -> tuple[int, dict[str, str], bytes]:
        """(status, lower-cased headers, body) of the next response; (0, {}, b"") if the
        server closed first."""
        while b"\r\n\r\n" not in self._buffer:
            if not self._fill():
                return 0, {}, b""
        head, _, rest = self._buffer.partition(b"\r\n\r\n")
        status, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)}
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            if not self._fill():
                return 0, {}, b""
            rest = self._buffer.partition(b"\r\n\r\n")[2]
        self._buffer = rest[length:]
        return int(status.split()[1]), headers, rest[:length]


@pytest.fixture
def reset_database(tessera_database_url: str) -> str:
    """An empty database for the test (the harness fixture empties PostgreSQL)."""
    return tessera_database_url
