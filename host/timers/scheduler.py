"""The timer loop of one process: look for due timers every poll interval and fire them.

Every worker of every host sharing the database runs one (``TESSERA_TIMERS_POLL``; ``off``
disables it); no broker. On PostgreSQL a few firings run side by side, each picking its timer
with ``FOR UPDATE SKIP LOCKED``; on SQLite writers are serialised anyway, and each due timer
is claimed with a guarded UPDATE (a worker that loses the race skips it). A graph without
timers starts no loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Final

from host.timers.firing import Firing
from host.timers.queries import count_pending, purge_settled, settled_before

__all__ = ["TimerScheduler"]

logger = logging.getLogger("tessera.timers")

BATCH = 200
"""Timers looked at per pass on SQLite."""
PARALLEL = 4
"""Firings side by side on PostgreSQL."""
COUNT_EVERY_S = 10.0
"""How often a loop with a counting observer counts the pending timers."""


STOP_WAIT_S: Final = 2.0
"""How long a shutdown waits for a firing in flight."""
BACKOFF_MAX_S: Final = 5.0
"""The longest pause between failed passes."""
CLOCKS_EVERY_S: Final = 60.0
"""How often a loop makes sure each cron job's next occurrence is armed (and at its start)."""
PURGE_EVERY_S: Final = 60.0
"""How often a loop deletes the settled timers older than the retention."""
PURGE_BATCH: Final = 500
"""Settled timers deleted per transaction (small: a purge never holds the table long)."""
PURGE_BATCHES: Final = 20
"""Transactions per purge; what is left goes at the next one."""


class TimerScheduler:
    """Runs :meth:`pass_once` every ``poll_s`` seconds while nothing is due."""

    def __init__(self, firing: Firing, poll_s: float, retention_s: float = 0.0) -> None:
        self.firing = firing
        self.poll_s = poll_s
        self.retention_s = retention_s
        """Settled timers older than this are deleted (``TESSERA_TIMERS_RETENTION``; 0: kept)."""
        self._task: asyncio.Task[None] | None = None
        self._on_count: Callable[[int, int], None] | None = None
        self._on_purged: Callable[[int], None] | None = None
        self._counted_at = 0.0
        self._purged_at: float | None = None
        self._clocks_at: float | None = None

    def observe(
        self,
        on_settled: Callable[[str, float], None],
        on_count: Callable[[int, int], None],
        on_purged: Callable[[int], None] | None = None,
    ) -> None:
        """Report each settled timer (outcome, lag in seconds), every
        :data:`COUNT_EVERY_S` the pending timers (all, overdue), and the settled timers each
        purge deleted: the metrics."""
        self.firing.counts.listener = on_settled
        self._on_count = on_count
        self._on_purged = on_purged

    def start(self) -> None:
        """Start the loop (once)."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._forever())

    async def stop(self) -> None:
        """Stop the loop; a firing in flight finishes (its transaction is shielded), waited for
        at most :data:`STOP_WAIT_S`: on a database that stopped answering the shutdown goes on,
        and the firing's claim commits or rolls back with its transaction (a timer whose
        claim did not commit stays pending)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=STOP_WAIT_S)
            if not done:
                logger.warning(
                    "timers: a firing still in flight after %s s at shutdown; not waited for",
                    STOP_WAIT_S,
                )
                return
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def pass_once(self) -> int:
        """Fire what is due now; answer how many timers were settled (fired or failed)."""
        firing = self.firing
        if firing.sql.dialect.embedded:
            settled = 0
            for row in await firing.due(BATCH):
                if await firing.fire(row) in ("fired", "failed"):
                    settled += 1
            return settled
        counts = await asyncio.gather(*(self._drain() for _ in range(PARALLEL)))
        return sum(counts)

    async def _drain(self) -> int:
        settled = 0
        for _ in range(BATCH):
            outcome = await self.firing.fire_next()
            if outcome is None:
                break
            if outcome in ("fired", "failed"):
                settled += 1
        return settled

    async def _count(self) -> None:
        if self._on_count is None or time.monotonic() - self._counted_at < COUNT_EVERY_S:
            return
        self._counted_at = time.monotonic()
        self._on_count(*await count_pending(self.firing.storage))

    async def purge(self) -> int:
        """Delete the settled timers older than the retention (:data:`PURGE_BATCH` rows per
        transaction); answer how many went."""
        if self.retention_s <= 0:
            return 0
        self._purged_at = time.monotonic()
        before = settled_before(self.retention_s)
        purged = await purge_settled(self.firing.storage, before, PURGE_BATCH, PURGE_BATCHES)
        if purged:
            logger.info("timers: purged %d settled timers older than %s", purged, before)
            if self._on_purged is not None:
                self._on_purged(purged)
        return purged

    async def _clocks_due(self) -> None:
        last = self._clocks_at
        if self.firing.clocks.jobs and (last is None or time.monotonic() - last >= CLOCKS_EVERY_S):
            self._clocks_at = time.monotonic()
            await self.firing.clocks.keep_armed(self.firing.storage)

    async def _purge_due(self) -> None:
        last = self._purged_at
        if last is None or time.monotonic() - last >= PURGE_EVERY_S:
            await self.purge()

    async def _forever(self) -> None:
        failures = 0
        while True:
            try:
                await self._count()
                await self._clocks_due()
                await self._purge_due()
                settled = await self.pass_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures += 1
                pause = backoff(self.poll_s, failures)
                if failures == 1:
                    logger.exception("timer pass failed; trying again in %s s", pause)
                else:
                    logger.warning(
                        "timer pass failed %d times in a row (%s: %s); trying again in %s s",
                        failures,
                        type(exc).__name__,
                        exc,
                        pause,
                    )
                await asyncio.sleep(pause)
                continue
            failures = 0
            if not settled:
                await asyncio.sleep(self.poll_s)


def backoff(poll_s: float, failures: int) -> float:
    """Seconds to wait after ``failures`` failed passes in a row: the poll interval doubled
    per failure after the first, at most :data:`BACKOFF_MAX_S` (a database that stopped
    answering is not asked four times per poll interval)."""
    pause: float = poll_s * 2.0 ** min(failures - 1, 16)
    return min(pause, max(poll_s, BACKOFF_MAX_S))
