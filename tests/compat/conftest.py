"""The compatibility corpus, installed and served once per session (docs/compatibility.md).

The corpus plugins are installed with pip into a directory of their own, never into this
environment: the other tests load "every installed plugin" and must keep seeing the same
ones. Only subprocesses given that directory on ``PYTHONPATH`` see them: the plugins' own
test runs, ``tessera check`` and one ``tessera serve``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

DISTS = Path(__file__).parent / "dists"
collect_ignore_glob = ["dists/*"]  # the plugins' own tests run in their own sessions
CORPUS: Mapping[str, str] = {"chores": "1.0", "library": "1.3", "tracker": "1.5", "expenses": "1.7"}
"""Each corpus plugin (its entry-point name, its folder under ``dists``) and the plugin API
whose documentation it was written against."""


def corpus_env(site: Path, **settings: str) -> dict[str, str]:
    """This environment without its ``TESSERA_*`` settings (the test backend's kept), with
    the corpus on ``PYTHONPATH`` and ``settings`` added."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TESSERA_") or key.startswith("TESSERA_TEST_")
    }
    return {**env, "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1", **settings}


@pytest.fixture(scope="session")
def corpus_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four distributions, installed by one pip call (no dependencies, no build
    isolation: hatchling comes with the test extra) into a directory of their own."""
    pytest.importorskip("hatchling", reason="--no-build-isolation builds with hatchling")
    site = tmp_path_factory.mktemp("compat-site")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--no-input",
            "--target",
            str(site),
            *(str(DISTS / name) for name in CORPUS),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return site


async def _admin(url: str, statement: str) -> None:
    from databases import Database

    async with Database(url, min_size=1, max_size=1) as db:
        await db.execute(statement)


@pytest.fixture(scope="session")
async def corpus_database(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """The served corpus's database: a SQLite file, or with ``TESSERA_TEST_BACKEND=postgresql``
    a database of its own next to the session's, dropped at the end."""
    if os.environ.get("TESSERA_TEST_BACKEND") != "postgresql":
        yield f"sqlite:///{tmp_path_factory.mktemp('compat-db') / 'corpus.db'}"
        return
    base = os.environ.get("TESSERA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
    name = f"{urlsplit(base).path.lstrip('/')}_compat"[:63]
    await _admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await _admin(base, f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(base)._replace(path=f"/{name}"))
    finally:
        await _admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Caller:
    """Requests to the served API as one identity (tenant, actor, roles)."""

    def __init__(self, http: httpx.Client, tenant: str, actor: str, roles: str) -> None:
        self.http = http
        self.tenant = tenant
        self.headers = {"X-Tenant-ID": tenant, "X-Actor-Id": actor, "X-Actor-Roles": roles}

    def get(self, path: str, params: Mapping[str, str] | None = None) -> httpx.Response:
        return self.http.get(path, params=params, headers=self.headers)

    def post(
        self, path: str, body: object, params: Mapping[str, str] | None = None
    ) -> httpx.Response:
        return self.http.post(path, json=body, params=params, headers=self.headers)


@dataclass(frozen=True)
class Served:
    """``tessera serve`` running the corpus (and nothing else) on ``database``."""

    base_url: str
    database: str
    site: Path
    log: Path
    http: httpx.Client

    def caller(self, tenant: str, actor: str, roles: str) -> Caller:
        return Caller(self.http, tenant, actor, roles)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def served(
    corpus_site: Path, corpus_database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """One ``tessera serve`` (Hypercorn under its master, one worker) for the session."""
    port = _free_port()
    folder = tmp_path_factory.mktemp("compat-serve")
    log = folder / "serve.log"
    env = corpus_env(
        corpus_site,
        TESSERA_DATABASE_URL=corpus_database,
        TESSERA_PLUGINS_ONLY=",".join(CORPUS),
        TESSERA_ACCESS_LOG="0",
        TESSERA_CONSOLE="off",
    )
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "host", "serve", "--port", str(port)],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=folder,
        )
    base_url = f"http://127.0.0.1:{port}"
    http = httpx.Client(base_url=f"{base_url}/api", timeout=30)
    server = Served(base_url, corpus_database, corpus_site, log, http)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(f"{server.base_url}/api/_health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"tessera serve did not start:\n{log.read_text()}"
            time.sleep(0.1)
        yield server
    finally:
        http.close()
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
