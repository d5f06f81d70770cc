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
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode, urlsplit, urlunsplit

import pytest
import pytest_asyncio

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


class _OwnTenant:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<the test's tenant>"


_OWN_TENANT = _OwnTenant()


class TenantHost(Host):
    """One test's view of a host shared by the whole pytest session (or xdist worker): every
    client it makes, and :meth:`audit_trail`, default to :attr:`tenant`, a tenant no other
    test uses. The tenant is the unit of isolation of the product, so a test that needs
    nothing but its own rows needs nothing more (plugin API 1.9).

    The host stays up for the session: :meth:`stop` refuses, and settings are fixed when the
    host starts (tests that change a setting or stop a host use :class:`TesseraHarness`).
    """

    def __init__(self, shared: Host, tenant: str, tenants: Iterable[str]) -> None:
        super().__init__(shared.app, shared._test_client, shared._prefix, shared.database_url)
        self.tenant = tenant
        """This test's tenant (unique in the session)."""
        self._tenants = iter(tenants)

    def new_tenant(self) -> str:
        """Another tenant of this test's own (for tests of tenant isolation)."""
        return next(self._tenants)

    async def stop(self) -> None:
        """Refused: a shared host runs until the session ends."""
        raise RuntimeError(
            "a shared host (tessera_shared) runs until the pytest session ends: start the "
            "host with the 'tessera' fixture to stop it in a test"
        )

    async def audit_trail(
        self, entity: str, id: str, *, tenant: str | None = None, limit: int = 1000
    ) -> list[HistoryRecord]:
        """Like :meth:`Host.audit_trail`, in this test's tenant by default."""
        return await super().audit_trail(
            entity, id, tenant=self.tenant if tenant is None else tenant, limit=limit
        )

    def client(
        self,
        *,
        tenant: str | _OwnTenant | None = _OWN_TENANT,
        actor: str | None = None,
        roles: Iterable[str] | None = None,
    ) -> Client:
        """A client acting as ``actor`` with ``roles``, in this test's tenant unless
        ``tenant`` names another (``None``: no ``X-Tenant-ID`` header, as for :class:`Host`)."""
        chosen = self.tenant if isinstance(tenant, _OwnTenant) else tenant
        return Client(self._test_client, self._prefix, tenant=chosen, actor=actor, roles=roles)


SHARED_POOL: Final[Mapping[str, float]] = {
    "pg_pool_min": 1,
    "pg_pool_max": 4,
    "pg_pool_idle_s": 10.0,
}
"""A shared host's PostgreSQL pool, unless its settings say otherwise: it lives for the whole
session beside many others (one per set of plugins and settings, per xdist worker), and a
pool keeps what it opened (for 300 s idle by default), so ten connections each would exhaust
the server's 100; its idle connections close after 10 s (the pg suite of one run held up to
81 with the default)."""


class SharedHosts:
    """The hosts of one pytest session (one per xdist worker), each started on first use for
    one set of plugins and settings, on a database of its own, and stopped when the session
    ends. Tests reach it through the ``tessera_shared`` fixture."""

    def __init__(self, new_database: Any) -> None:
        self._new_database = new_database
        # Each host is kept with its ``extra`` plugins: their ids are part of the key.
        self._hosts: dict[tuple[object, ...], tuple[Host, Any]] = {}
        self._stack = AsyncExitStack()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tenants = 0
        self.session_tag = secrets.token_hex(2)

    def tenants(self, test_tag: str) -> Iterator[str]:
        """Fresh tenant ids, unique in the session (``s<tag>-<n>-<test>``)."""
        while True:
            self._tenants += 1
            yield f"s{self.session_tag}-{self._tenants}-{test_tag}"[:64]

    async def host(
        self,
        plugins: Sequence[str] | None,
        extra: Sequence[tuple[str, object]],
        entry_points: bool,
        settings: Mapping[str, Any],
    ) -> Host:
        """The shared host of this plugin set and settings (started on first use)."""
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif loop is not self._loop:
            raise RuntimeError(
                "tessera_shared: this test runs on another event loop than the shared hosts; "
                "run the tests on the session's loop (pytest ini options "
                "asyncio_default_test_loop_scope = session and "
                "asyncio_default_fixture_loop_scope = session)"
            )
        key = (
            None if plugins is None else tuple(plugins),
            tuple((name, id(plugin)) for name, plugin in extra),
            entry_points,
            tuple(sorted((name, repr(value)) for name, value in settings.items())),
        )
        found = self._hosts.get(key)
        if found is not None:
            return found[0]
        url = await self._new_database()
        harness = TesseraHarness(self._stack, url)
        host = await harness.start(
            plugins=plugins, extra=extra, entry_points=entry_points, **{**SHARED_POOL, **settings}
        )
        self._hosts[key] = (host, extra)
        return host

    async def aclose(self) -> None:
        await self._stack.aclose()
        self._hosts.clear()


