"""Connections, transactions and reads: the one place that knows SQLite from PostgreSQL.

Design (each point answers a behaviour of the libraries measured before it was written):

* SQLite: one long-lived writer connection per process, serialised by an asyncio lock, each
  unit of work in ``BEGIN IMMEDIATE`` so the write lock is taken up front (a deferred ``BEGIN``
  fails at once with "database is locked" on the read -> write upgrade under concurrency).
  Across processes the busy timeout serialises writers. WAL mode lets a small pool of
  long-lived reader connections serve projections while a write is in progress, handed out
  first come, first served (:mod:`host.storage.pool`). Holding
  connections open also removes the per-request connect cost of ``databases``' SQLite backend.
* PostgreSQL: the ``databases``/asyncpg pool, one pooled connection per unit of work, READ
  COMMITTED; lost races are caught by the guarded ``UPDATE ... RETURNING`` of the runtime.
* Every unit of work, and every read, runs in its own task shielded from cancellation: a
  client that disconnects mid-request cannot leave a transaction open or leak a connection;
  the statement or unit of work finishes (commit or rollback), the connection goes back, and
  only the response is dropped. No read holds a connection or a transaction beyond its one
  statement, so a client that reads a streamed list slowly, or never, holds none.
* Defence in depth: a connection is checked before it is used (no transaction open); one that
  is found inside a transaction is rolled back, with one warning naming the request id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

import sqlalchemy as sa
from databases import Database, DatabaseURL
from databases.core import Connection
from sqlalchemy.schema import CreateIndex, CreateTable

from host.config import Settings
from host.logs import request_id_var
from host.storage.dialects import POSTGRESQL, SQLITE, Dialect
from host.storage.groupcommit import SAVEPOINT, BatchLost, GroupCommit
from host.storage.pool import FairPool
from host.storage.schema import Schema
from host.storage.sql import Sql
from host.storage.tx import Closing, Row, StatementFailed, Tx, is_transient, matches_nothing

__all__ = [
    "PostgreSQLStorage",
    "Row",
    "SQLiteStorage",
    "Storage",
    "StorageError",
    "TransientConflict",
    "Tx",
    "UnsupportedScheme",
    "database_file",
]

T = TypeVar("T")

logger = logging.getLogger("tessera.storage")

SQLITE_READERS = 2
SCHEMA_LOCK_KEY = 0x7E55E2A  # PostgreSQL advisory lock serialising schema preparation
CLOSE_WAIT_S: Final = 2.0
"""How long a shutdown waits for the pool to close gracefully before closing it at once."""
PREPARE_ATTEMPTS: Final = 5
"""Schema preparations tried before a start fails on concurrent transactions."""


def _warn_open_transaction(role: str) -> None:
    logger.warning(
        "a %s database connection was found inside a transaction and rolled back before use "
        "(request id %s)",
        role,
        request_id_var.get(),
    )


class UnsupportedScheme(ValueError):
    """A database URL of a scheme the storage does not open (``unsupported scheme 'x'``)."""


def database_file(url: str) -> Path | None:
    """The one local file a database URL names (SQLite), ``None`` for a database server
    (PostgreSQL): what can be known of a URL before anything is opened.

    :raises UnsupportedScheme: the URL names neither.
    """
    scheme = url.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme == "sqlite":
        return Path(DatabaseURL(url).database)
    if scheme in {"postgresql", "postgres"}:
        return None
    raise UnsupportedScheme(f"unsupported scheme {scheme!r}")


class StorageError(Exception):
    """A storage failure the runtime maps to an error of the taxonomy."""


class TransientConflict(StorageError):
    """The database aborted the transaction because of a concurrent one (retryable)."""


class Storage:
    """The host's database: schema preparation, units of work and reads.

    ``Storage(settings)`` answers the class of the URL's backend (:class:`SQLiteStorage` or
    :class:`PostgreSQLStorage`); what they share is here, what differs is theirs.
    """

    dialect: Dialect
    """The SQL spelling of the backend (:mod:`host.storage.dialects`)."""

    def __new__(cls, settings: Settings) -> Storage:
        if cls is Storage:
            path = _backend_of(settings.database_url)
            cls = SQLiteStorage if path is not None else PostgreSQLStorage
        return super().__new__(cls)

    def __init__(self, settings: Settings) -> None:
        self.url = settings.database_url
        self._settings = settings
        self._db = self._open_database(settings)
        self._inflight: set[asyncio.Task[Any]] = set()
        self.on_transaction: Callable[[float], None] | None = None
        """Called with the seconds each unit of work took (metrics), when set."""

    def _open_database(self, settings: Settings) -> Database:
        raise NotImplementedError

    def is_new_file(self) -> bool:
        """Whether the database is one local file that does not exist yet: the first start
        creates it, so there is nothing in it to read or check. Never true of a server."""
        path = database_file(self.url)
        return path is not None and not path.exists()

    # -- lifecycle ------------------------------------------------------------------------

    async def connect(self) -> None:
        """Open the database (for SQLite: the writer and the reader connections)."""
        await self._db.connect()

    async def disconnect(self, timeout: float = 10.0) -> None:
        """Wait for units of work in flight, then close every connection, gracefully for at
        most :data:`CLOSE_WAIT_S`, then at once: asyncpg's ``Pool.close()`` waits without
        limit for every connection it handed out to come back, and a connection the server
        terminated while it was checked out (a database dropped under a running timer loop)
        was seen never to come back."""
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=timeout)
        await self._close_connections()
        try:
            # On cancellation (the timeout) asyncpg's Pool.close() terminates the pool.
            await asyncio.wait_for(self._db.disconnect(), CLOSE_WAIT_S)
        except asyncio.TimeoutError:
            logger.warning(
                "storage: connections still checked out after %s s at shutdown; closed at once",
                CLOSE_WAIT_S,
            )

    async def _close_connections(self) -> None:
        """Close the connections this storage holds open itself (none by default)."""

    # -- schema ---------------------------------------------------------------------------

    async def prepare(
        self, schema: Schema, evolve: Callable[[Tx], Awaitable[None]] | None = None
    ) -> None:
        """Create missing tables and indexes; safe when several processes start at once.
        ``evolve`` (schema evolution) runs first, under the same lock, in the same transaction."""

        async def create(tx: Tx) -> None:
            lock = self.dialect.exclusive_lock(SCHEMA_LOCK_KEY)
            if lock is not None:
                await tx.execute(sa.text(lock))
            if evolve is not None:
                await evolve(tx)
            # Only what is missing: PostgreSQL's CREATE INDEX IF NOT EXISTS takes its table's
            # SHARE lock before it finds the index there, and a worker starting beside one
            # already writing (a restart) deadlocked with it on two tables.
            present = {str(row[0]) for row in await tx.rows(self.dialect.relations)}
            for table in schema.metadata.sorted_tables:
                if table.name not in present:
                    await tx.execute(CreateTable(table, if_not_exists=True))
                for index in sorted(table.indexes, key=lambda ix: str(ix.name)):
                    if str(index.name) not in present:
                        await tx.execute(CreateIndex(index, if_not_exists=True))

        for attempt in range(1, PREPARE_ATTEMPTS + 1):
            try:
                await self.transaction(create)
                return
            except TransientConflict:
                # Another process's transaction won (a deadlock with a worker already
                # writing while this one adds what a new graph needs): all rolled back.
                if attempt == PREPARE_ATTEMPTS:
                    raise
                logger.warning("storage: schema preparation lost a race; retrying")
                await asyncio.sleep(0.1 * attempt)

    # -- units of work --------------------------------------------------------------------

    async def transaction(self, work: Callable[[Tx], Awaitable[T]]) -> T:
        """Run ``work`` in one transaction, committed if it returns, rolled back if it
        raises. Cancelling the caller does not interrupt it."""

        async def whole(tx: Tx) -> Closing[T]:
            return Closing(await work(tx))

        return await self.unit_of_work(whole)

    async def unit_of_work(self, work: Callable[[Tx], Awaitable[Closing[T]]]) -> T:
        """Run ``work``, then the statements its :class:`~host.storage.tx.Closing` ends
        with, and commit (on SQLite in the same round trip as those statements); roll back
        if anything raises. Return the closing's result. Cancelling the caller does not
        interrupt it.

        :raises StatementFailed: a closing statement failed.
        :raises NothingMatched: the closing's guarded statement returned no row.
        :raises TransientConflict: the database aborted the transaction for a concurrent one.
        """
        return await self._detached(self._run(work))

    async def _detached(self, work: Awaitable[T]) -> T:
        """Await ``work`` in a task of its own that the caller's cancellation does not reach:
        whatever holds a connection always runs to its end and gives the connection back."""
        task: asyncio.Task[T] = asyncio.ensure_future(work)
        self._inflight.add(task)
        task.add_done_callback(self._forget)
        return await asyncio.shield(task)

    def _forget(self, task: asyncio.Task[Any]) -> None:
        self._inflight.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: an abandoned task must not log "never retrieved"

    async def _run(self, work: Callable[[Tx], Awaitable[Closing[T]]]) -> T:
        started = time.perf_counter()
        try:
            return await self._run_timed(work)
        finally:
            if self.on_transaction is not None:
                self.on_transaction(time.perf_counter() - started)

    async def _run_timed(self, work: Callable[[Tx], Awaitable[Closing[T]]]) -> T:
        try:
            return await self._run_unit(work)
        except StorageError:
            raise
        except Exception as exc:
            # A closing statement's error counts as much as one raised by the work itself.
            cause = exc.error if isinstance(exc, StatementFailed) else exc
            if is_transient(cause):
                raise TransientConflict(str(cause)) from cause
            raise

    async def _run_unit(self, work: Callable[[Tx], Awaitable[Closing[T]]]) -> T:
        """One unit of work on this backend's connection (commit or roll back)."""
        raise NotImplementedError

    # -- reads ----------------------------------------------------------------------------

    async def fetch_all(self, query: Any) -> Sequence[Row]:
        """Run a read-only query outside any unit of work."""
        return await self._detached(self._fetch_all(query))

    async def _fetch_all(self, query: Any) -> Sequence[Row]:
        raise NotImplementedError

    async def fetch_one(self, query: Any) -> Row | None:
        """Run a read-only query for one row."""
        rows = await self.fetch_all(query)
        return rows[0] if rows else None

    async def rows(self, sql: Sql, args: Sequence[Any] = ()) -> Sequence[Sequence[Any]]:
        """:meth:`Tx.rows` outside any unit of work: one read-only statement, which is a
        consistent snapshot by itself and sees every transaction committed before it."""
        return await self._detached(self._rows(sql, args))

    async def _rows(self, sql: Sql, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        raise NotImplementedError

    # -- readiness ------------------------------------------------------------------------

    def connections_in_use(self) -> int:
        """Connections of this process busy right now (SQLite: writer and readers;
        PostgreSQL: the pool's)."""
        raise NotImplementedError

    async def probe(self, timeout: float) -> str | None:
        """Whether the database answers a query within ``timeout`` seconds: ``None`` when it
        does, else why not (one line)."""
        problem = self._file_problem()
        if problem is not None:
            return problem
        try:
            await asyncio.wait_for(self.rows("SELECT 1"), timeout)
        except asyncio.TimeoutError:
            return f"the database did not answer within {timeout:g}s"
        except Exception as exc:
            return f"the database cannot be reached: {type(exc).__name__}: {exc}"
        return None

    def _file_problem(self) -> str | None:
        """What is wrong with the database's local file, if it has one."""
        return None

    # -- dialect-specific statements ------------------------------------------------------

    def increment_sequence(self, schema: Schema, tenant_id: str, name: str) -> Any:
        """An upsert returning the next value of a per-tenant counter. The row lock it takes
        lasts until commit, which makes the counter gapless and unique under concurrency."""
        table = schema.sequences
        return (
            self.dialect.upsert()(table)
            .values(tenant_id=tenant_id, name=name, value=1)
            .on_conflict_do_update(
                index_elements=[table.c.tenant_id, table.c.name],
                set_={"value": table.c.value + 1},
            )
            .returning(table.c.value)
        )


WAL_RETRY_S: Final = 0.02

WRITER_TEMP_STORE: Final = "MEMORY"
"""Where the writer keeps its temporary files once the schema is prepared. A unit of work
that joins a group commit's batch runs in a savepoint, and SQLite journals the pages it
changes (about thirty for a create: the row's table and indexes, the audit table's, FTS5's)
in a sub-journal that spills to a temporary file past 64 KiB: 64 write calls and 136 KiB
written per create on disk, 9 and 21 KiB in memory, and a tenth less CPU per create
(docs/benchmarks.md, "The writer's temporary files in memory, taken"). A sub-journal lives
until its savepoint is released; the writer's own statements sort nothing large."""


def _batch_scheduling() -> None:
    """Runs on a connection's thread: Linux's ``SCHED_BATCH`` for it, so that waking it (the
    event loop hands it a statement) does not preempt the event loop's thread. It could not
    run anyway until the loop releases the GIL, which the loop does when it awaits the
    result; preempted, the loop lost two context switches per hop to SQLite's thread (under
    32 clients, 2.5 involuntary switches per create and 4.6 per update, 0.03 with it; 3 to 4 %
    less CPU per write, docs/benchmarks.md, "SQLite's threads in batch scheduling"). A thread
    woken while a core is idle runs there at once, as before. Elsewhere, a no-op."""
    policy = getattr(os, "SCHED_BATCH", None)
    if policy is None:
        return
    try:
        os.sched_setscheduler(0, policy, os.sched_param(0))
    except OSError:  # not allowed here (a container's seccomp profile): keep the default
        logger.debug("SCHED_BATCH refused for a SQLite connection's thread", exc_info=True)


async def _switch_to_wal(conn: Connection, timeout_s: float) -> None:
    """``PRAGMA journal_mode = WAL``, retried for up to ``timeout_s``: when processes open a
    new file at once, the switch can fail at once with "database is locked" (SQLite does
    not call the busy handler there), so the workers of one start would race."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await conn.fetch_one("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        await asyncio.sleep(WAL_RETRY_S)


class SQLiteStorage(Storage):
    """One database file: one long-lived writer connection per process, serialised by an
    asyncio lock, every unit of work in ``BEGIN IMMEDIATE`` or, when units wait for the
    writer, in a savepoint of a transaction they share (:mod:`host.storage.groupcommit`); a
    few long-lived reader connections (WAL) for reads."""

    dialect = SQLITE

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._write_lock = asyncio.Lock()
        self.group = GroupCommit(settings.sqlite_group_commit)
        """The group commit of this process's units of work (:mod:`host.storage.groupcommit`)."""
        self._writer: Connection | None = None
        self._readers: FairPool[Connection] = FairPool()
        self._reader_list: list[Connection] = []

    def _open_database(self, settings: Settings) -> Database:
        return Database(self.url)

    async def connect(self) -> None:
        await super().connect()
        self._writer = await self._open(writer=True)
        for _ in range(SQLITE_READERS):
            reader = await self._open(writer=False)
            self._reader_list.append(reader)
            self._readers.release(reader)

    async def prepare(
        self, schema: Schema, evolve: Callable[[Tx], Awaitable[None]] | None = None
    ) -> None:
        """As :meth:`Storage.prepare`, with the writer's temporary files on disk while the
        schema's work runs (an index built over a large table sorts in them), and in memory
        after it (:data:`WRITER_TEMP_STORE`)."""
        await self._writer_pragma("PRAGMA temp_store = FILE")
        await super().prepare(schema, evolve)
        await self._writer_pragma(f"PRAGMA temp_store = {WRITER_TEMP_STORE}")

    async def _writer_pragma(self, pragma: str) -> None:
        """Set ``pragma`` on the writer between units of work (before the service serves)."""
        assert self._writer is not None, "storage is not connected"
        async with self._write_lock:
            await Tx(self._writer, sqlite=True).rows(pragma)

    async def _close_connections(self) -> None:
        for conn in [*self._reader_list, *([self._writer] if self._writer else [])]:
            await conn.__aexit__()
        self._reader_list.clear()
        self._writer = None

    async def _open(self, *, writer: bool) -> Connection:
        async def open_connection() -> Connection:
            # ``Database.connection()`` hands out one connection per task: open each in a
            # task of its own so every one is distinct and stays open for the process.
            conn = self._db.connection()
            await conn.__aenter__()
            await conn.execute(f"PRAGMA busy_timeout = {self._settings.sqlite_busy_timeout_ms}")
            run_on_thread = getattr(conn.raw_connection, "_execute", None)
            if run_on_thread is not None:  # aiosqlite's (see host.storage.tx)
                await run_on_thread(_batch_scheduling)
            if writer:
                await _switch_to_wal(conn, self._settings.sqlite_busy_timeout_ms / 1000)
                await conn.execute("PRAGMA synchronous = NORMAL")
            else:
                await conn.execute("PRAGMA query_only = 1")
            return conn

        return await asyncio.create_task(open_connection())

    async def _run_unit(self, work: Callable[[Tx], Awaitable[Closing[T]]]) -> T:
        assert self._writer is not None, "storage is not connected"
        conn = self._writer
        group = self.group
        group.waiting += 1
        try:
            await self._write_lock.acquire()
        except BaseException:
            group.waiting -= 1
            if group.open and not group.waiting:
                # Cancelled while waiting (only at shutdown): the unit that held the batch
                # open for this one must still be committed.
                orphan = asyncio.ensure_future(self._end_orphaned_batch())
                self._inflight.add(orphan)
                orphan.add_done_callback(self._forget)
            raise
        group.waiting -= 1
        failure: BaseException | None = None
        settled: asyncio.Future[None] | None = None
        try:
            joined = group.open
            if not joined:
                await self._ensure_idle(conn, "writer")
            # BEGIN IMMEDIATE (or the savepoint of a unit joining a batch) goes with the first
            # statement (see ``Tx``) and the COMMIT with the closing statements: a create is
            # one round trip to the thread.
            tx = Tx(
                conn,
                sqlite=True,
                begin="BEGIN IMMEDIATE",
                savepoint=SAVEPOINT if joined else None,
            )
            try:
                closing = await work(tx)
                hold = group.hold()
                await tx.close(closing, commit=not hold)
            except BaseException as exc:
                await self._undo(conn, tx, joined, exc)
                if not group.open:
                    raise
                # The batch goes on: the failure too is answered after its commit, so that
                # what the caller reads next (a concurrent duplicate's stored answer) is
                # committed, as it would be without batching.
                failure, settled = exc, group.join()
            else:
                if not conn.raw_connection.in_transaction:
                    group.committed()
                    return closing.result
                settled = group.join()
                if not (hold and group.waiting):
                    # It wrote nothing and did not commit, or the unit it waited for was
                    # cancelled meanwhile (only at shutdown): commit the batch now.
                    await self._end_batch(conn)
        finally:
            self._write_lock.release()
        assert settled is not None
        if failure is not None:
            with contextlib.suppress(BatchLost):
                await settled
            raise failure
        await settled  # a later unit of the batch commits (or loses) it
        return closing.result

    async def _undo(self, conn: Connection, tx: Tx, joined: bool, error: BaseException) -> None:
        """Roll back the unit of work that failed (its savepoint when it joined a batch),
        then end the batch if no unit comes to end it."""
        if tx.open:
            if joined:
                try:
                    await Tx(conn, sqlite=True).batch(
                        ((f"ROLLBACK TO {SAVEPOINT}", ()), (f"RELEASE {SAVEPOINT}", ()))
                    )
                except Exception:
                    # The savepoint is gone (released before a failed COMMIT, or the whole
                    # transaction ended with the error): the batch cannot be kept.
                    await self._rollback(conn)
            else:
                await self._rollback(conn)
        if not self.group.open:
            return
        if not conn.raw_connection.in_transaction:
            self.group.lost(error)
        elif not self.group.hold():
            await self._end_batch(conn)

    async def _end_orphaned_batch(self) -> None:
        """Commit a batch held open for a unit that never came."""
        async with self._write_lock:
            if self.group.open and self._writer is not None:
                await self._end_batch(self._writer)

    async def _end_batch(self, conn: Connection) -> None:
        """Commit the open batch for the units waiting for it (one hop of its own)."""
        try:
            await Tx(conn, sqlite=True).rows("COMMIT")
        except Exception as exc:
            await self._rollback(conn)
            self.group.lost(exc)
        else:
            self.group.committed()

    @staticmethod
    async def _rollback(conn: Connection) -> None:
        try:
            await Tx(conn, sqlite=True).rows("ROLLBACK")
        except Exception:
            # Nothing to roll back (the failure was BEGIN or a COMMIT that already ended
            # the transaction): the connection is usable as it is.
            logger.debug("rollback after failure found no transaction", exc_info=True)

    @contextlib.asynccontextmanager
    async def _reader(self) -> AsyncIterator[Connection]:
        """A reader connection, checked to be outside any transaction, given back on every
        exit. Callers run inside :meth:`_detached`."""
        conn = await self._readers.acquire()
        try:
            await self._ensure_idle(conn, "reader")
            yield conn
        finally:
            self._readers.release(conn)

    async def _ensure_idle(self, conn: Connection, role: str) -> None:
        """Roll back a transaction left open on ``conn`` (none should ever be)."""
        if conn.raw_connection.in_transaction:
            _warn_open_transaction(role)
            await self._rollback(conn)

    async def _fetch_all(self, query: Any) -> Sequence[Row]:
        async with self._reader() as conn:
            records = await conn.fetch_all(query)
        return [record._mapping for record in records]

    async def _rows(self, sql: Sql, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        async with self._reader() as conn:
            return await Tx(conn, sqlite=True).rows(sql, args)

    def connections_in_use(self) -> int:
        return int(self._write_lock.locked()) + len(self._reader_list) - self._readers.idle()

    def _file_problem(self) -> str | None:
        # An open connection keeps reading a file that was moved or deleted.
        path = database_file(self.url)
        assert path is not None
        if not path.is_file():
            return f"the SQLite file {path} is missing"
        if not os.access(path, os.R_OK | os.W_OK):
            return f"the SQLite file {path} is not readable and writable"
        return None


class PostgreSQLStorage(Storage):
    """A database server: the ``databases``/asyncpg pool, one pooled connection per unit of
    work, READ COMMITTED (lost races are caught by the guarded ``UPDATE ... RETURNING``)."""

    dialect = POSTGRESQL

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._turns = asyncio.Semaphore(settings.pg_pool_max)
        """The pool's connections, taken in order of arrival (:meth:`_pooled`)."""

    def _open_database(self, settings: Settings) -> Database:
        return Database(
            self.url,
            min_size=settings.pg_pool_min,
            max_size=settings.pg_pool_max,
            max_inactive_connection_lifetime=settings.pg_pool_idle_s,  # asyncpg's pool
        )

    async def _run_unit(self, work: Callable[[Tx], Awaitable[Closing[T]]]) -> T:
        async with self._pooled() as conn, conn.transaction():
            tx = Tx(conn, sqlite=False)
            closing = await work(tx)
            await tx.close(closing)  # the closing statements; the commit is the block's
            return closing.result

    @contextlib.asynccontextmanager
    async def _pooled(self) -> AsyncIterator[Connection]:
        """A connection of the pool, checked to be outside any transaction.

        Taken in turn: with every connection busy, asyncpg's pool hands a connection given
        back to whichever task asks next, and a task it had woken goes to the back of the
        queue, so under load a few requests waited many turns (p99 up to 6 times p50 for
        writes, docs/benchmarks.md "PostgreSQL: the pool's turns"). A semaphore of the pool's
        size in front of it keeps the order of arrival: asyncio's queues a newcomer behind the
        tasks already waiting (``tests/storage/test_pool_turns.py``).
        """
        async with self._turns, self._db.connection() as conn:
            raw = conn.raw_connection
            if raw.is_in_transaction():
                _warn_open_transaction("pooled")
                await raw.execute("ROLLBACK")
            yield conn

    async def _fetch_all(self, query: Any) -> Sequence[Row]:
        try:
            async with self._pooled() as pooled:
                records = await pooled.fetch_all(query)
        except Exception as exc:
            if matches_nothing(exc):
                return []
            raise
        return [record._mapping for record in records]

    async def _rows(self, sql: Sql, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        async with self._pooled() as pooled:
            return await Tx(pooled, sqlite=False).rows(sql, args)

    def connections_in_use(self) -> int:
        pool = getattr(getattr(self._db, "_backend", None), "_pool", None)
        if pool is None:
            return 0
        return int(pool.get_size() - pool.get_idle_size())


def _backend_of(url: str) -> Path | None:
    """:func:`database_file`, with the message the storage gives for another scheme."""
    try:
        return database_file(url)
    except UnsupportedScheme as exc:
        raise ValueError(
            f"TESSERA_DATABASE_URL: {exc} (use sqlite:///file.db or postgresql://...)"
        ) from None
