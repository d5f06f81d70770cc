"""Shared fixtures and the suite's organisation (docs/testing.md). The ``tessera`` and
``tessera_shared`` harness fixtures come from ``plugin_api.testing``."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import pytest
from databases import Database

from plugin_api.testing import (
    DEFAULT_POSTGRES_URL,
    Host,
    SharedHarness,
    TenantHost,
    TesseraHarness,
)

SHARED_SESSION_FIXTURES = {
    "evo_installs": "evo-installs",
    "plugin_dists": "plugin-dists",
    "browser": "console-browser",
    "corpus_site": "compat-corpus",
}
"""Fixtures that are expensive and shared by several tests (session or module scope): under
pytest-xdist (``--dist loadgroup``) the tests using one run on the same worker, so it is made
once per run rather than once per worker."""

BACKEND_FIXTURES = frozenset({"tessera", "tessera_shared", "tessera_database_url"})
"""Fixtures that put a test on the run's backend: a test using one cannot be
``backend_neutral``."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group the tests that share an expensive fixture (for xdist), and refuse a
    ``backend_neutral`` mark on a test that reaches the backend through the harness."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for fixture, group in SHARED_SESSION_FIXTURES.items():
            if fixture in names:
                item.add_marker(pytest.mark.xdist_group(group))
                break
        if item.get_closest_marker("backend_neutral") and names & BACKEND_FIXTURES:
            raise pytest.UsageError(
                f"{item.nodeid} is marked backend_neutral but uses "
                f"{sorted(names & BACKEND_FIXTURES)}: it depends on the backend of the run"
            )


@pytest.fixture
async def samples(tessera_shared: SharedHarness) -> TenantHost:
    """The two sample plugins on the session's shared host, in a tenant of the test's own
    (what a test that needs nothing else takes: docs/testing.md)."""
    return await tessera_shared.start(plugins=["helpdesk", "billing"])


@pytest.fixture
async def own_host(tessera: TesseraHarness) -> Host:
    """The two sample plugins on a host and a database of the test's own (for tests that read
    the whole database, or act in a literal tenant such as ``t1``)."""
    return await tessera.start(plugins=["helpdesk", "billing"])


@pytest.fixture
async def host(samples: TenantHost) -> TenantHost:
    """The sample plugins for the tests written before shared hosts: the same as
    ``samples``. A test that needs a host of its own starts one with ``tessera``."""
    return samples


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A PostgreSQL database of the test's own on the test server, dropped after (for tests
    marked ``postgres`` that alter or lock a whole database)."""
    base = os.environ.get("TESSERA_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    name = f"tessera_own_{secrets.token_hex(4)}"
    async with Database(base, min_size=1, max_size=1) as admin:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield urlunsplit(urlsplit(base)._replace(path=f"/{name}"))
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
