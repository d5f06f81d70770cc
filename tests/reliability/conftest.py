"""The reliability suite: real Hypercorn processes, real databases, loopback HTTP.

Every test here is marked ``reliability`` and runs on the backend chosen by
``TESSERA_TEST_BACKEND`` (SQLite by default, ``postgresql`` for the PostgreSQL server of
``TESSERA_TEST_POSTGRES_URL``). Each test gets a fresh database: a new SQLite file, or an
emptied ``public`` schema. With ``TESSERA_TEST_AUTH_MODE=token`` every host runs in token mode
(``TESSERA_AUTH_MODE=token``, a static RSA key) and :func:`identity` sends a signed bearer
token instead of the identity headers.

The figures each test produces (requests sent, conflicts seen, faults injected, inputs tried,
rows lost) are collected by the ``figures`` fixture, printed at the end of the run and
written as JSON to ``<pytest basetemp>/reliability-figures.json`` (and to the file named by
``TESSERA_RELIABILITY_FIGURES`` when set).
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from databases import Database

from plugin_api.testing import DEFAULT_POSTGRES_URL

BACKEND = "postgresql" if os.environ.get("TESSERA_TEST_BACKEND") == "postgresql" else "sqlite"
AUTH_MODE = "token" if os.environ.get("TESSERA_TEST_AUTH_MODE") == "token" else "headers"
POSTGRES_URL = os.environ.get("TESSERA_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
PREFIX = "/api"

_TOKEN_HEADER = ", Authorization" if AUTH_MODE == "token" else ""
CORS = {
    "access-control-allow-origin": "*",
    "access-control-allow-methods": "GET, POST, OPTIONS",
    "access-control-allow-headers": "Content-Type, X-Tenant-ID, X-Actor-Id, X-Actor-Roles"
    + _TOKEN_HEADER,
    "access-control-max-age": "600",
}
SECURITY = {
    "cache-control": "no-store",
    "vary": "X-Tenant-ID, X-Actor-Id, X-Actor-Roles" + _TOKEN_HEADER,
    "x-content-type-options": "nosniff",
}
"""Security headers every response carries too (among others; docs/http.md)."""

TICKET_TABLE = "helpdesk__ticket"
INVOICE_TABLE = "billing__invoice"
AUDIT_TABLE = "tessera_audit"

_FIGURES: dict[str, dict[str, Any]] = {}


# -- identities --------------------------------------------------------------------------------


def identity(tenant: str, actor: str = "rel", roles: Sequence[str] = ()) -> dict[str, str]:
    """The identity headers, or in token mode a bearer token carrying the same identity."""
    if AUTH_MODE == "token":
        return {"Authorization": f"Bearer {bearer(tenant, actor, tuple(roles))}"}
    return {"X-Tenant-ID": tenant, "X-Actor-Id": actor, "X-Actor-Roles": ",".join(roles)}


ISSUER = "https://issuer.reliability.test/"
AUDIENCE = "tessera-reliability"


@functools.lru_cache(maxsize=1)
def _signing_key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@functools.lru_cache(maxsize=4096)
def bearer(tenant: str, actor: str, roles: tuple[str, ...], **extra: Any) -> str:
    """A token of the test issuer for this identity (valid for an hour)."""
    import jwt

    now = int(time.time())
    claims: dict[str, Any] = {"iss": ISSUER, "aud": AUDIENCE, "sub": actor, "tenant_id": tenant}
    claims.update({"roles": list(roles), "iat": now, "exp": now + 3600, **extra})
    return jwt.encode(claims, _signing_key(), algorithm="RS256")


def _auth_env(directory: Path) -> dict[str, str]:
    if AUTH_MODE != "token":
        return {}
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    path = directory / "issuer.pem"
    pem = _signing_key().public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    path.write_bytes(pem)
    return {
        "TESSERA_AUTH_MODE": "token",
        "TESSERA_AUTH_KEY_FILE": str(path),
        "TESSERA_AUTH_ISSUER": ISSUER,
        "TESSERA_AUTH_AUDIENCE": AUDIENCE,
    }


def subject(tenant: str, entity: str, row_id: str) -> dict[str, str]:
    return {"tenantId": tenant, "entityFqn": entity, "identityHandle": row_id}


# -- processes ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HostProcess:
    """One ``hypercorn host.asgi:app --workers N`` process on a loopback port."""

    def __init__(
        self,
        tmp_path: Path,
        database: str,
        *,
        workers: int = 2,
        port: int | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.tmp_path = tmp_path
        self.database = database
        self.workers = workers
        self.port = port or free_port()
        self.env = dict(env or {})
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def log(self) -> Path:
        return self.tmp_path / f"hypercorn-{self.port}-{self.starts}.log"

    def spawn(self) -> None:
        """Start the process without waiting for it to serve."""
        self.starts += 1
        env = {
            **os.environ,
            "TESSERA_DATABASE_URL": self.database,
            "TESSERA_ACCESS_LOG": "0",
            **_auth_env(self.tmp_path),
            **self.env,
        }
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "hypercorn",
                    "host.asgi:app",
                    "--bind",
                    f"127.0.0.1:{self.port}",
                    "--workers",
                    str(self.workers),
                    "--graceful-timeout",
                    "10",
                ],
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=self.tmp_path,
            )

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait until every worker answers ``/_health`` (probed over fresh connections)."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"hypercorn exited at startup ({self.process.returncode}):\n"
                    f"{self.log.read_text(errors='replace')}"
                )
            try:
                answered = httpx.get(f"{self.base_url}{PREFIX}/_health", timeout=2)
                if answered.status_code == 200 and len(self.worker_pids()) >= self.workers:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                log = self.log.read_text(errors="replace")
                raise AssertionError(f"hypercorn did not start in {timeout}s:\n{log}")
            time.sleep(0.1)

    def start(self) -> HostProcess:
        self.spawn()
        self.wait_ready()
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def worker_pids(self) -> list[int]:
        """PIDs of the worker children (not multiprocessing's resource tracker)."""
        assert self.process is not None
        pids: list[int] = []
        task_dir = Path(f"/proc/{self.process.pid}/task")
        try:
            tids = list(task_dir.iterdir())
        except FileNotFoundError:
            return []
        for tid in tids:
            try:
                children = (tid / "children").read_text().split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            for child in children:
                try:
                    cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
                except FileNotFoundError:
                    continue
                if b"spawn_main" in cmdline:
                    pids.append(int(child))
        return sorted(pids)

    def kill_worker(self) -> int:
        """``kill -9`` one worker child; return its pid."""
        pids = self.worker_pids()
        assert pids, "no worker process found"
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]

    def stop(self, timeout: float = 20.0) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        # A master killed without its children would leave them serving: reap stragglers.
        for pid in self.worker_pids() if self.process.poll() is None else []:
            os.kill(pid, signal.SIGKILL)

    def wait_exit(self, timeout: float) -> bool:
        assert self.process is not None
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
        return httpx.AsyncClient(
            base_url=self.base_url + PREFIX, timeout=60, limits=limits, **kwargs
        )


