"""SQLite's group commit: units of work that are ready share one transaction and one commit.

SQLite has one writer per database file, and the host runs its units of work one after the
other on one connection (:class:`~host.storage.database.SQLiteStorage`). Each commit costs
the WAL frames of every page the transaction dirtied (the table's and its indexes' leaves,
the audit table's, FTS5's new segment of pending terms), and now and then a checkpoint. When
a unit of work ends while others wait for the writer, it leaves the transaction open instead
of committing, and the next one runs inside it:

* the first unit of a batch begins the transaction (``BEGIN IMMEDIATE``), as a unit alone
  does; every later one runs in a savepoint of its own (:data:`SAVEPOINT`), released when it
  succeeds, rolled back (``ROLLBACK TO``) when it fails: a refusal or a failed effect undoes
  that unit's statements and nothing else. Its caller gets the failure after the batch's
  commit too, so that what it reads next (the answer a concurrent duplicate stored under the
  same idempotency key) is committed, as it would be without batching;
* the units still run one at a time, in the order they took the writer: ids, audit ``seq``
  and the commit order are what they are without batching;
* the last unit (nobody waits any more, or the batch holds :attr:`GroupCommit.limit` units)
  commits for all, in the round trip of its closing statements. No unit's caller gets its
  answer before that commit, so a crash loses only units no client was told succeeded;
* a commit that fails, or an error that ends the whole transaction (SQLite rolls back by
  itself on a full disk or an I/O error), fails every unit of the batch: each caller gets
  :class:`BatchLost` (the unit that met the error gets the error itself).

``TESSERA_SQLITE_GROUP_COMMIT`` is the limit; 1 turns batching off (a commit per unit).
"""

from __future__ import annotations

import asyncio
from typing import Final

__all__ = ["SAVEPOINT", "BatchLost", "GroupCommit"]

SAVEPOINT: Final = "tessera_unit"
"""The savepoint of a unit of work that joins an open batch."""


class BatchLost(Exception):
    """The transaction this unit of work shared was rolled back after the unit succeeded (a
    later unit's error ended it, or its commit failed): nothing of the unit was committed."""


class GroupCommit:
    """The units of work of the open SQLite transaction that wait for its commit.

    The storage counts the units waiting for the writer (:attr:`waiting`); only the unit that
    holds the writer calls the other methods."""

    __slots__ = ("_pending", "batches", "grouped", "limit", "waiting")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        """The most units one commit ends (1: every unit commits alone)."""
        self.waiting = 0
        """Units of work waiting for the writer."""
        self._pending: list[asyncio.Future[None]] = []
        self.batches = 0
        """Commits that ended more than one unit of work (for the benchmarks and tests)."""
        self.grouped = 0
        """Units of work those commits ended."""

    @property
    def open(self) -> bool:
        """Whether units that succeeded wait for the open transaction's commit (the next unit
        joins it in a savepoint)."""
        return bool(self._pending)

    def hold(self) -> bool:
        """Whether the unit ending now leaves the transaction open: another unit waits for
        the writer (and will end the batch) and the batch is not full."""
        return self.waiting > 0 and len(self._pending) + 1 < self.limit

    def join(self) -> asyncio.Future[None]:
        """The ending unit succeeded without committing: what its caller awaits."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append(future)
        return future

    def committed(self) -> None:
        """The transaction committed: every waiting unit succeeded."""
        if self._pending:
            self.batches += 1
            self.grouped += len(self._pending) + 1
        for future in self._pending:
            future.set_result(None)
        self._pending.clear()

    def lost(self, error: BaseException) -> None:
        """The transaction was rolled back: every waiting unit failed."""
        for future in self._pending:
            lost = BatchLost(f"the transaction shared with other units of work was lost: {error}")
            lost.__cause__ = error
            future.set_exception(lost)
        self._pending.clear()
