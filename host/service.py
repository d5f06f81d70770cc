"""The running service: graph, storage, schema, runtime and reads, started and stopped as one."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from host import __version__
from host.config import Settings
from host.events.dispatcher import Outcome
from host.events.setup import Events
from host.graph.model import Graph
from host.query.cursor import CursorCodec
from host.runtime import ActionRuntime
from host.runtime.history import public_record
from host.runtime.idempotency import IdempotencyStore
from host.schemalog import summarised
from host.startup import check_database_url, mask_url, reachable
from host.storage import Schema, Storage, build_schema
from host.storage.auditchain import seal_forever, sealer_of
from host.storage.auditfiles import audit_files
from host.storage.auditlog import row_history
from host.storage.migrate import apply, startup_evolution
from host.storage.plan import Plan
from host.storage.reads import ProjectionReads
from host.storage.secrets import shared_secret
from host.storage.store import EntityStore
from host.timers import Firing, TimerScheduler
from plugin_api.data import HistoryRecord

logger = logging.getLogger("tessera.service")


@dataclass(frozen=True, kw_only=True, slots=True)
class Service:
    """Everything a request needs, for one process."""

    settings: Settings
    graph: Graph
    schema: Schema
    storage: Storage
    runtime: ActionRuntime
    entities: EntityStore
    """Rows of every entity: what the runtime, the data API and the dispatcher write through."""
    reads: ProjectionReads
    """Every projection read: lists (docs/http.md, "Lists") and details."""
    idempotency: IdempotencyStore
    purger: asyncio.Task[None]
    events: Events
    """The outbox actions write to and this process's event dispatcher (docs/events.md)."""
    sealing: asyncio.Task[None] | None = None
    """The audit sealer of this process (``TESSERA_AUDIT_SEAL_S``; docs/history.md)."""
    timers: TimerScheduler | None = None
    """This process's timer loop (docs/timers.md); ``None`` without timers or when off."""

    @classmethod
    async def start(
        cls, settings: Settings, graph: Graph, *, on_delivery: Outcome | None = None
    ) -> Service:
        """Connect to the database, prepare the schema of ``graph``, start the event
        dispatcher (``on_delivery``: called with each delivery's outcome, for metrics).

        :raises host.errors.StartupError: a known failure to reach the database, or an
            event subscriber or webhook that cannot work.
        """
        check_database_url(settings)
        storage = Storage(settings)
        schema = build_schema(graph, storage.dialect)
        entities = EntityStore(graph, schema, storage.dialect)
        events = Events(graph, settings, storage, entities, on_delivery)
        try:
            await reachable(storage.connect(), settings)
        except BaseException:
            with contextlib.suppress(Exception):
                await storage.disconnect()
            raise
        try:
            evolution = startup_evolution(graph, schema, storage.dialect)
            with summarised(evolution):
                await storage.prepare(schema, evolve=evolution)
            cursors = CursorCodec(await shared_secret(storage, "cursor"))
        except BaseException:
            await storage.disconnect()
            raise
        idempotency = IdempotencyStore(storage, schema, settings.idempotency_retention_s)
        try:
            sealer = sealer_of(storage, schema, settings) if settings.audit_seal_s > 0 else None
        except BaseException:
            await storage.disconnect()
            raise
        _log_sealing(settings)
        interval = min(settings.idempotency_retention_s, 3600)
        plugins = ", ".join(f"{p.name} {p.version}" if p.version else p.name for p in graph.plugins)
        for warning in graph.warnings:
            logger.warning("graph: %s", warning)
        logger.info(
            "started: tessera %s, graph %s, database %s (%s), plugins: %s",
            __version__,
            graph.hash,
            storage.dialect.name,
            mask_url(settings.database_url),
            plugins or "none",
            extra={
                "event": "started",
                "version": __version__,
                "graph_hash": graph.hash,
                "dialect": storage.dialect.name,
                "plugins": {p.name: p.version for p in graph.plugins},
            },
        )
        runtime = ActionRuntime(graph, storage, schema, events.outbox, entities, events.data)
        service = cls(
            settings=settings,
            graph=graph,
            schema=schema,
            storage=storage,
            runtime=runtime,
            entities=entities,
            reads=ProjectionReads(graph, storage, schema, cursors),
            idempotency=idempotency,
            purger=asyncio.ensure_future(idempotency.purge_forever(interval)),
            events=events,
            sealing=None
            if sealer is None
            else asyncio.ensure_future(seal_forever(sealer, settings.audit_seal_s)),
            timers=_timer_loop(settings, graph, storage, runtime),
        )
        events.start()
        if service.timers is not None:
            service.timers.start()
        return service

    async def audit_trail(
        self, tenant: str, entity: str, row_id: str, limit: int
    ) -> list[HistoryRecord]:
        """The row's audit records, newest first, every field each write changed (for the
        test harness: no read access applies)."""
        storage = self.storage
        entries = await row_history(
            storage, storage.dialect, self.schema.audit.name, tenant, entity, row_id, None, limit
        )
        return [public_record(entry) for entry in entries]

    async def deliveries_waiting(self) -> tuple[dict[str, int], dict[str, int]]:
        """Per subscriber: the deliveries pending or waiting for a retry, and the dead ones
        (only subscribers that have some)."""
        stats = await self.events.store.stats()
        waiting = {s.subscriber: s.pending + s.failed for s in stats if s.pending + s.failed}
        return waiting, {s.subscriber: s.dead for s in stats if s.dead}

    async def stop(self) -> None:
        """Stop the event dispatcher and the key purge, finish units of work in flight and
        close the database."""
        await self.events.stop()
        if self.timers is not None:
            await self.timers.stop()
        for task in (self.purger, self.sealing):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.storage.disconnect()
        logger.info(
            "stopped: tessera %s, graph %s",
            __version__,
            self.graph.hash,
            extra={"event": "stopped", "version": __version__, "graph_hash": self.graph.hash},
        )


