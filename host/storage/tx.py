"""The connection of one unit of work (or one read snapshot), and how statements reach it.

Two ways in:

* the plugins' QueryHandle (``fetch_one``, ``fetch_all``, ``fetch_val``, ``execute``):
  SQLAlchemy constructs or text, compiled and run by ``databases``;
* the runtime's own statements (:meth:`Tx.rows`, :meth:`Tx.batch`, and the statements a
  unit of work ends with, :class:`Closing`): SQL text from :mod:`host.storage.sql` with
  positional parameters, run straight on the driver and answered with positional rows.

On SQLite every statement is a hop to the connection's thread and back (``databases`` takes
three: cursor, execute, close). A batch runs a fixed list of statements, with the deferred
``BEGIN IMMEDIATE`` before them and, when it ends the unit of work, the ``COMMIT`` after
them, in one hop. It uses aiosqlite's ``Connection._execute`` (run a function on the
connection's thread), private but unchanged since aiosqlite 0.x; without it the statements
go one hop each.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from databases.core import Connection

from host.storage.sql import Sql

__all__ = [
    "Closing",
    "NothingMatched",
    "Row",
    "Statement",
    "StatementFailed",
    "Tx",
    "is_transient",
]

T = TypeVar("T")

Row = Mapping[str, Any]
Statement = tuple[Sql, Sequence[Any]]
"""SQL text and its positional parameters."""

sql_logger: Final = logging.getLogger("tessera.sql")
"""One debug record ``Query: <sql> Args: <args>`` per statement run by :meth:`Tx.rows`,
:meth:`Tx.batch` or a :class:`Closing` (the form of ``databases``' records for the
statements it runs)."""

_COMMIT: Final = "COMMIT"


class StatementFailed(Exception):
    """Statement ``index`` of a batch raised ``error`` (also the ``__cause__``)."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(f"statement {index} of the batch failed: {error}")
        self.index = index
        self.error = error


class NothingMatched(Exception):
    """The guarded first statement of a :class:`Closing` returned no row: a concurrent write
    won. Nothing after it ran and the unit of work was rolled back."""


@dataclass(frozen=True)  # no slots: a slotted generic dataclass breaks Closing[T](...) on 3.10
class Closing(Generic[T]):
    """How a unit of work ends: the value it returns and the statements it ends with.

    The storage runs ``statements`` in order, then commits (on SQLite, in the same round
    trip as the statements); if any of them fails, nothing is committed.

    :param result: what :meth:`~host.storage.Storage.unit_of_work` returns once committed.
    :param statements: the last statements. An exception in place of one is a statement
        that could not be built: it fails where it would have run, as
        :class:`StatementFailed` with that exception.
    :param guarded: the first statement must return a row; when it returns none the
        storage raises :class:`NothingMatched` instead of committing.
    """

    result: T
    statements: Sequence[Statement | Exception] = ()
    guarded: bool = False


def matches_nothing(exc: BaseException) -> bool:
    """PostgreSQL refused a parameter it cannot represent (SQLSTATE 22021: a NUL character
    in a text value, e.g. a subject id ``"a\\x00b"`` from a query string). No stored text
    contains one, so a read filtering on it matches nothing: answer as SQLite does (no row)
    instead of failing with a 500. Stored values never get here (the write path refuses NUL
    with a 400). Inside a unit of work the transaction is aborted by then; the runtime's
    subject lookup raises ``NotFound`` at once, which rolls it back."""
    return getattr(exc, "sqlstate", None) == "22021"


def is_transient(exc: BaseException) -> bool:
    """PostgreSQL aborted the transaction for a concurrent one (SQLSTATE class 40:
    serialization failure, deadlock), which ``databases`` does not map: a concurrent
    transaction won."""
    sqlstate = getattr(exc, "sqlstate", None)
    return isinstance(sqlstate, str) and sqlstate.startswith("40")


class _Outcome:
    """What a batch did (on SQLite: on the connection's thread)."""

    __slots__ = ("begun", "ended", "error", "failed_at", "results", "sent")

    def __init__(self) -> None:
        self.results: list[Sequence[Any]] = []
        self.begun = False
        self.ended = 0
        """How many of the ending statements (``RELEASE``, ``COMMIT``) ran."""
        self.sent: list[Statement] = []
        """What reached the driver, in order (BEGIN and COMMIT included), for the log."""
        self.failed_at: int | None = None
        """Index of the statement that failed; -1: the BEGIN; ``len(statements)``: an ending
        statement (``RELEASE``, ``COMMIT``)."""
        self.error: Exception | None = None


