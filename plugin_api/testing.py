"""Test harness for plugin authors (a pytest plugin, active wherever Tessera is installed).

It boots a real host (the real app, real storage, real plugin loading) on a fresh database
per test and gives an HTTP client that speaks the interface, with tenant and roles::

    async def test_create(tessera):
        host = await tessera.start(plugins=["helpdesk"])
        client = host.client(tenant="acme", actor="alice", roles=["requester"])
        result = await client.action("helpdesk.ticket.create", inputs={"title": "Printer"})
        assert result.status == 200
        ticket = result.outputs["id"]
        detail = await client.projection("helpdesk.ticket.detail", subject=ticket)
        assert detail.item["requester"] == "alice"

A :class:`Result` carries ``status``, ``json`` and ``headers``, plus shortcuts: ``outputs``
(of a successful action), ``error_kind`` (of an error envelope), and ``items`` / ``item`` (the
rows of a list / detail projection).

Plugin API 1.8 adds what a plugin's tests need beyond requests: ``await
host.deliveries_settled()`` (wait until every event delivery is made), ``await
host.audit_trail(entity, id)`` and ``client.history(projection, id)`` (a row's audit
records), ``await host.stop()`` and ``await tessera.migrate(...)`` (fill a database with one
version of the plugin, migrate it, check it with the next, in one test), and
:data:`plugin_api.settings.HARNESS_SETTINGS` (the settings ``start`` takes).

Fixtures:

* ``tessera`` -- a :class:`TesseraHarness`: ``await tessera.start(...)`` boots a host.
* ``tessera_database_url`` -- the database of the test: a SQLite file in ``tmp_path`` or, when
  ``TESSERA_TEST_BACKEND=postgresql``, a PostgreSQL database with an emptied ``public`` schema.

With ``TESSERA_TEST_BACKEND=postgresql`` each pytest session creates a database of its own
next to the one ``TESSERA_TEST_POSTGRES_URL`` names (``tessera_test_<pid>_<random>``), points
``TESSERA_TEST_POSTGRES_URL`` at it for the session and its subprocesses, and drops it at the
end, so sessions running at the same time never empty each other's tables. If the role may not
create databases, the session uses the named database itself (and says so on stderr).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import pytest

from plugin_api.data import HistoryRecord

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


@dataclass(frozen=True, slots=True)
class Result:
    """An HTTP answer: status, decoded JSON body and headers."""

    status: int
    json: Any
    headers: Mapping[str, str]
    body: bytes = b""
    """The raw response body."""

    @property
    def outputs(self) -> dict[str, Any]:
        """``outputs`` of a successful action (fails the test otherwise)."""
        assert self.status == 200 and self.json["ok"] is True, self.json
        outputs: dict[str, Any] = self.json["outputs"]
        return outputs

    @property
    def error_kind(self) -> str | None:
        """``error.kind`` of an error envelope, else ``None``."""
        if isinstance(self.json, dict) and self.json.get("ok") is False:
            kind: str = self.json["error"]["kind"]
            return kind
        return None

    @property
    def items(self) -> list[dict[str, Any]]:
        """``data.items`` of a projection rendered in list form (fails the test otherwise)."""
        assert self.status == 200 and "items" in (self.json.get("data") or {}), self.json
        items: list[dict[str, Any]] = self.json["data"]["items"]
        return items

    @property
    def item(self) -> dict[str, Any] | None:
        """``data.item`` of a projection rendered in detail form (``None`` for an unknown
        subject; fails the test when the response is not a detail form)."""
        assert self.status == 200 and "item" in (self.json.get("data") or {}), self.json
        item: dict[str, Any] | None = self.json["data"]["item"]
        return item


class Client:
    """Calls the interface of one running host as one tenant/actor/role set."""

    def __init__(
        self,
        test_client: Any,
        prefix: str,
        *,
        tenant: str | None,
        actor: str | None,
        roles: Iterable[str] | None,
    ) -> None:
        self._client = test_client
        self._prefix = prefix
        self.tenant = tenant
        self.actor = actor
        self.roles = None if roles is None else tuple(roles)

    def as_(
        self,
        *,
        tenant: str | None = None,
        actor: str | None = None,
        roles: Iterable[str] | None = None,
    ) -> Client:
        """A client for another identity (unspecified parts are kept)."""
        return Client(
            self._client,
            self._prefix,
            tenant=self.tenant if tenant is None else tenant,
            actor=self.actor if actor is None else actor,
            roles=self.roles if roles is None else roles,
        )

    def _headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.tenant is not None:
            headers["X-Tenant-ID"] = self.tenant
        if self.actor is not None:
            headers["X-Actor-Id"] = self.actor
        if self.roles is not None:
            headers["X-Actor-Roles"] = ",".join(self.roles)
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        query: Mapping[str, str] | None = None,
    ) -> Result:
        """A raw request to ``prefix + path`` with this identity's headers."""
        merged = {**self._headers(), **(headers or {})}
        if body is not None:
            merged.setdefault("Content-Length", str(len(body)))
        response = await self._client.open(
            self._prefix + path,
            method=method,
            headers=merged,
            data=body,
            query_string=dict(query) if query else None,
        )
        raw = await response.get_data()
        import json as _json

        try:
            decoded = _json.loads(raw) if raw else None
        except ValueError:  # not one JSON document (NDJSON, CSV): ``body`` holds it
            decoded = None
        return Result(
            status=response.status_code, json=decoded, headers=dict(response.headers), body=raw
        )

    async def health(self) -> Result:
        return await self.request("GET", "/_health")

    async def projection(
        self,
        fqn: str,
        *,
        subject: str | None = None,
        query: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    ) -> Result:
        """Render projection ``fqn`` (detail form when ``subject`` is given). ``query`` adds
        query parameters (list parameters such as ``pageSize``, ``filter.state``, ``sort``;
        ``acceptSchemaVersions``); give pairs to repeat a name."""
        pairs = list(query.items() if isinstance(query, Mapping) else query or ())
        if subject is not None:
            pairs.insert(0, ("subject", subject))
        path = f"/projections/{fqn}"
        if pairs:
            path += "?" + urlencode(pairs)
        return await self.request("GET", path)

    async def action(
        self,
        fqn: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        subject: str | Mapping[str, Any] | None = None,
        entity: str | None = None,
    ) -> Result:
        """Invoke action ``fqn``. ``subject`` may be an id (a subject reference is built for
        this tenant, with ``entity`` or the FQN's first two segments) or a raw object."""
        import json as _json

        if isinstance(subject, str):
            subject = {
                "tenantId": self.tenant,
                "entityFqn": entity or fqn.rsplit(".", 1)[0],
                "identityHandle": subject,
            }
        payload = {"subject": subject, "inputs": dict(inputs or {})}
        return await self.request(
            "POST",
            f"/actions/{fqn}",
            body=_json.dumps(payload).encode(),
            headers={"Content-Type": "application/json"},
        )

    async def history(
        self, projection: str, subject: str, *, query: Mapping[str, str] | None = None
    ) -> Result:
        """The audit records of row ``subject`` through ``projection``'s history route
        (newest first, in ``items``; docs/history.md), as this client may read them."""
        pairs = [("subject", subject), *(query or {}).items()]
        return await self.request("GET", f"/projections/{projection}/history?{urlencode(pairs)}")