def _timer_loop(
    settings: Settings, graph: Graph, storage: Storage, runtime: ActionRuntime
) -> TimerScheduler | None:
    """The timer loop (not started), unless there are no timers or ``TESSERA_TIMERS_POLL`` is
    ``off``."""
    if not graph.timers.by_name or settings.timers_poll <= 0:
        return None
    firing = Firing(graph, storage, runtime)
    return TimerScheduler(firing, settings.timers_poll, settings.timers_retention)


def _log_sealing(settings: Settings) -> None:
    """One start-log line on the audit sealer: where its key and checkpoints are, and what
    that protects against (docs/security.md)."""
    files = audit_files(settings)
    if settings.audit_seal_s <= 0:
        logger.warning(
            "audit: sealing is off in this process (TESSERA_AUDIT_SEAL_S=0): audit verify "
            "fails on records left unsealed unless another process seals them"
        )
    elif files.checkpoints is None:
        logger.info(
            "audit: sealing every %g s, no signed checkpoints: set TESSERA_DATA_DIR or "
            "TESSERA_AUDIT_CHECKPOINTS and TESSERA_AUDIT_KEY_FILE (docs/history.md)",
            settings.audit_seal_s,
        )
    elif files.defaulted:
        logger.info(
            "audit: sealing every %g s; key %s and checkpoints %s are beside the data: "
            "against this machine's own administrator ship them elsewhere (docs/history.md, "
            '"Tamper evidence")',
            settings.audit_seal_s,
            files.key,
            files.checkpoints,
        )


async def migrate(settings: Settings, graph: Graph, allow: Iterable[str]) -> Plan:
    """Apply the schema evolution of ``graph`` to the database of ``settings``, as ``tessera
    migrate --apply --allow ...`` does (the test harness's migration between two versions
    of a plugin); return the plan applied."""
    storage = Storage(settings)
    await storage.connect()
    try:
        schema = build_schema(graph, storage.dialect)
        return await apply(storage, graph, schema, allow, versioned=settings.migration_versions)
    finally:
        await storage.disconnect()
