"""SQLite WAL checkpoints off the writer (issue 43; docs/deploy.md, "SQLite").

By default SQLite checkpoints inside a commit: the commit that takes the WAL past 1,000 pages
copies them into the database file and syncs it before it returns, so about one write in a
hundred waited some 30 ms for work that was not its own (docs/benchmarks.md, "The write
path"). Here the writer's automatic checkpoint is off (``PRAGMA wal_autocheckpoint = 0``) and
a connection of its own, in a thread of its own (aiosqlite), runs ``PRAGMA
wal_checkpoint(PASSIVE)`` every ``TESSERA_SQLITE_CHECKPOINT_S`` seconds when something was
committed since the last one. A passive checkpoint never blocks a writer or a reader: it
copies what no reader still needs, and the writer starts the WAL over once all of it was
copied. The last connection to close checkpoints what is left, as SQLite always does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from databases.core import Connection

__all__ = ["STOP_WAIT_S", "Checkpointer"]

logger = logging.getLogger("tessera.storage")

STOP_WAIT_S: Final = 5.0
"""How long a shutdown waits for a checkpoint in flight."""


class Checkpointer:
    """Runs passive checkpoints on its own connection while commits happen."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.commits = 0
        """Commits of this process's writer (counted by the storage)."""
        self.checkpoints = 0
        """Checkpoints run (for tests and diagnostics)."""
        self._conn: Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    async def start(self, open_connection: Callable[[], Awaitable[Connection]]) -> None:
        """Open the checkpoint connection and start the loop."""
        self._conn = await open_connection()
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        seen = self.commits
        while not self._stopping.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.interval_s)
            if self.commits == seen:
                continue
            seen = self.commits
            await self.checkpoint()

    async def checkpoint(self) -> None:
        """One passive checkpoint now (a failure is logged; the next one retries)."""
        assert self._conn is not None, "checkpointer not started"
        try:
            await self._conn.fetch_one("PRAGMA wal_checkpoint(PASSIVE)")
        except Exception:
            logger.warning("storage: WAL checkpoint failed; retrying later", exc_info=True)
        else:
            self.checkpoints += 1

    async def stop(self) -> Connection | None:
        """End the loop (a checkpoint in flight finishes first); the connection to close."""
        self._stopping.set()
        if self._task is not None:
            done, _ = await asyncio.wait({self._task}, timeout=STOP_WAIT_S)
            if not done:
                self._task.cancel()
            self._task = None
        conn, self._conn = self._conn, None
        return conn
