"""The worker's live hub (docs/live.md): one :class:`~host.live.Hub` per worker reads the
audit log for all its streams, started with the service and stopped before it; the action
route wakes it after each commit (:meth:`LiveHub.committed`)."""

from __future__ import annotations

from host.config import Settings
from host.http.draining import Draining
from host.live import Hub
from host.live.feed import AuditFeed
from host.live.notify import Notifier
from host.metrics import Metrics
from host.service import Service

__all__ = ["LiveHub"]


class LiveHub:
    """The hub of one app's worker, and its notifier (``TESSERA_LIVE_NOTIFY``)."""

    def __init__(self, settings: Settings, metrics: Metrics | None, draining: Draining) -> None:
        self._settings = settings
        self._metrics = metrics
        self._draining = draining
        self._notifier = Notifier(settings)
        self.hub: Hub | None = None
        """The running hub (``None`` before the start and after the stop)."""

    async def start(self, running: Service) -> None:
        """Start the hub on the running service's storage."""
        settings, metrics = self._settings, self._metrics
        hub = Hub(
            AuditFeed(running.storage, running.schema),
            running.reads,
            poll_s=settings.live_poll_s,
            max_streams=settings.live_max_streams,
            resume_max=settings.live_resume_max,
            draining=self._draining,
            on_streams=metrics.live_streams.set if metrics is not None else None,
        )
        self.hub = hub
        await self._notifier.start(running.storage, hub.wake)

    async def stop(self) -> None:
        """Stop the notifier and the hub (before the service closes the database: the
        poller must end first)."""
        hub, self.hub = self.hub, None
        await self._notifier.stop()
        if hub is not None:
            await hub.stop()

    def committed(self) -> None:
        """Called by the action route after each commit (wakes the hub, NOTIFYs)."""
        if self.hub is not None:
            self.hub.wake()
        self._notifier.notify()
