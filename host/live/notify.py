"""The optional PostgreSQL wake-up of live hubs (``TESSERA_LIVE_NOTIFY``, docs/live.md):
after an action commits, this process sends ``NOTIFY tessera_live`` on a connection of its
own, never inside the action's transaction (a NOTIFY there would serialise commits), and
every process listening on the database reads its audit log at once instead of at its next
poll. A lost notification costs one poll interval, nothing else: the poll is the truth."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Final

from host.config import Settings
from host.storage.database import Storage

__all__ = ["CHANNEL", "Notifier"]

CHANNEL: Final = "tessera_live"
logger = logging.getLogger("tessera.live")


class Notifier:
    """Sends and hears the wake-ups of one process (nothing unless enabled on PostgreSQL)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._connection: Any = None
        self._sending: asyncio.Task[None] | None = None
        self._again = False

    async def start(self, storage: Storage, wake: Callable[[], None]) -> None:
        if not self._settings.live_notify:
            return
        if storage.dialect.embedded:
            logger.info("TESSERA_LIVE_NOTIFY is for PostgreSQL; SQLite hubs only poll")
            return
        import asyncpg

        try:
            self._connection = await asyncpg.connect(self._settings.database_url)
            await self._connection.add_listener(CHANNEL, lambda *_: wake())
        except (OSError, asyncpg.PostgresError) as error:
            logger.warning("live changes: cannot LISTEN (%s); polling only", error)
            await self.stop()

    def notify(self) -> None:
        """Wake every listening process soon (coalesced: one NOTIFY in flight at most)."""
        if self._connection is None:
            return
        if self._sending is not None and not self._sending.done():
            self._again = True
            return
        self._sending = asyncio.ensure_future(self._send())

    async def _send(self) -> None:
        while True:
            self._again = False
            try:
                await self._connection.execute(f"NOTIFY {CHANNEL}")
            except Exception as error:  # a lost wake-up only delays until the next poll
                logger.warning("live changes: NOTIFY failed (%s)", error)
                return
            if not self._again:
                return

    async def stop(self) -> None:
        if self._sending is not None:
            self._sending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sending
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.close()