Step = tuple[int, Statement | Exception]


def _steps(
    begin: str | None, statements: Sequence[Statement | Exception], ends: Sequence[str]
) -> list[Step]:
    """What a batch sends, each with its index: -1 the BEGIN, ``len(statements)`` each of the
    statements that end the unit of work (``RELEASE``, ``COMMIT``)."""
    steps: list[Step] = [(-1, (begin, ()))] if begin else []
    steps.extend(enumerate(statements))
    steps.extend((len(statements), (end, ())) for end in ends)
    return steps


def _took(outcome: _Outcome, index: int, rows: Sequence[Any], count: int, guarded: int) -> bool:
    """Record the rows of step ``index`` of a batch of ``count``; True: stop here (an empty
    result of one of the first ``guarded`` statements)."""
    if index < 0:
        outcome.begun = True
    elif index == count:
        outcome.ended += 1
    else:
        outcome.results.append(rows)
        return index < guarded and not rows
    return False


def _sqlite_batch(
    conn: sqlite3.Connection,
    begin: str | None,
    statements: Sequence[Statement | Exception],
    guarded: int,
    ends: Sequence[str],
) -> _Outcome:
    """Runs on the connection's thread: [BEGIN,] statements in order (stopping at the first
    failure, or at an empty result of one of the first ``guarded``), then ``ends`` (``RELEASE``,
    ``COMMIT``) after them all."""
    outcome = _Outcome()
    for index, step in _steps(begin, statements, ends):
        if isinstance(step, Exception):
            outcome.failed_at, outcome.error = index, step
            break
        outcome.sent.append(step)
        try:
            rows = conn.execute(*step).fetchall()
        except Exception as exc:
            outcome.failed_at, outcome.error = index, exc
            break
        if _took(outcome, index, rows, len(statements), guarded):
            break
    return outcome


async def _sqlite_one_by_one(
    raw: Any,
    begin: str | None,
    statements: Sequence[Statement | Exception],
    guarded: int,
    ends: Sequence[str],
) -> _Outcome:  # pragma: no cover - an aiosqlite without ``_execute``
    """:func:`_sqlite_batch`, one hop per statement."""
    outcome = _Outcome()
    for index, step in _steps(begin, statements, ends):
        if isinstance(step, Exception):
            outcome.failed_at, outcome.error = index, step
            break
        outcome.sent.append(step)
        try:
            rows = await raw.execute_fetchall(*step)
        except Exception as exc:
            outcome.failed_at, outcome.error = index, exc
            break
        if _took(outcome, index, rows, len(statements), guarded):
            break
    return outcome


def _log(outcome: _Outcome) -> None:
    """Log the statements the driver was sent, in order (after the fact)."""
    if sql_logger.isEnabledFor(logging.DEBUG):
        for sql, args in outcome.sent:
            sql_logger.debug("Query: %s Args: %r", sql, args)