class SharedHarness:
    """What the ``tessera_shared`` fixture gives a test: :meth:`start` returns a
    :class:`TenantHost` on a host shared with every test of the session that asks for the
    same plugins and settings, in a tenant of the test's own (plugin API 1.9)."""

    def __init__(self, hosts: SharedHosts, test_tag: str) -> None:
        self._hosts = hosts
        self._tenants = hosts.tenants(test_tag)

    async def start(
        self,
        *,
        plugins: Sequence[str] | None = None,
        extra: Sequence[tuple[str, object]] = (),
        entry_points: bool = True,
        **settings: Any,
    ) -> TenantHost:
        """Like :meth:`TesseraHarness.start`, but the host is shared: ``extra`` plugin
        objects must be the same objects in every test that shares it (module-level ones,
        not one per test), and nothing may change them."""
        if plugins is not None and not plugins:
            entry_points = False
        shared = await self._hosts.host(plugins, extra, entry_points, settings)
        return TenantHost(shared, next(self._tenants), self._tenants)


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


def _test_tag(name: str) -> str:
    cleaned = "".join(c if c.isalnum() else "-" for c in name.removeprefix("test_"))
    return cleaned.strip("-")[:24] or "test"


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def tessera_shared_hosts(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[SharedHosts]:
    """The session's shared hosts (see ``tessera_shared``), each on a database of its own:
    a SQLite file, or with ``TESSERA_TEST_BACKEND=postgresql`` a database created next to the
    session's and dropped at the end."""
    postgres = os.environ.get("TESSERA_TEST_BACKEND") == "postgresql"
    base = os.environ.get("TESSERA_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    created: list[str] = []

    async def new_database() -> str:
        if not postgres:
            folder = tmp_path_factory.mktemp("tessera-shared")
            return f"sqlite:///{folder / 'tessera.db'}"
        name = f"{urlsplit(base).path.lstrip('/')}_shared{len(created)}"[:63]
        await _admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await _admin(base, f'CREATE DATABASE "{name}"')
        created.append(name)
        return _with_database(base, name)

    async def drop(name: str) -> None:
        try:
            await _admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except Exception as exc:  # the server went away: say so, the run goes on
            sys.stderr.write(f"tessera: could not drop the test database {name}: {exc}\n")

    hosts = SharedHosts(new_database)
    try:
        yield hosts
    finally:
        await hosts.aclose()
        # All at once: PostgreSQL (15) makes an immediate checkpoint for every DROP DATABASE
        # and waits for it; drops made together share one. One after the other, a session's
        # dozen shared databases took 29 and 37 s at the end of each xdist worker of the pg
        # environment while the other lane wrote (docs/testing.md, "What it costs").
        await asyncio.gather(*(drop(name) for name in created))


@pytest.fixture
def tessera_shared(
    tessera_shared_hosts: SharedHosts, request: pytest.FixtureRequest
) -> SharedHarness:
    """Hosts shared by the session, a fresh tenant per test: ``await
    tessera_shared.start(plugins=[...])`` returns a :class:`TenantHost` (plugin API 1.9).
    The tests run on the session's event loop (``asyncio_default_test_loop_scope`` and
    ``asyncio_default_fixture_loop_scope`` set to ``session``)."""
    return SharedHarness(tessera_shared_hosts, _test_tag(request.node.name))