class Host:
    """A running host (app, lifespan and test client) on the test's database."""

    def __init__(
        self,
        app: Any,
        test_client: Any,
        prefix: str,
        database_url: str,
        stack: AsyncExitStack | None = None,
    ) -> None:
        self.app = app
        self.database_url = database_url
        self._test_client = test_client
        self._prefix = prefix
        self._stack = stack

    async def stop(self) -> None:
        """Stop this host now (it stops with the test otherwise; plugin API 1.8)."""
        if self._stack is not None:
            await self._stack.aclose()

    def _service(self) -> Any:
        return self.app.extensions["tessera.service"]()

    async def deliveries_settled(self, timeout: float = 10.0) -> dict[str, int]:
        """Wait until no event delivery is pending or waiting for a retry (every event
        committed so far reached its subscribers, or went dead); return the dead ones per
        subscriber (empty when all were delivered). Plugin API 1.8.

        :raises AssertionError: deliveries still wait after ``timeout`` seconds (named).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            waiting, dead = await self._service().deliveries_waiting()
            if not waiting:
                return dict(dead)
            if loop.time() > deadline:
                raise AssertionError(f"event deliveries still waiting after {timeout}s: {waiting}")
            await asyncio.sleep(0.02)

    async def audit_trail(
        self, entity: str, id: str, *, tenant: str = "t1", limit: int = 1000
    ) -> list[HistoryRecord]:
        """Every audit record of row ``id`` of ``entity`` in ``tenant``, newest first, with
        every field each write changed (whatever the projections show; plugin API 1.8)."""
        trail: list[HistoryRecord] = await self._service().audit_trail(tenant, entity, id, limit)
        return trail

    def client(
        self,
        *,
        tenant: str | None = "t1",
        actor: str | None = None,
        roles: Iterable[str] | None = None,
    ) -> Client:
        """A client acting as ``actor`` with ``roles`` in ``tenant``."""
        return Client(self._test_client, self._prefix, tenant=tenant, actor=actor, roles=roles)


class TesseraHarness:
    """Boots hosts for one test; everything is stopped when the test ends."""

    def __init__(self, stack: AsyncExitStack, database_url: str) -> None:
        self._stack = stack
        self.database_url = database_url

    def _settings(self, plugins: Sequence[str] | None, settings: Mapping[str, Any]) -> Any:
        from host.config import Settings

        return replace(
            Settings(database_url=self.database_url, access_log=False),
            plugins_only=tuple(plugins or ()),
            **settings,
        )

    async def start(
        self,
        *,
        plugins: Sequence[str] | None = None,
        extra: Sequence[tuple[str, object]] = (),
        entry_points: bool = True,
        **settings: Any,
    ) -> Host:
        """Start a host with the installed plugins named in ``plugins`` (entry-point names;
        all installed ones when ``None``), plus ``extra`` (name, plugin object) pairs.
        Other keyword arguments override settings
        (:data:`plugin_api.settings.HARNESS_SETTINGS`)."""
        from host.http import create_app

        config = self._settings(plugins, settings)
        if plugins is not None and not plugins:
            entry_points = False
        app = create_app(config, extra_plugins=extra, entry_points=entry_points)
        own = AsyncExitStack()
        test_app: Any = await own.enter_async_context(app.test_app())  # type: ignore[arg-type]
        self._stack.push_async_callback(own.aclose)
        return Host(app, test_app.test_client(), config.api_prefix, self.database_url, own)

    async def migrate(
        self,
        *,
        plugins: Sequence[str] | None = None,
        extra: Sequence[tuple[str, object]] = (),
        entry_points: bool = True,
        allow: Sequence[str] = (),
        **settings: Any,
    ) -> tuple[str, ...]:
        """Apply the schema evolution of this plugin set to the test's database, as
        ``tessera migrate --apply --allow KIND...`` would (stop the hosts running on it
        first); return the lines of the changes applied (plugin API 1.8). Fill the
        database with one version of a plugin (``start(extra=[("name", old)])``), migrate
        to the next, then ``start`` that one and check.

        :raises host.storage.SchemaEvolutionError: a change needs a kind not in ``allow``
            or would break the declared rules; nothing was altered.
        """
        from host.graph import build_graph
        from host.service import migrate

        config = self._settings(plugins, settings)
        if plugins is not None and not plugins:
            entry_points = False
        graph = build_graph(config, extra=extra, entry_points=entry_points)
        plan = await migrate(config, graph, allow)
        return tuple(change.line() for change in plan.changes)


_PRIVATE_DATABASE = pytest.StashKey[tuple[str, str]]()


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


async def _admin(url: str, statement: str) -> None:
    from databases import Database

    async with Database(url, min_size=1, max_size=1) as db:
        await db.execute(statement)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """With the PostgreSQL backend, give this session a database of its own (see above)."""
    if os.environ.get("TESSERA_TEST_BACKEND") != "postgresql":
        return
    base = os.environ.get("TESSERA_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    name = f"tessera_test_{os.getpid()}_{secrets.token_hex(3)}"
    try:
        asyncio.run(_admin(base, f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # no CREATEDB privilege, server down: the named database it is
        sys.stderr.write(f"tessera: using {base} itself, no private database ({exc})\n")
        return
    os.environ["TESSERA_TEST_POSTGRES_URL"] = _with_database(base, name)
    early_config.stash[_PRIVATE_DATABASE] = (base, name)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Drop the session's private PostgreSQL database."""
    private = config.stash.get(_PRIVATE_DATABASE, None)
    if private is None:
        return
    base, name = private
    os.environ["TESSERA_TEST_POSTGRES_URL"] = base
    try:
        asyncio.run(_admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    except Exception as exc:
        sys.stderr.write(f"tessera: could not drop the test database {name}: {exc}\n")


async def reset_postgres(url: str) -> None:
    """Empty the ``public`` schema of a PostgreSQL database."""
    from databases import Database

    async with Database(url) as db:
        await db.execute("DROP SCHEMA IF EXISTS public CASCADE")
        await db.execute("CREATE SCHEMA public")


@pytest.fixture
async def tessera_database_url(tmp_path: Path) -> str:
    """The database URL of this test (a fresh SQLite file, or an emptied PostgreSQL)."""
    if os.environ.get("TESSERA_TEST_BACKEND") == "postgresql":
        url = os.environ.get("TESSERA_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
        await reset_postgres(url)
        return url
    return f"sqlite:///{tmp_path / 'tessera.db'}"


@pytest.fixture
async def tessera(tessera_database_url: str) -> AsyncIterator[TesseraHarness]:
    """Boot hosts with :meth:`TesseraHarness.start`; they stop when the test ends."""
    async with AsyncExitStack() as stack:
        yield TesseraHarness(stack, tessera_database_url)
