"""The connection of one unit of work (or one read snapshot), and how statements reach it.

Two ways in:

* the plugins' QueryHandle (``fetch_one``, ``fetch_all``, ``fetch_val``, ``execute``):
  SQLAlchemy constructs or text, compiled and run by ``databases``;
* the runtime's own statements (:meth:`Tx.rows`, :meth:`Tx.batch`): SQL text from
  :mod:`host.storage.sql` with positional parameters, run straight on the driver and
  answered with positional rows.

On SQLite every statement is a hop to the connection's thread and back (``databases`` takes
three: cursor, execute, close). :meth:`Tx.batch` runs a fixed list of statements, the
deferred ``BEGIN IMMEDIATE`` before them and, when asked, the ``COMMIT`` after them, in one
hop. It uses aiosqlite's ``Connection._execute`` (run a function on the connection's thread),
private but unchanged since aiosqlite 0.x; without it the statements go one hop each.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any, Final

from databases.core import Connection

from host.storage.sql import Sql

__all__ = ["Row", "Statement", "StatementFailed", "Tx"]

Row = Mapping[str, Any]
Statement = tuple[Sql, Sequence[Any]]
"""SQL text and its positional parameters."""

sql_logger: Final = logging.getLogger("tessera.sql")
"""One debug record ``Query: <sql> Args: <args>`` per statement run by :meth:`Tx.rows` or
:meth:`Tx.batch` (the form of ``databases``' records for the statements it runs)."""


class StatementFailed(Exception):
    """Statement ``index`` of a :meth:`Tx.batch` raised ``error`` (also the ``__cause__``)."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(f"statement {index} of the batch failed: {error}")
        self.index = index
        self.error = error


def matches_nothing(exc: BaseException) -> bool:
    """PostgreSQL refused a parameter it cannot represent (SQLSTATE 22021: a NUL character
    in a text value, e.g. a subject id ``"a\\x00b"`` from a query string). No stored text
    contains one, so a read filtering on it matches nothing: answer as SQLite does (no row)
    instead of failing with a 500. Stored values never get here (the write path refuses NUL
    with a 400). Inside a unit of work the transaction is aborted by then; the runtime's
    subject lookup raises ``NotFound`` at once, which rolls it back."""
    return getattr(exc, "sqlstate", None) == "22021"


class _Outcome:
    """What a batch did on SQLite's connection thread."""

    __slots__ = ("begun", "commit_error", "committed", "error", "failed_at", "results")

    def __init__(self) -> None:
        self.results: list[Sequence[Any]] = []
        self.begun = False
        self.committed = False
        self.failed_at: int | None = None  # -1: the BEGIN
        self.error: Exception | None = None
        self.commit_error: Exception | None = None


def _sqlite_batch(
    conn: sqlite3.Connection,
    begin: str | None,
    statements: Sequence[Statement],
    commit: bool,
    stop_on_empty: bool,
) -> _Outcome:
    """Runs on the connection's thread: [BEGIN,] statements in order (stopping at the first
    failure, or at the first empty result when ``stop_on_empty``), [COMMIT]."""
    outcome = _Outcome()
    if begin is not None:
        try:
            conn.execute(begin)
        except Exception as exc:
            outcome.failed_at, outcome.error = -1, exc
            return outcome
        outcome.begun = True
    for index, (sql, args) in enumerate(statements):
        try:
            rows = conn.execute(sql, args).fetchall()
        except Exception as exc:
            outcome.failed_at, outcome.error = index, exc
            return outcome
        outcome.results.append(rows)
        if stop_on_empty and not rows:
            return outcome
    if commit:
        try:
            conn.execute("COMMIT")
        except Exception as exc:
            outcome.commit_error = exc
        else:
            outcome.committed = True
    return outcome


def _log(begin: str | None, statements: Sequence[Statement], outcome: _Outcome) -> None:
    """Log the statements the driver was sent, in order (after the fact: a batch stops at
    the first failure or empty result)."""
    if not sql_logger.isEnabledFor(logging.DEBUG):
        return
    sent: list[Statement] = [(begin, ())] if begin is not None else []
    if outcome.failed_at != -1:
        ran = len(outcome.results) + (outcome.failed_at is not None)
        sent.extend(statements[:ran])
        if outcome.committed or outcome.commit_error is not None:
            sent.append(("COMMIT", ()))
    for sql, args in sent:
        sql_logger.debug("Query: %s Args: %r", sql, args)


class Tx:
    """Runs statements on the connection of one unit of work (the plugins' QueryHandle).

    ``begin`` (SQLite's writer: ``"BEGIN IMMEDIATE"``) is sent with the first statement, so
    a unit of work that fails before its first statement never opens a transaction."""

    __slots__ = ("_begin", "_conn", "_sqlite", "begun", "commit_error", "committed")

    def __init__(self, conn: Connection, *, sqlite: bool, begin: str | None = None) -> None:
        self._conn = conn
        self._sqlite = sqlite
        self._begin = begin
        self.begun = False
        """The deferred ``begin`` was sent and succeeded."""
        self.committed = False
        """A batch with ``commit=True`` committed the transaction."""
        self.commit_error: Exception | None = None
        """The error of that ``COMMIT``, raised by the storage when the work returns."""

    # -- the runtime's statements -----------------------------------------------------------

    async def rows(self, sql: Sql, args: Sequence[Any] = ()) -> Sequence[Sequence[Any]]:
        """Run one statement; its rows as positional sequences. Errors are the driver's."""
        outcome = await self._execute(((sql, args),), commit=False, stop_on_empty=False)
        if outcome.error is not None:
            raise outcome.error
        return outcome.results[0]

    async def batch(
        self, statements: Sequence[Statement], *, commit: bool = False, stop_on_empty: bool = False
    ) -> list[Sequence[Sequence[Any]]]:
        """Run ``statements`` in order; the rows of each one run.

        ``stop_on_empty``: stop after the first statement that returns no row (the results
        are then shorter, or end with an empty one). ``commit``: the batch is the last thing
        the unit of work runs; on SQLite its ``COMMIT`` goes in the same round trip (a failed
        ``COMMIT`` is raised by the storage when the work returns), on PostgreSQL the commit
        is the storage's as usual.

        :raises StatementFailed: naming the statement that failed (nothing after it ran).
            A failure of the deferred ``BEGIN`` is raised as the driver's error.
        """
        outcome = await self._execute(statements, commit=commit, stop_on_empty=stop_on_empty)
        if outcome.error is not None:
            assert outcome.failed_at is not None
            if outcome.failed_at < 0:
                raise outcome.error
            raise StatementFailed(outcome.failed_at, outcome.error) from outcome.error
        return outcome.results

    async def _execute(
        self, statements: Sequence[Statement], *, commit: bool, stop_on_empty: bool
    ) -> _Outcome:
        if self.committed or self.commit_error is not None:
            raise RuntimeError("this unit of work has already sent its COMMIT")
        outcome: _Outcome
        if not self._sqlite:
            outcome = await self._postgresql(statements, stop_on_empty)
            _log(None, statements, outcome)
            return outcome
        raw = self._conn.raw_connection
        begin = self._begin
        run_on_thread = getattr(raw, "_execute", None)
        if run_on_thread is not None:
            outcome = await run_on_thread(
                lambda: _sqlite_batch(raw._conn, begin, statements, commit, stop_on_empty)
            )
        else:  # pragma: no cover - an aiosqlite without ``_execute``: one hop per statement
            outcome = await self._sqlite_one_by_one(raw, begin, statements, commit, stop_on_empty)
        _log(begin, statements, outcome)
        if outcome.begun:
            self._begin = None
            self.begun = True
        self.committed = outcome.committed
        self.commit_error = outcome.commit_error
        return outcome

    @staticmethod
    async def _sqlite_one_by_one(
        raw: Any,
        begin: str | None,
        statements: Sequence[Statement],
        commit: bool,
        stop_on_empty: bool,
    ) -> _Outcome:
        outcome = _Outcome()
        steps: list[tuple[int, Statement]] = [(-1, (begin, ()))] if begin is not None else []
        steps.extend(enumerate(statements))
        for index, (sql, args) in steps:
            try:
                rows = await raw.execute_fetchall(sql, args)
            except Exception as exc:
                outcome.failed_at, outcome.error = index, exc
                return outcome
            if index < 0:
                outcome.begun = True
                continue
            outcome.results.append(rows)
            if stop_on_empty and not rows:
                return outcome
        if commit:
            try:
                await raw.execute_fetchall("COMMIT", ())
            except Exception as exc:
                outcome.commit_error = exc
            else:
                outcome.committed = True
        return outcome

    async def _postgresql(self, statements: Sequence[Statement], stop_on_empty: bool) -> _Outcome:
        outcome = _Outcome()
        raw = self._conn.raw_connection
        for index, (sql, args) in enumerate(statements):
            try:
                # asyncpg prepares each distinct text once per connection and caches it.
                rows = await raw.fetch(sql, *args)
            except Exception as exc:
                if not matches_nothing(exc):
                    outcome.failed_at, outcome.error = index, exc
                    return outcome
                rows = []
            outcome.results.append(rows)
            if stop_on_empty and not rows:
                break
        return outcome

    async def _ensure_begun(self) -> None:
        if self._begin is not None:
            outcome = await self._execute((), commit=False, stop_on_empty=False)
            if outcome.error is not None:
                raise outcome.error

    # -- the plugins' QueryHandle -----------------------------------------------------------

    async def fetch_one(self, query: Any, values: Mapping[str, Any] | None = None) -> Row | None:
        await self._ensure_begun()
        try:
            record = await self._conn.fetch_one(query, dict(values) if values else None)
        except Exception as exc:
            if matches_nothing(exc):
                return None
            raise
        return None if record is None else record._mapping

    async def fetch_all(self, query: Any, values: Mapping[str, Any] | None = None) -> list[Row]:
        await self._ensure_begun()
        try:
            records = await self._conn.fetch_all(query, dict(values) if values else None)
        except Exception as exc:
            if matches_nothing(exc):
                return []
            raise
        return [record._mapping for record in records]

    async def fetch_val(self, query: Any) -> Any:
        await self._ensure_begun()
        return await self._conn.fetch_val(query)

    async def execute(self, query: Any, values: Mapping[str, Any] | None = None) -> None:
        await self._ensure_begun()
        await self._conn.execute(query, dict(values) if values else None)