@pytest.fixture
def database(tessera_database_url: str) -> str:
    """A fresh database of the selected backend (the harness empties PostgreSQL)."""
    return tessera_database_url


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[list[HostProcess]]:
    """Processes started by a test; every one is stopped when the test ends."""
    started: list[HostProcess] = []
    yield started
    for host in started:
        host.stop()


@pytest.fixture
def start_host(tmp_path: Path, database: str, hosts: list[HostProcess]) -> Any:
    def start(*, workers: int = 2, port: int | None = None) -> HostProcess:
        host = HostProcess(tmp_path, database, workers=workers, port=port)
        hosts.append(host)
        return host.start()

    return start


# -- direct database access --------------------------------------------------------------------


async def query(
    url: str, sql: str, values: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Run one read query on the database directly (not through the service)."""
    async with Database(url) as db:
        rows = await db.fetch_all(sql, dict(values) if values else None)
    return [dict(row._mapping) for row in rows]


async def table_names(url: str) -> list[str]:
    """The tables of the database (PostgreSQL: of the ``public`` schema), sorted."""
    if BACKEND == "postgresql":
        sql = "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'"
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
    return sorted(row["name"] for row in await query(url, sql))


async def audit_rows(url: str) -> list[dict[str, Any]]:
    """Every audit record in commit order, with ``inputs``/``outputs`` decoded."""
    rows = await query(url, f"SELECT * FROM {AUDIT_TABLE} ORDER BY seq")
    for row in rows:
        row["inputs"] = json.loads(row["inputs"])
        row["outputs"] = json.loads(row["outputs"])
    return rows


# -- HTTP helpers ------------------------------------------------------------------------------


def assert_envelope(response: httpx.Response) -> None:
    """An error response: the error envelope, JSON, with every CORS header."""
    for name, value in CORS.items():
        assert response.headers.get(name) == value, (name, response.status_code, response.text)
    assert response.headers.get("content-type", "").startswith("application/json"), response
    body = response.json()
    assert body["ok"] is False, body
    assert isinstance(body["error"]["kind"], str) and body["error"]["kind"], body
    assert isinstance(body["error"]["message"], str), body


async def list_items(
    client: httpx.AsyncClient, projection: str, tenant: str
) -> list[dict[str, Any]]:
    # An accountant: the invoices have a read floor (clerks, accountants).
    headers = identity(tenant, roles=("accountant",))
    response = await client.get(f"/projections/{projection}", headers=headers)
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["data"]["items"]
    return items


# -- figures -----------------------------------------------------------------------------------


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """A dict the test fills with its figures; collected under the test's id and backend,
    with the test's wall time (``seconds``, server start-up included)."""
    record: dict[str, Any] = {"backend": BACKEND}
    started = time.monotonic()
    yield record
    record["seconds"] = round(time.monotonic() - started, 1)
    # Through the report, so that the figures of pytest-xdist's workers reach the controller.
    plain = json.loads(json.dumps(record, default=str))
    request.node.user_properties.append(("reliability_figures", plain))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "teardown":
        return
    for name, value in report.user_properties:
        if name == "reliability_figures" and isinstance(value, dict):
            _FIGURES[f"{report.nodeid} [{value['backend']}]"] = value


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not _FIGURES or hasattr(session.config, "workerinput"):  # the controller writes them
        return
    text = json.dumps(_FIGURES, indent=2, sort_keys=True, default=str)
    targets = [session.config._tmp_path_factory.getbasetemp() / "reliability-figures.json"]  # type: ignore[attr-defined]
    if os.environ.get("TESSERA_RELIABILITY_FIGURES"):
        targets.append(Path(os.environ["TESSERA_RELIABILITY_FIGURES"]))
    for target in targets:
        target.write_text(text + "\n")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _FIGURES:
        return
    terminalreporter.section("reliability figures")
    for name, record in _FIGURES.items():
        shown = ", ".join(f"{key}={value}" for key, value in record.items() if key != "backend")
        terminalreporter.write_line(f"{name}: {shown}")