class Tx:
    """Runs statements on the connection of one unit of work (the plugins' QueryHandle).

    ``begin`` (SQLite's writer: ``"BEGIN IMMEDIATE"``) is sent with the first statement, so
    a unit of work that fails before its first statement never opens a transaction.
    ``savepoint`` (SQLite's group commit, :mod:`host.storage.groupcommit`): the unit of work
    joins a transaction already open, in ``SAVEPOINT <name>`` (sent with its first statement
    in place of ``begin``), released when it closes."""

    __slots__ = ("_begin", "_conn", "_release", "_sqlite", "open")

    def __init__(
        self,
        conn: Connection,
        *,
        sqlite: bool,
        begin: str | None = None,
        savepoint: str | None = None,
    ) -> None:
        self._conn = conn
        self._sqlite = sqlite
        self._begin = f"SAVEPOINT {savepoint}" if savepoint else begin
        self._release = f"RELEASE {savepoint}" if savepoint else None
        self.open = False
        """SQLite: the deferred ``begin`` (or savepoint) was sent and is not committed (or
        released) yet (the storage rolls it back when the unit of work fails)."""

    # -- the runtime's statements -----------------------------------------------------------

    async def rows(self, sql: Sql, args: Sequence[Any] = ()) -> Sequence[Sequence[Any]]:
        """Run one statement; its rows as positional sequences. Errors are the driver's."""
        outcome = await self._execute(((sql, args),), guarded=0)
        if outcome.error is not None:
            raise outcome.error
        return outcome.results[0]

    async def batch(
        self, statements: Sequence[Statement | Exception], *, stop_on_empty: bool = False
    ) -> list[Sequence[Sequence[Any]]]:
        """Run ``statements`` in order; the rows of each one run (an exception in their
        place fails there, as in a :class:`Closing`).

        ``stop_on_empty``: stop after the first statement that returns no row (the results
        are then shorter, or end with an empty one).

        :raises StatementFailed: naming the statement that failed (nothing after it ran).
            A failure of the deferred ``BEGIN`` is raised as the driver's error.
        """
        outcome = await self._execute(statements, guarded=len(statements) if stop_on_empty else 0)
        _raise_failure(outcome, len(statements))
        return outcome.results

    async def close(self, closing: Closing[Any], *, commit: bool = True) -> None:
        """Run the statements ``closing`` ends with; on SQLite commit with them (the
        storage's: a unit of work returns its :class:`Closing` instead of calling this).
        ``commit=False`` (SQLite's group commit): leave the transaction open for the next
        unit of work (a savepoint is released all the same).

        :raises StatementFailed: a statement failed; nothing is committed.
        :raises NothingMatched: the guarded statement returned no row; nothing committed.
        """
        statements = closing.statements
        if not statements and not self.open:
            return  # nothing ran, nothing to commit
        ends = self._ends(commit) if self._sqlite else ()
        outcome = await self._execute(statements, guarded=int(closing.guarded), ends=ends)
        _raise_failure(outcome, len(statements))
        if closing.guarded and statements and not outcome.results[0]:
            raise NothingMatched()

    def _ends(self, commit: bool) -> tuple[str, ...]:
        """The statements that end this unit of work on SQLite."""
        release = (self._release,) if self._release else ()
        return (*release, _COMMIT) if commit else release

    async def _execute(
        self,
        statements: Sequence[Statement | Exception],
        *,
        guarded: int,
        ends: Sequence[str] = (),
    ) -> _Outcome:
        outcome: _Outcome
        if not self._sqlite:
            outcome = await self._postgresql(statements, guarded)
            _log(outcome)
            return outcome
        raw = self._conn.raw_connection
        begin = self._begin
        run_on_thread = getattr(raw, "_execute", None)
        if run_on_thread is not None:
            outcome = await run_on_thread(
                lambda: _sqlite_batch(raw._conn, begin, statements, guarded, ends)
            )
        else:  # pragma: no cover - an aiosqlite without ``_execute``: one hop per statement
            outcome = await _sqlite_one_by_one(raw, begin, statements, guarded, ends)
        _log(outcome)
        if outcome.begun:
            self._begin = None
            self.open = True
        if ends and outcome.ended == len(ends):  # released, or committed
            self.open = False
        return outcome

    async def _postgresql(
        self, statements: Sequence[Statement | Exception], guarded: int
    ) -> _Outcome:
        outcome = _Outcome()
        raw = self._conn.raw_connection
        for index, step in enumerate(statements):
            if isinstance(step, Exception):
                outcome.failed_at, outcome.error = index, step
                return outcome
            sql, args = step
            outcome.sent.append(step)
            try:
                # asyncpg prepares each distinct text once per connection and caches it.
                rows = await raw.fetch(sql, *args)
            except Exception as exc:
                if not matches_nothing(exc):
                    outcome.failed_at, outcome.error = index, exc
                    return outcome
                rows = []
            outcome.results.append(rows)
            if index < guarded and not rows:
                break
        return outcome

    async def _ensure_begun(self) -> None:
        if self._begin is not None:
            outcome = await self._execute((), guarded=0)
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


def _raise_failure(outcome: _Outcome, count: int) -> None:
    """Raise what stopped a batch of ``count`` statements: the BEGIN's or the COMMIT's error
    as it is, a statement's as :class:`StatementFailed`."""
    if outcome.error is None:
        return
    assert outcome.failed_at is not None
    if outcome.failed_at < 0 or outcome.failed_at == count:
        raise outcome.error
    raise StatementFailed(outcome.failed_at, outcome.error) from outcome.error
